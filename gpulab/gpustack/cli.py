"""``gpulab install|upgrade|uninstall gpu-operator`` and ``gpulab gpustack run``.

The first three are the emulated ``helm install --wait gpu-operator nvidia/gpu-operator
-n gpu-operator --create-namespace``, ``helm upgrade`` and ``helm uninstall``
(output and ``Error: INSTALLATION FAILED: ...`` messages as helm prints them).
``gpulab gpustack run`` is the reconciler for a cluster that does not run it
in-process (kind, or an embedded cluster started with ``--no-gpu-stack``);
``install`` starts it in the background when no reconciler holds the cluster's
``gpulab-gpustack`` Lease. Heavy imports happen inside the handlers, so
``gpulab --help`` stays fast.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time

CHART_NAMES = ("gpu-operator", "nvidia/gpu-operator")
LEASE_WAIT_SECONDS = 8.0
UNREACHABLE_EXIT_SECONDS = 60.0     # a background reconciler outlives its cluster by a minute at most


def _duration(text: str) -> float:
    """A Go duration as helm's ``--timeout`` takes it (``5m0s``, ``90s``, ``2m``)."""
    import re

    total, rest = 0.0, text
    for amount, unit in re.findall(r"(\d+(?:\.\d+)?)(h|ms|m|s)", text):
        total += float(amount) * {"h": 3600, "m": 60, "s": 1, "ms": 0.001}[unit]
        rest = rest.replace(amount + unit, "", 1)
    if rest or not text:
        raise argparse.ArgumentTypeError(f'time: invalid duration "{text}"')
    return total


def _common(p: argparse.ArgumentParser, *, chart: bool) -> None:
    if chart:
        p.add_argument("chart", nargs="?", default="gpu-operator", help="the chart (only gpu-operator)")
    p.add_argument("-n", "--namespace", default="gpu-operator", help="namespace of the release (default: gpu-operator)")
    p.add_argument("--name", default="gpu-operator", help="release name (default: gpu-operator)")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, the gpulab cluster)")
    p.add_argument("--kube-context", dest="context", help="kubeconfig context to use")


def _chart_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--version", help="chart version (default: v26.7.0; known: v25.10.1, v26.3.3, v26.7.0)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="set a chart value, as helm --set (repeatable)")
    p.add_argument("--no-wait", dest="wait", action="store_false",
                   help="return without waiting for the chart's Deployments and DaemonSets")
    p.add_argument("--timeout", type=_duration, default=300.0, help="how long to wait (default: 5m0s)")


def add_install(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("install", help="install the NVIDIA GPU Operator (emulated helm install --wait)")
    _common(p, chart=True)
    _chart_options(p)
    # helm's spelling of what gpulab install always does, so the real command line works here unchanged.
    p.add_argument("--wait", dest="wait", action="store_true", help="wait for the chart's workloads (the default)")
    p.add_argument("--create-namespace", action="store_true",
                   help="create the release namespace if absent (gpulab always does)")
    p.set_defaults(func=_run_install)


def add_upgrade(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("upgrade", help="upgrade the GPU Operator release (emulated helm upgrade)")
    _common(p, chart=True)
    _chart_options(p)
    p.add_argument("--reuse-values", action="store_true",
                   help="merge --set over the last release's values, as helm")
    p.add_argument("--reset-values", action="store_true",
                   help="use the chart's defaults, not the last release's values, as helm")
    p.add_argument("--wait", dest="wait", action="store_true", help="wait for the chart's workloads (the default)")
    p.set_defaults(func=_run_upgrade)


def add_uninstall(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("uninstall", help="uninstall the GPU Operator release (emulated helm uninstall)")
    _common(p, chart=True)
    p.set_defaults(func=_run_uninstall)


def add_gpustack(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gpustack", help="the NVIDIA GPU stack emulation")
    actions = p.add_subparsers(dest="action", required=True, metavar="run")
    run = actions.add_parser("run", help="reconcile a cluster's GPU stack through a kubeconfig (foreground)")
    run.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
    run.add_argument("--kube-context", dest="context", help="kubeconfig context to use")
    run.add_argument("-n", "--namespace", default="gpu-operator", help="operator namespace (default: gpu-operator)")
    run.add_argument("-v", "--verbose", action="store_true", help="log every reconcile")
    run.add_argument("--exit-when-unreachable", type=float, metavar="SECONDS",
                     help="stop once the API server has been unreachable this long (the cluster is gone)")
    p.set_defaults(func=_run_gpustack)


def _connect(args: argparse.Namespace):
    from ..kubeclient import Kube, resolve_kubeconfig
    from .operator import FIELD_MANAGER

    return Kube.from_kubeconfig(resolve_kubeconfig(args.kubeconfig), args.context, FIELD_MANAGER)


def _check_chart(args: argparse.Namespace, verb: str) -> bool:
    if args.chart not in CHART_NAMES:
        print(f"Error: {verb}: chart {args.chart!r} is not available; gpulab emulates nvidia/gpu-operator only",
              file=sys.stderr)
        return False
    return True


def _run_install(args: argparse.Namespace) -> int:
    if not _check_chart(args, "INSTALLATION FAILED"):
        return 1
    from .install import InstallError, install, summary

    kube = _connect(args)
    try:
        rel = install(kube, release=args.name, namespace=args.namespace, version=args.version, sets=args.sets,
                      wait=args.wait, timeout=args.timeout)
    except InstallError as err:
        print(f"Error: INSTALLATION FAILED: {err}", file=sys.stderr)
        return 1
    print(summary(rel), end="")
    _ensure_reconciler(kube, args)
    return 0


def _run_upgrade(args: argparse.Namespace) -> int:
    if not _check_chart(args, "UPGRADE FAILED"):
        return 1
    from .install import InstallError, summary, upgrade

    kube = _connect(args)
    try:
        rel = upgrade(kube, release=args.name, namespace=args.namespace, version=args.version, sets=args.sets,
                      reuse_values=args.reuse_values, reset_values=args.reset_values, wait=args.wait, timeout=args.timeout)
    except InstallError as err:
        print(f"Error: UPGRADE FAILED: {err}", file=sys.stderr)
        return 1
    print(f'Release "{rel.name}" has been upgraded. Happy Helming!')
    print(summary(rel), end="")
    _ensure_reconciler(kube, args)
    return 0


def _run_uninstall(args: argparse.Namespace) -> int:
    if not _check_chart(args, "uninstall"):
        return 1
    from .install import InstallError, uninstall

    try:
        uninstall(_connect(args), release=args.name, namespace=args.namespace)
    except InstallError as err:
        print(f"Error: {err}", file=sys.stderr)
        return 1
    print(f'release "{args.name}" uninstalled')
    return 0


def _lease_fresh(kube) -> bool:
    from datetime import datetime, timezone

    from ..kubeclient import LEASES, ApiException
    from .reconciler import LEASE_NAME, LEASE_NAMESPACE, LEASE_SECONDS

    try:
        lease = kube.try_get(LEASES, LEASE_NAME, LEASE_NAMESPACE)
    except ApiException:
        return False
    spec = (lease or {}).get("spec") or {}
    if not spec.get("holderIdentity") or not spec.get("renewTime"):
        return False
    renewed = datetime.strptime(spec["renewTime"][:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    return (datetime.now(timezone.utc) - renewed).total_seconds() < LEASE_SECONDS


def _ensure_reconciler(kube, args: argparse.Namespace) -> None:
    """Start ``gpulab gpustack run`` in the background unless a reconciler already holds the cluster."""
    deadline = time.monotonic() + LEASE_WAIT_SECONDS
    while time.monotonic() < deadline:
        if _lease_fresh(kube):
            return
        time.sleep(0.2)
    from ..contract import home
    from ..kubeclient import resolve_kubeconfig

    log_dir = home()
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / "gpustack.log"
    command = [sys.executable, "-m", "gpulab.cli", "gpustack", "run", "--namespace", args.namespace,
               "--exit-when-unreachable", str(UNREACHABLE_EXIT_SECONDS)]
    kubeconfig = resolve_kubeconfig(args.kubeconfig)
    if kubeconfig:
        command += ["--kubeconfig", kubeconfig]
    if args.context:
        command += ["--kube-context", args.context]
    with open(log_path, "ab") as log_file:
        subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file,
                         start_new_session=True, close_fds=True)
    print(f"gpulab: started the GPU stack emulation in the background (`gpulab gpustack run`, log: {log_path})",
          file=sys.stderr)


def _run_gpustack(args: argparse.Namespace) -> int:
    import logging
    import signal

    from .reconciler import GpuStack

    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    stack = GpuStack(_connect(args), args.namespace, exit_when_unreachable=args.exit_when_unreachable)

    def stop(*_: object) -> None:
        stack.stop.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    stack.run()
    stack.release()
    return 0
