"""The learner's course progress: the last verdict of each check, kept in ``$GPULAB_HOME/progress.json``.

The progress panel shows it across notebooks and kernel restarts. Only checks
a learner runs against their connected cluster are recorded, never under
nbgrader (``NBGRADER_EXECUTION`` set), whose grading must leave no trace.
Failing to write is not an error worth a stderr line in a graded cell: the
record is a convenience.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ..contract import home
from .result import Result


def path() -> Path:
    return home() / "progress.json"


def load() -> dict[str, dict]:
    """``{check_id: {"passed": bool | None, "reason": str, "at": unix time}}``; empty when nothing was recorded.

    ``passed`` is None for an answer kept for the grader to judge (a recorded, not judged, question)."""
    try:
        data = json.loads(path().read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def record(result: Result) -> None:
    if os.environ.get("NBGRADER_EXECUTION") or not result.check_id:
        return
    data = load()
    data[result.check_id] = {"passed": None if result.recorded else result.passed, "reason": result.reason,
                             "at": time.time()}
    target = path()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        scratch = target.with_suffix(f".{os.getpid()}.tmp")
        scratch.write_text(json.dumps(data, indent=1, sort_keys=True))
        scratch.replace(target)
    except OSError:
        pass


def clear(check_ids: list[str] | None = None) -> None:
    """Forget the verdicts of ``check_ids`` (all when None), e.g. after a lab reset."""
    data = {} if check_ids is None else {k: v for k, v in load().items() if k not in check_ids}
    try:
        path().write_text(json.dumps(data, indent=1, sort_keys=True))
    except OSError:
        pass
