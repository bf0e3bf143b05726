"""The whole course's wall time: every module in ``course/``, top to bottom, each on a fresh embedded cluster.

What a learner's first pass costs (issue 11 item 15: under 3 minutes): the
modules run one after another in file order, as a learner takes them, each
through nbclient with a kernel of its own and its own ``GPULAB_HOME`` (so its
``gpulab.connect()`` starts a fresh cluster, removed after its last cell),
exactly as ``tests/test_notebooks.py`` runs them. A module that raises, writes
to stderr or prints a failed command fails the benchmark: a fast course that
breaks is no figure. Run ``python -m bench course``; ``GPULAB_BENCH_MODULES``
(comma-separated stems, e.g. ``02-node-pools``) runs only those.
"""
from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_SECONDS = 180


def main() -> dict:
    sys.path.insert(0, str(ROOT / "tests"))
    from test_notebooks import COURSE, command_errors, execute, stderr_outputs

    chosen = {m.strip() for m in os.environ.get("GPULAB_BENCH_MODULES", "").split(",") if m.strip()}
    modules = [path for path in COURSE if not chosen or path.stem in chosen]
    load_before = os.getloadavg()
    seconds: dict[str, float] = {}
    slowest: dict[str, list] = {}
    start = time.perf_counter()
    for path in modules:
        with tempfile.TemporaryDirectory(prefix=f"gpulab-bench-course-{path.stem}-") as home:
            begun = time.perf_counter()
            nb, cells = execute(path, Path(home))
            seconds[path.stem] = round(time.perf_counter() - begun, 1)
        problems = stderr_outputs(nb) + command_errors(nb)
        if problems:
            raise RuntimeError(f"{path.name} did not run cleanly:\n" + "\n".join(problems))
        slowest[path.stem] = sorted(enumerate(cells), key=lambda c: -c[1])[:3]
        print(f"{path.stem}: {seconds[path.stem]}s (slowest cells {slowest[path.stem]})", flush=True)
    total = time.perf_counter() - start
    return {"python": platform.python_version(), "cpus": os.cpu_count(),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
            "modules": seconds, "slowest_cells": slowest, "total_seconds": round(total, 1),
            "target_seconds": TARGET_SECONDS, "met": total < TARGET_SECONDS and not chosen}
