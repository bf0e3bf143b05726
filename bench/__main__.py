"""`python -m bench [NAME ...]`: run the benchmarks, print their figures, keep them in bench/results/."""
from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

BENCHMARKS = ["apiserver", "history", "scheduler", "grading", "course", "streaming", "codecs", "dra", "busy", "engines", "workshop"]
RESULTS = Path(__file__).parent / "results"


def main(argv: list[str]) -> int:
    names = argv or BENCHMARKS
    RESULTS.mkdir(exist_ok=True)
    for name in names:
        module = importlib.import_module(f"bench.{name}")
        print(f"== {name}", flush=True)
        figures = module.main()
        (RESULTS / f"{name}.json").write_text(json.dumps(figures, indent=1) + "\n")
        print(json.dumps(figures, indent=1), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
