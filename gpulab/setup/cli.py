"""``gpulab kind up|down`` and ``gpulab doctor``: parsers here, work in :mod:`.kind` and :mod:`.doctor` (imported when run)."""
from __future__ import annotations

import argparse
import json
import sys


def add_kind(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("kind", help="run the course on a kind cluster (needs kind and Docker)")
    actions = p.add_subparsers(dest="action", required=True, metavar="up|down")
    up = actions.add_parser("up", help="create the kind cluster, record its simulated GPUs, start the GPU stack "
                                       "emulation; prints the kubeconfig path last")
    up.add_argument("--name", default="gpulab", help="kind cluster name (default: gpulab)")
    up.add_argument("--config", help="kind config (default: one written for the course's default topology)")
    up.add_argument("--gpus", help="simulated GPU mapping (default: cluster-setup/kind/simulated-gpus.yaml)")
    up.add_argument("--wait", default="2m", help="kind create cluster --wait (default: 2m)")
    down = actions.add_parser("down", help="stop the GPU stack emulation and delete the kind cluster")
    down.add_argument("--name", default="gpulab", help="kind cluster name (default: gpulab)")
    p.set_defaults(func=_run_kind)


def _run_kind(args: argparse.Namespace) -> int:
    from pathlib import Path

    from . import kind

    try:
        if args.action == "up":
            path = kind.up(args.name, Path(args.config) if args.config else None,
                           Path(args.gpus) if args.gpus else kind.DEFAULT_GPUS, wait=args.wait)
            print(f"kind cluster {args.name!r} is ready; next: gpulab install gpu-operator --kubeconfig {path}")
            print(path)
        else:
            kind.down(args.name)
            print(f"kind cluster {args.name!r} deleted")
    except kind.KindError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


def add_doctor(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="report what the cluster's GPU stack has and lacks, with the next command")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, the gpulab cluster)")
    p.add_argument("--kube-context", dest="context", help="kubeconfig context to use")
    p.add_argument("-n", "--namespace", default="gpu-operator", help="GPU Operator namespace (default: gpu-operator)")
    p.add_argument("-o", "--output", choices=("text", "json"), default="text", help="output format (default: text)")
    p.set_defaults(func=_run_doctor)


def _run_doctor(args: argparse.Namespace) -> int:
    from kubernetes.config import ConfigException

    from ..kubeclient import Kube, resolve_kubeconfig
    from . import doctor

    kubeconfig = resolve_kubeconfig(args.kubeconfig)
    try:
        kube = Kube.from_kubeconfig(kubeconfig, args.context)
    except (ConfigException, OSError) as err:
        print(f"error: no usable kubeconfig ({err}); start a cluster with `gpulab cluster up` or `gpulab kind up`, "
              "or pass --kubeconfig", file=sys.stderr)
        return 1
    try:
        report = doctor.diagnose(kube, args.namespace, kubeconfig)
    finally:
        kube.close()
    if args.output == "json":
        print(json.dumps(report.as_dict(), indent=1))
    else:
        print(doctor.render(report), end="")
    return 1 if report.missing else 0
