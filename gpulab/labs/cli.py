"""``gpulab lab list`` and ``gpulab lab reset LAB``."""
from __future__ import annotations

import argparse
import sys


def add_lab(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("lab", help="the course's labs: list them, reset the cluster to a lab's starting state")
    actions = p.add_subparsers(dest="action", required=True, metavar="list|reset")
    actions.add_parser("list", help="the labs and what each starts from")
    reset = actions.add_parser("reset", help="recreate the embedded cluster in a lab's starting state")
    reset.add_argument("lab", help="lab name (lab03-h100-pod) or prefix (lab03)")
    reset.add_argument("--name", help="embedded cluster name (default: $GPULAB_CLUSTER_NAME or gpulab)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from . import LABS, ResetRefused, StepError, describe, reset, resolve

    if args.action == "list":
        for lab in LABS:
            print(f"{lab.name} ({lab.short}): {lab.title}")
            for line in describe(lab)[1:] or ["a fresh cluster"]:
                print(f"  - {line}")
        return 0
    try:
        lab = resolve(args.lab)
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 1
    try:
        path = reset(lab, name=args.name)
    except ResetRefused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except StepError as exc:
        print(f"error: the starting state of {lab.name} was not reached: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0
