"""``python -m tools.differential``: the corpus on a fresh embedded cluster and a fresh upstream one, compared.

Prints every new difference with both outputs side by side, agreement per area, and last
``agreement: A/B cases, K known differences, N new``. Exits 1 when a case differs that the corpus does not mark as
known. ``--json FILE`` keeps every verdict (docs/differential.md's figures are written from one).
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from pathlib import Path

from .corpus import load
from .report import render
from .runner import compare


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.differential", description=__doc__.splitlines()[0])
    parser.add_argument("patterns", nargs="*", help="case ids or globs (default: every case), e.g. 'errors/*'")
    parser.add_argument("--area", action="append", default=[], help="only the cases of this area (repeatable)")
    parser.add_argument("--known", action="store_true", help="print known differences in full too")
    parser.add_argument("--keep", action="store_true", help="leave both clusters running (their homes are printed)")
    parser.add_argument("--root", type=Path, help="the clusters' homes (ROOT/embedded, ROOT/upstream); clusters "
                        "already running there are used as they are (with --keep, to iterate on cases)")
    parser.add_argument("--json", type=Path, help="write every case's outcome and outputs to this file")
    parser.add_argument("--list", action="store_true", help="list the cases and stop")
    args = parser.parse_args(argv)

    cases = [c for c in load()
             if (not args.patterns or any(fnmatch.fnmatch(c.id, p) for p in args.patterns))
             and (not args.area or c.area in args.area)]
    if args.list:
        for case in cases:
            print(f"{case.id} [{case.area}]" + (f" known: {case.known}" if case.known else ""))
        print(f"{len(cases)} cases")
        return 0

    def progress(engine: str, case) -> None:
        print(f"  {engine:<9} {case.id}", file=sys.stderr, flush=True)

    verdicts = compare(cases, root=args.root, keep=args.keep, progress=progress)
    print(render(verdicts, verbose_known=args.known))
    if args.json:
        args.json.write_text(json.dumps([{
            "case": v.case.id, "area": v.case.area, "outcome": v.outcome, "known": v.case.known,
            "embedded": [o.__dict__ for o in v.embedded.outputs], "upstream": [o.__dict__ for o in v.upstream.outputs],
        } for v in verdicts], indent=1))
    return 1 if any(v.outcome == "new" for v in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
