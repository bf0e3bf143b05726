"""Run every course module and lab solution on the upstream engine and report, cell by cell, what works there.

Each notebook runs top to bottom in a kernel whose ``gpulab.connect()`` starts an upstream-engine cluster
(``GPULAB_ENGINE=upstream``; a lab reset recreates it on the same engine), with errors allowed so one cell's
failure does not hide the next. A cell fails when it raises, writes to stderr or prints a failed command (the rules
of tests/test_notebooks.py). The result is a JSON file (one entry per notebook: cells that failed, with the first
line of why; cells that printed the upstream engine's note that a step needs a container, with the note) that
``docs/engines.md``'s table is written from.

Usage: ``.venv/bin/python tools/upstream_course.py [--out FILE] [NOTEBOOK ...]`` (default: every notebook).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_notebooks import COURSE, SOLUTIONS, command_error_lines, kernel_env, stop_cluster  # noqa: E402


def first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")[:300]


def run(path: Path) -> dict:
    import nbformat
    from nbclient import NotebookClient

    home = Path(tempfile.mkdtemp(prefix=f"gpulab-upstream-{path.stem}-"))
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(path.parent)}})
    started = time.monotonic()
    env = {**kernel_env(home), "GPULAB_ENGINE": "upstream"}
    try:
        client.execute(env=env)
    except Exception as exc:  # noqa: BLE001 - a dead kernel is a result too
        crashed = f"{type(exc).__name__}: {first_line(str(exc))}"
    else:
        crashed = ""
    finally:
        stop_cluster(home)
        shutil.rmtree(home, ignore_errors=True)
    failures, noted = [], []
    code_cells = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    for index, cell in code_cells:
        texts = [o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream"]
        notes = [line for text in texts for line in text.splitlines() if "a KWOK node" in line or "is a KWOK node" in line]
        if notes:
            noted.append({"cell": index, "source": first_line(cell.source), "notes": notes})
        why = []
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                why.append(f"{output.get('ename')}: {first_line(output.get('evalue', ''))}")
            elif output.get("output_type") == "stream" and output.get("name") == "stderr":
                why.append(f"stderr: {first_line(output.get('text', ''))}")
        why += [line.split(": ", 1)[1] for line in command_error_lines(index, cell.get("outputs", []))]
        if why:
            failures.append({"cell": index, "source": first_line(cell.source), "why": why[:3]})
    return {"notebook": str(path.relative_to(ROOT)), "cells": len(code_cells), "failed": failures, "noted": noted,
            "crashed": crashed, "seconds": round(time.monotonic() - started, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--out", type=Path, default=ROOT / "test-artifacts" / "upstream-course.json")
    args = parser.parse_args()
    paths = [p.resolve() for p in args.notebooks] or COURSE + SOLUTIONS
    results = []
    for path in paths:
        result = run(path)
        results.append(result)
        print(f"{result['notebook']}: {result['cells'] - len(result['failed'])}/{result['cells']} cells "
              f"({result['seconds']}s){' CRASHED ' + result['crashed'] if result['crashed'] else ''}", flush=True)
        for failure in result["failed"]:
            print(f"  cell {failure['cell']}: {failure['source'][:80]} -> {failure['why'][0][:200]}", flush=True)
        for note in result["noted"]:
            print(f"  note, cell {note['cell']}: {note['source'][:80]} -> {note['notes'][0][:120]}", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    os.environ.pop("KUBECONFIG", None)
    main()
