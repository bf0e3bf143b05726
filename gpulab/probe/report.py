"""What a probe run prints and writes: a table per (k, duty), a verdict against the budget, the JSON document.

The JSON document has the shape of ``gpulab/gpustack/data/h200-timeslicing.json``
(``what``, ``gpu``, ``method``, ``rows``); each row carries the data file's keys
(``n``, ``p50_ms`` ... ``mean_ms``, ``neighbors``, ``neighbor_matmuls_each``) plus
``size`` and ``duty`` as its second run does, so the course's latency plots read
a learner's measurement the same way as the shipped one. ``budget`` is added,
and ``sharing``: ``{"mode": "time-slicing"}``, or for MPS ``{"mode": "mps",
"pipe_directory", "active_thread_percentage"}`` (``mps.Daemon``), a separate
mode whose rows must not be read as time-slicing ones.
"""
from __future__ import annotations

import json
from typing import TextIO

from .measure import Outcome, Settings

WHAT = {
    "time-slicing": ("Latency of a latency-sensitive GPU request while 0..{k} busy neighbour processes share one GPU "
                     "by time-slicing (the GPU driver's default scheduling between CUDA contexts, which is what "
                     "Kubernetes time-slicing relies on)."),
    "mps": ("Latency of a latency-sensitive GPU request while 0..{k} busy neighbour processes share one GPU as "
            "clients of an MPS control daemon (CUDA's Multi-Process Service runs their kernels concurrently, which "
            "is what the device plugin's MPS strategy relies on)."),
}


MODE_NAMES = {"time-slicing": "time-slicing", "mps": "MPS"}


def method(settings: Settings, outcome: Outcome, gpu: dict, mode: str = "time-slicing") -> dict:
    """The data file's ``method`` strings, for these settings."""
    if settings.duties == (1.0,):
        pace = f"back to back ({settings.matmuls_per_sync} per synchronize)"
    else:
        duties = ", ".join(f"{d:g}" for d in settings.duties)
        pace = (f"back to back ({settings.matmuls_per_sync} per synchronize) at duty 1, otherwise busy for "
                f"duty x {settings.period_ms:g} ms out of every {settings.period_ms:g} ms (duty {duties}; "
                "duty 0 = a neighbour holding a CUDA context but computing nothing)")
    held = f", each holding {settings.hold_gib:g} GiB" if settings.hold_gib else ""
    device = outcome.device
    mig = {0: "MIG disabled", 1: "MIG enabled"}.get(gpu.get("mig_mode_current"), "MIG mode unknown")
    compute = {0: "default compute mode", 3: "exclusive-process compute mode"}.get(
        gpu.get("compute_mode"), "compute mode unknown")
    return {
        "server": (f"one process issues {settings.requests} requests, one every {settings.interval_ms:g} ms "
                   f"(open loop); each request is two bf16 {settings.size}x{settings.size} matmuls followed by a "
                   "device synchronize; latency is measured from submit to synchronize"),
        "neighbours": (f"k processes on the same GPU{' (MPS clients)' if mode == 'mps' else ''}, each running bf16 "
                       f"{settings.neighbour_size}x{settings.neighbour_size} matmuls {pace}{held} for "
                       f"{outcome.seconds:.0f} s"),
        "tool": (f"PyTorch {device['torch']} (CUDA {device['cuda']}), driver {gpu.get('driver', 'unknown')}, "
                 f"{mig}, {compute}; gpulab probe"),
    }


def _within(row: dict, budget_ms: float) -> bool:
    return row["p99_ms"] <= budget_ms


def verdict(rows: list[dict], budget_ms: float, mode: str = "time-slicing") -> dict:
    """How many busy neighbours keep p99 within ``budget_ms`` (rows at the highest duty measured) under ``mode``."""
    alone = next((r for r in rows if r["neighbors"] == 0), None)
    busiest = max((r["duty"] for r in rows if r["neighbors"]), default=None)
    shared = sorted((r for r in rows if r["neighbors"] and r["duty"] == busiest), key=lambda r: r["neighbors"])
    result: dict = {"percentile": "p99", "budget_ms": budget_ms, "max_neighbours_within_budget": None}
    if alone is not None and not _within(alone, budget_ms):
        result["verdict"] = (f"over budget even alone: p99 {alone['p99_ms']:.2f} ms > {budget_ms:g} ms. This request "
                             "needs more GPU than it gets (a faster GPU or a smaller request), not a shared one.")
        return result
    fits = 0 if alone is not None else None
    for row in shared:
        if _within(row, budget_ms):
            fits = row["neighbors"]
            continue
        result["max_neighbours_within_budget"] = fits
        share = (f"Share this GPU between at most {fits + 1} pods ({MODE_NAMES[mode]} replicas <= {fits + 1})"
                 if fits is not None else f"Share this GPU with fewer than {row['neighbors']} busy neighbours")
        result["verdict"] = (f"over budget with {row['neighbors']} busy neighbour(s) at duty {busiest:g}: p99 "
                             f"{row['p99_ms']:.2f} ms > {budget_ms:g} ms. {share}, or give this workload a MIG "
                             "slice or a whole GPU.")
        return result
    most = shared[-1]["neighbors"] if shared else 0
    result["max_neighbours_within_budget"] = most
    result["verdict"] = (f"within budget: p99 <= {budget_ms:g} ms with up to {most} busy neighbour(s), the most "
                         "measured; measure more neighbours to find the limit.")
    return result


def _cell(value: float) -> str:
    return f"{value:9.2f}"


def table_header(budget_ms: float) -> str:
    return (f"{'neighbours':>10}  {'duty':>4}  {'p50 ms':>9}  {'p99 ms':>9}  {'p99.9 ms':>9}  "
            f"p99 vs budget {budget_ms:g} ms")


def table_row(row: dict, budget_ms: float) -> str:
    duty = "-" if row["neighbors"] == 0 else f"{row['duty']:.2f}"
    mark = "ok" if _within(row, budget_ms) else "over"
    return (f"{row['neighbors']:>10}  {duty:>4}  {_cell(row['p50_ms'])}  {_cell(row['p99_ms'])}  "
            f"{_cell(row['p999_ms'])}  {mark}")


def document(settings: Settings, outcome: Outcome, gpu: dict, budget_ms: float, sharing: dict) -> dict:
    """The JSON document written by the probe; ``sharing`` is ``mps.Sharing.describe()``."""
    mode = sharing["mode"]
    return {
        "what": WHAT[mode].format(k=max(settings.neighbours)),
        "gpu": gpu,
        "method": method(settings, outcome, gpu, mode),
        "sharing": sharing,
        "rows": outcome.rows,
        "budget": verdict(outcome.rows, budget_ms, mode),
    }


def write(doc: dict, stream: TextIO) -> None:
    json.dump(doc, stream, indent=1)
    stream.write("\n")
