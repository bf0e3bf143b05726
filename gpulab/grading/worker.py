"""One grading process of ``gpulab grade``: ``python -m gpulab.grading.worker COURSE_DIR LAB [--force]
[--Class.trait=VALUE ...]`` (settings given to nbgrader as on its own command line).

It reads student ids on stdin, one per line, runs nbgrader's own autograde
for each (``NbGraderAPI.autograde``, what the formgrader calls, configured from
the course's ``nbgrader_config.py`` exactly as ``nbgrader autograde`` is) and
answers one JSON line per student. nbgrader is imported once per process, and
the next submission's cluster starts while this one runs. Where learner
kernels cannot be sandboxed, or the sandbox's settings are wrong, it answers
one ``fatal`` line and ends.

Learner code runs in sandboxed kernels this process starts, which cannot
reach it; should it die all the same (out of memory, killed by an operator),
the driver (:mod:`.parallel`) charges the submission it was grading alone. The
answers go to a private copy of stdout, so nothing nbgrader or a library
prints can corrupt them.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from traitlets import TraitError

from .sandbox import SandboxUnavailable, launcher

# gradebook.db is shared by the grading processes: wait for SQLite's write lock instead of failing after 5 s.
DB_LOCK_TIMEOUT_S = 300


def autograder(course_dir: Path, settings: list[str]):
    """nbgrader's API for ``course_dir``, with the configuration ``nbgrader autograde SETTINGS`` would load there."""
    from nbgrader.apps import AutogradeApp, NbGraderAPI

    os.chdir(course_dir)
    app = AutogradeApp()
    app.initialize(settings)
    app.coursedir.db_url = f"sqlite:///{course_dir / 'gradebook.db'}?timeout={DB_LOCK_TIMEOUT_S}"
    app.config.HermeticExecute.prestart = True
    return NbGraderAPI(coursedir=app.coursedir, parent=app)


def main(argv: list[str]) -> int:
    course_dir, lab, force = Path(argv[0]).resolve(), argv[1], "--force" in argv[2:]
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)                      # stray prints go to the log, not into the answers
    sys.stdout = sys.stderr
    api = autograder(course_dir, [arg for arg in argv[2:] if arg != "--force"])
    try:
        sandbox_ready(api)
    except (SandboxUnavailable, TraitError) as exc:   # nothing can be graded here: say so once, not per submission
        answers.write(json.dumps({"fatal": str(exc)}) + "\n")
        return 1
    try:
        for line in sys.stdin:
            student = line.strip()
            if not student:
                continue
            start = time.monotonic()
            result = api.autograde(lab, student, force=force, create=True)
            log = result.get("log") or ""
            skipped = "Skipping existing assignment" in log
            answers.write(json.dumps({
                "student": student,
                "success": bool(result["success"]),
                "skipped": skipped,
                "error": "" if result["success"] else _error_summary(log, result.get("error") or ""),
                "seconds": round(time.monotonic() - start, 3),
                "timed_out": 0 if skipped or not result["success"] else timed_out_cells(api, lab, student),
            }) + "\n")
    finally:
        from .clusters import close_supplies

        close_supplies()
    return 0


def sandbox_ready(api) -> None:
    """Raise :class:`SandboxUnavailable` unless learner kernels can be sandboxed here, or ``TraitError`` unless the
    course's sandbox settings (limits, uids) are valid."""
    from .execute import HermeticExecute

    HermeticExecute(config=api.config)
    launcher()


def timed_out_cells(api, lab: str, student: str) -> int:
    """How many cells of the student's autograded notebooks ran past ``Execute.timeout`` (the grader noted them)."""
    import nbformat

    from .sanitize import GRADER_KEY

    directory = Path(api.coursedir.format_path(api.coursedir.autograded_directory, student, lab))
    count = 0
    for path in directory.glob("*.ipynb"):
        count += len(nbformat.read(path, 4).metadata.get(GRADER_KEY, {}).get("timed_out_cells", []))
    return count


def _error_summary(log: str, error: str, count: int = 3) -> str:
    """nbgrader's own error lines about the failure (the first ones name the cause), else the traceback's end."""
    lines = [line for line in log.splitlines() if line.startswith("[ERROR]") and "Please see" not in line]
    return "\n".join(lines[:count]) if lines else "\n".join(error.strip().splitlines()[-count:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
