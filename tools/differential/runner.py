"""Both engines, the same cases: start a fresh cluster of each, run the corpus on both at once, judge each case.

The two clusters run side by side, one thread each, every case in corpus order on both (a case file may build on
the state the one before left, as a learner's session does). Both are removed at the end unless asked to stay.
"""
from __future__ import annotations

import tempfile
import threading
from pathlib import Path

from .corpus import Case
from .engines import Target, targets
from .report import Verdict
from .steps import Record, run_case


def run_all(target: Target, cases: list[Case], records: dict, progress=None) -> None:
    for case in cases:
        records[case.id] = run_case(target, case)
        if progress:
            progress(target.engine, case)


def compare(cases: list[Case], *, root: Path | None = None, keep: bool = False, progress=None) -> list[Verdict]:
    """Each case's verdict, from a fresh cluster of each engine under ``root`` (a temporary directory if none)."""
    root = root or Path(tempfile.mkdtemp(prefix="gpulab-differential-"))
    embedded, upstream = targets(root)
    records: dict[str, dict[str, Record]] = {embedded.engine: {}, upstream.engine: {}}
    started = []
    try:
        for target in (embedded, upstream):
            target.up()
            started.append(target)
        threads = [threading.Thread(target=run_all, args=(t, cases, records[t.engine], progress), daemon=True)
                   for t in (embedded, upstream)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        if not keep:
            for target in started:
                target.down()
    return [Verdict(case, records["embedded"][case.id], records["upstream"][case.id]) for case in cases]
