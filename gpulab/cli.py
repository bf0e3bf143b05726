"""The ``gpulab`` command.

Subcommands are registered in :data:`COMMANDS`; each lives in the module that
does its job and is imported only when used, so ``gpulab cluster up`` does not
pay for loading the Kubernetes client or Jupyter.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys


def _cluster(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cluster", help="run the embedded Kubernetes cluster")
    actions = p.add_subparsers(dest="action", required=True, metavar="up|down|status|reset|kubeconfig")
    for action, text in (("up", "start or resume the cluster; prints the kubeconfig path last"),
                         ("down", "stop the cluster, keeping its state"),
                         ("status", "show whether the cluster runs"),
                         ("reset", "stop the cluster and delete its state"),
                         ("kubeconfig", "print the kubeconfig path")):
        a = actions.add_parser(action, help=text)
        a.add_argument("--name", default="gpulab", help="cluster name (default: gpulab)")
        if action == "up":
            a.add_argument("--engine", choices=ENGINES,
                           help="embedded (the default: gpulab's own cluster, starts in a second) or upstream "
                                "(Kubernetes' own control plane built from source, with KWOK nodes; `make upstream` "
                                f"builds it); a new cluster's choice is remembered (default for new clusters: "
                                f"${ENGINE_ENV}, else embedded)")
            a.add_argument("--topology", type=str, help="YAML file describing the nodes (new clusters only)")
            a.add_argument("--merge", action="store_true",
                           help="also add context gpulab-NAME to ~/.kube/config and make it current")
            a.add_argument("--port", type=int, help="port on 127.0.0.1 (default: a free one, kept across restarts)")
            a.add_argument("--no-gpu-stack", action="store_true",
                           help="do not run the GPU stack emulation inside the cluster (drive it with "
                                "`gpulab gpustack run --kubeconfig K`); remembered for this cluster")
            a.add_argument("--feature-gates", metavar="GATE=BOOL,...",
                           help="feature gates of the control plane, e.g. GenericWorkload=true; "
                                "remembered for this cluster (stop it first to change them)")
    p.set_defaults(func=_run_cluster)


ENGINES = ("embedded", "upstream")
ENGINE_ENV = "GPULAB_ENGINE"         # the engine `gpulab cluster up` (and so `gpulab.connect()`) gives a new cluster


def _without_gpu_stack(state_dir) -> None:
    from .gpustack.addon import set_enabled

    set_enabled(state_dir, False)


def _engine(args: argparse.Namespace) -> str:
    """The engine a command acts on: the one the cluster was created with, else ``--engine``, else
    ``$GPULAB_ENGINE``, else embedded."""
    from .cluster import lifecycle
    from .upstream import engine_of

    recorded = engine_of(args.name)
    wanted = getattr(args, "engine", None)
    if recorded and wanted and wanted != recorded:
        raise lifecycle.ClusterError(
            f"cluster {args.name!r} exists on the {recorded} engine; a cluster keeps its engine. Run `gpulab cluster "
            f"reset --name {args.name}` first, or pick another --name for a cluster on the {wanted} engine.")
    default = os.environ.get(ENGINE_ENV) or "embedded"
    if default not in ENGINES:
        raise lifecycle.ClusterError(f"{ENGINE_ENV}={default!r} names no engine: set it to embedded or upstream")
    return recorded or wanted or default


def _up_embedded(args: argparse.Namespace):
    from pathlib import Path

    from . import embedded
    from .cluster import lifecycle

    recorded = (lifecycle.cluster_dir(args.name) / "cluster.json").exists()
    if args.no_gpu_stack and recorded:
        _without_gpu_stack(lifecycle.cluster_dir(args.name))
    path = embedded.up(args.name, topology=Path(args.topology) if args.topology else None,
                       merge=args.merge, port=args.port, feature_gates=args.feature_gates)
    if args.no_gpu_stack and not recorded:
        # A new cluster's add-on reads the flag only when the ClusterPolicy CRD appears, after this.
        _without_gpu_stack(lifecycle.cluster_dir(args.name))
    return path


def _up_upstream(args: argparse.Namespace):
    from pathlib import Path

    from . import embedded
    from .upstream import engine

    return engine.up(args.name, topology_format=embedded.TOPOLOGY,
                     topology=Path(args.topology) if args.topology else None, merge=args.merge, port=args.port,
                     feature_gates=args.feature_gates, gpu_stack=not args.no_gpu_stack)


def _operations(engine: str):
    """The engine's (up, down, reset, status) and what `status` adds when something exited unexpectedly."""
    if engine == "upstream":
        from .upstream import engine as upstream

        return (_up_upstream, upstream.down, upstream.reset, upstream.status,
                "some components exited unexpectedly; see {directory}/kwok/clusters/{name}/logs, then `gpulab "
                "cluster down --name {name}` and `gpulab cluster up --name {name}`")
    from .cluster import lifecycle

    return (_up_embedded, lifecycle.down, lifecycle.reset, lifecycle.status,
            "the server exited unexpectedly; see {directory}/server.log, then `gpulab cluster up --name {name}` "
            "resumes it")


def _run_cluster(args: argparse.Namespace) -> int:
    from .cluster import lifecycle
    from .cluster.topology import TopologyError

    try:
        engine = _engine(args)
        up, down, reset, status, crashed = _operations(engine)
        if args.action == "up":
            path = up(args)
            print(f"cluster {args.name!r} is running" + (" (upstream engine)" if engine == "upstream" else ""))
            if args.merge:
                print(f"context gpulab-{args.name} added to your kubeconfig and made current")
            print(path)
        elif args.action == "down":
            stopped = down(args.name)
            print(f"cluster {args.name!r} stopped (state kept)" if stopped else f"cluster {args.name!r} is not running")
        elif args.action == "reset":
            reset(args.name)
            print(f"cluster {args.name!r} deleted")
        elif args.action == "status":
            info = status(args.name)
            if info["state"] == "absent":
                print(f"cluster {args.name!r} does not exist; create it with `gpulab cluster up --name {args.name}`")
                return 1
            for key, value in info.items():
                print(f"{key}: {value}")
            if info["state"] == "crashed":
                print(crashed.format(directory=info["directory"], name=args.name))
            return 0 if info["state"] == "running" else 1
        elif args.action == "kubeconfig":
            if status(args.name)["state"] == "absent":
                print(f"error: cluster {args.name!r} does not exist; run `gpulab cluster up --name {args.name}`",
                      file=sys.stderr)
                return 1
            print(lifecycle.kubeconfig_path(args.name))
    except (lifecycle.ClusterError, TopologyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


# name -> (module, function that adds the subparser); modules are imported lazily.
COMMANDS: dict[str, tuple[str, str]] = {
    "install": ("gpulab.gpustack.cli", "add_install"),
    "install coscheduling": ("gpulab.addons.coscheduling", "extend_install"),  # after "install": wraps it
    "upgrade": ("gpulab.gpustack.cli", "add_upgrade"),
    "install nvidia-dra-driver-gpu": ("gpulab.gpustack.drainstall", "extend_install"),
    "uninstall": ("gpulab.gpustack.cli", "add_uninstall"),
    "uninstall nvidia-dra-driver-gpu": ("gpulab.gpustack.drainstall", "extend_uninstall"),
    "gpustack": ("gpulab.gpustack.cli", "add_gpustack"),
    "fault": ("gpulab.gpustack.faultcli", "add_fault"),
    "lab": ("gpulab.labs.cli", "add_lab"),
    "kind": ("gpulab.setup.cli", "add_kind"),
    "doctor": ("gpulab.setup.cli", "add_doctor"),
    "probe": ("gpulab.probe.cli", "add_probe"),
    "grade": ("gpulab.grading.cli", "add_grade"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; given the command about to run, only that command's module is imported."""
    parser = argparse.ArgumentParser(prog="gpulab", description="GPUs on Kubernetes, hands on.")
    sub = parser.add_subparsers(dest="command", required=True)
    _cluster(sub)
    for name, (module, func) in COMMANDS.items():
        if command is None or name.split()[0] == command:
            getattr(importlib.import_module(module), func)(sub)
    return parser


def _command(argv: list[str]) -> str | None:
    """The subcommand named first in ``argv`` when it is a known one, else None (help, typos: every command)."""
    first = next((arg for arg in argv if not arg.startswith("-")), None)
    known = {"cluster"} | {name.split()[0] for name in COMMANDS}
    return first if first in known else None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(_command(argv)).parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
