"""``gpulab grade LAB [--jobs N] [--course-dir grader] [--force] [--memory 2Gi] [--disk 512Mi] [--processes N]
[--cpu-seconds S]``."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

# gpulab grade's options for the sandbox's limits, and the nbgrader settings they override (grader/README.md)
LIMITS = {"memory": "memory_limit", "disk": "disk_limit", "processes": "process_limit", "cpu_seconds": "cpu_limit"}


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
    limits = p.add_argument_group("limits of each submission (default: c.HermeticExecute.* in nbgrader_config.py)")
    limits.add_argument("--memory", type=_size("--memory"), help="memory each of its processes may use (e.g. 2Gi)")
    limits.add_argument("--disk", type=_size("--disk"), help="all it may write: folder, home, /tmp (e.g. 512Mi)")
    limits.add_argument("--processes", type=_count("--processes"), help="processes and threads it may run at once")
    limits.add_argument("--cpu-seconds", type=_count("--cpu-seconds"),
                        help="seconds of CPU time each of its processes may use")
    p.set_defaults(func=_run)


def _size(option: str):
    def parse(value: str) -> str:
        from .limits import parse_size

        try:
            parse_size(value, option)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return value
    return parse


def _count(option: str):
    def parse(value: str) -> int:
        try:
            count = int(value)
        except ValueError:
            count = 0
        if count < 1:
            raise argparse.ArgumentTypeError(f"{option} {value!r} must be a whole number, at least 1")
        return count
    return parse


def _run(args: argparse.Namespace) -> int:
    from .parallel import GradingError, grade, summary

    if args.jobs < 1:
        print("error: --jobs must be at least 1", file=sys.stderr)
        return 2
    course_dir = args.course_dir or (Path(".") if Path("nbgrader_config.py").exists() else Path("grader"))
    settings = tuple(f"--HermeticExecute.{trait}={getattr(args, option)}" for option, trait in LIMITS.items()
                     if getattr(args, option) is not None)
    try:
        report = grade(course_dir, args.lab, jobs=args.jobs, force=args.force, progress=not args.no_progress,
                       settings=settings)
    except GradingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(summary(report))
    return 1 if report.count("failed") else 0
