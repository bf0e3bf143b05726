"""``gpulab probe`` (also ``python -m gpulab.probe``, or ``python -m probe`` in the probe pod).

Defaults reproduce the course's H200 measurement: 1500 requests of two bf16
4096x4096 matmuls every 4 ms, with 0..4 neighbours running 8192x8192 matmuls.
Where an MPS control daemon runs, the processes are its clients and the run
measures MPS (``--sharing auto``, the default; see ``mps.py``). Without a GPU
(or without PyTorch) it says why and exits 0: a machine without a GPU is a
normal place to read the course, not an error.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from . import mps

DEFAULT_OUTPUT = "probe-results.json"


def _ints(text: str) -> tuple[int, ...]:
    try:
        values = tuple(sorted({int(v) for v in text.split(",") if v.strip()}))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, got {text!r}") from None
    if not values or values[0] < 0:
        raise argparse.ArgumentTypeError(f"expected numbers >= 0, got {text!r}")
    return values


def _duties(text: str) -> tuple[float, ...]:
    try:
        values = tuple(sorted({float(v) for v in text.split(",") if v.strip()}))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers in [0, 1], got {text!r}") from None
    if not values or values[0] < 0 or values[-1] > 1:
        raise argparse.ArgumentTypeError(f"duty cycles must lie in [0, 1], got {text!r}")
    return values


def _positive(kind):
    def parse(text: str):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
        return value
    return parse


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--size", type=_positive(int), default=4096,
                   help="side of the request's two bf16 square matmuls (default: 4096)")
    p.add_argument("--interval-ms", type=_positive(float), default=4.0,
                   help="one request every this many ms, open loop (default: 4)")
    p.add_argument("--requests", type=_positive(int), default=1500, help="requests per row (default: 1500)")
    p.add_argument("--warmup", type=int, default=50, help="unmeasured requests before each row (default: 50)")
    p.add_argument("--neighbours", type=_ints, default=(0, 1, 2, 3, 4), metavar="K,K,...",
                   help="numbers of busy neighbour processes to measure with (default: 0,1,2,3,4)")
    p.add_argument("--duty", dest="duties", type=_duties, default=(1.0,), metavar="D,D,...",
                   help="busy fraction of each neighbour, 0..1; several give one row each (default: 1)")
    p.add_argument("--period-ms", type=_positive(float), default=20.0,
                   help="duty-cycle period of a neighbour (default: 20)")
    p.add_argument("--neighbour-size", type=_positive(int), default=8192,
                   help="side of the neighbours' bf16 matmuls (default: 8192)")
    p.add_argument("--matmuls-per-sync", type=_positive(int), default=8,
                   help="matmuls a busy neighbour queues per synchronize (default: 8)")
    p.add_argument("--hold-gib", type=float, default=0.0, help="GPU memory each neighbour holds (default: 0)")
    p.add_argument("--budget-ms", type=_positive(float), default=5.0,
                   help="the p99 latency the service can afford (default: 5)")
    p.add_argument("--sharing", choices=mps.SHARING_CHOICES, default="auto",
                   help="how the processes share the GPU: mps (as clients of a running MPS control daemon), "
                        "time-slicing (each its own CUDA context, kept off any daemon), or auto: mps where a "
                        "daemon runs, else time-slicing (default: auto)")
    p.add_argument("--device", type=int, default=0, help="CUDA device index (default: 0)")
    p.add_argument("-o", "--output", default=DEFAULT_OUTPUT,
                   help=f"where to write the JSON results; - prints them after the table (default: {DEFAULT_OUTPUT})")
    p.set_defaults(func=run)


def add_probe(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("probe", help="measure time-slicing or MPS latency on a real NVIDIA GPU (needs PyTorch with "
                                     "CUDA)")
    configure(p)


def run(args: argparse.Namespace) -> int:
    from . import gpu

    reason = gpu.unavailable_reason(args.device)
    if reason:
        print(f"gpulab probe: {reason}. Nothing measured.")
        return 0
    with tempfile.TemporaryDirectory(prefix="gpulab-probe-no-mps-") as scratch:
        try:
            sharing = mps.choose(args.sharing, os.environ, gpu.nvidia_smi(args.device).get("compute_mode"), scratch)
        except mps.SharingError as err:
            print(f"gpulab probe: {err}", file=sys.stderr)
            return 1
        return _measure(args, sharing)


def _measure(args: argparse.Namespace, sharing: mps.Sharing) -> int:
    from . import gpu, measure, report

    settings = measure.Settings(size=args.size, interval_ms=args.interval_ms, requests=args.requests,
                                warmup=args.warmup, neighbours=args.neighbours, duties=args.duties,
                                neighbour_size=args.neighbour_size, matmuls_per_sync=args.matmuls_per_sync,
                                period_ms=args.period_ms, hold_gib=args.hold_gib, device=args.device,
                                worker_env=sharing.worker_env)
    print(f"gpulab probe: requests of two bf16 {args.size}x{args.size} matmuls every {args.interval_ms:g} ms, "
          f"{args.requests} per row; neighbours run {args.neighbour_size}x{args.neighbour_size} matmuls", flush=True)
    print(sharing.line(), flush=True)
    print(report.table_header(args.budget_ms), flush=True)
    try:
        outcome = measure.run(settings, on_row=lambda row: print(report.table_row(row, args.budget_ms), flush=True))
    except measure.ProbeError as err:
        print(f"gpulab probe: {err}", file=sys.stderr)
        return 1
    gpu_info = gpu.describe(outcome.device, args.device)
    doc = report.document(settings, outcome, gpu_info, args.budget_ms, sharing.describe())
    print(f"GPU: {gpu_info['gpu']} (driver {gpu_info.get('driver', 'unknown')})")
    print(f"verdict: {doc['budget']['verdict']}")
    if args.output == "-":
        report.write(doc, sys.stdout)
    else:
        with open(args.output, "w", encoding="utf-8") as stream:
            report.write(doc, stream)
        print(f"results: {Path(args.output).resolve()}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpulab probe", description=__doc__.split("\n\n")[0])
    configure(parser)
    args = parser.parse_args(argv)
    return args.func(args)
