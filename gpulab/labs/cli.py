"""``gpulab lab list``, ``gpulab lab reset LAB`` and ``gpulab lab variant ID...``."""
from __future__ import annotations

import argparse
import sys


def add_lab(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("lab", help="the course's labs: list them, reset the cluster to a lab's starting state")
    actions = p.add_subparsers(dest="action", required=True, metavar="list|reset|variant")
    actions.add_parser("list", help="the labs and what each starts from")
    reset = actions.add_parser("reset", help="recreate the embedded cluster in a lab's starting state")
    reset.add_argument("lab", help="lab name (lab03-h100-pod) or prefix (lab03)")
    reset.add_argument("--name", help="embedded cluster name (default: $GPULAB_CLUSTER_NAME or gpulab)")
    variant = actions.add_parser("variant", help="instructors: each learner's variant of the final assessment, "
                                 "drawn from $GPULAB_INSTRUCTOR_SECRET (give it to them as $GPULAB_ASSESSMENT_VARIANT)")
    variant.add_argument("learners", nargs="+", metavar="ID", help="the learners' nbgrader student ids")
    p.set_defaults(func=_run)


def _variants(learners: list[str]) -> int:
    from .variant import SECRET_ENV, SECRET_FILE_ENV, VARIANT_ENV, VariantError, for_learner, instructor_secret

    try:
        secret = instructor_secret()
    except VariantError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if secret is None:
        print(f"error: no instructor secret: set {SECRET_ENV}, or {SECRET_FILE_ENV} to a file holding it, as "
              "when grading (grader/README.md, 'Per-learner variants')", file=sys.stderr)
        return 1
    for learner in learners:
        print(f"{learner}\t{VARIANT_ENV}={for_learner(secret, learner).token}")
    return 0


def _run(args: argparse.Namespace) -> int:
    from . import LABS, ResetRefused, StepError, describe, reset, resolve

    if args.action == "variant":
        return _variants(args.learners)
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
