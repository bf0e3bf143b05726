"""``gpulab grade LAB [--jobs N] [--course-dir grader] [--force]``."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_grade(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("grade", help="autograde every submission of a lab with nbgrader, several at once",
                       description="Autograde every submission in the course directory's submitted/ with nbgrader, "
                                   "each on its own fresh embedded cluster, JOBS at a time; results go to "
                                   "nbgrader's gradebook (nbgrader export, formgrader).")
    p.add_argument("lab", help="the nbgrader assignment (e.g. lab02-node-pools)")
    p.add_argument("--jobs", "-j", type=int, default=2, help="submissions graded at once (default: 2)")
    p.add_argument("--course-dir", type=Path, default=None,
                   help="nbgrader course directory (default: the current directory when it holds "
                        "nbgrader_config.py, as for nbgrader itself, else grader)")
    p.add_argument("--force", action="store_true",
                   help="regrade submissions already autograded (as nbgrader autograde --force)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from .parallel import GradingError, grade, summary

    if args.jobs < 1:
        print("error: --jobs must be at least 1", file=sys.stderr)
        return 2
    course_dir = args.course_dir or (Path(".") if Path("nbgrader_config.py").exists() else Path("grader"))
    try:
        report = grade(course_dir, args.lab, jobs=args.jobs, force=args.force, progress=not args.no_progress)
    except GradingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(summary(report))
    return 1 if report.count("failed") else 0
