"""How sharing a GPU changes a latency-sensitive request: exclusive, MIG slice, time-slicing.

Calibrated on one measurement (``data/h200-timeslicing.json``: an H200, driver
580.159.04, MIG off, default compute mode). A server issues requests of two bf16
4096x4096 matmuls (0.44 ms p50 alone) while 0..4 neighbour processes run
matmuls back to back on the same GPU. The GPU's scheduler time-slices between
CUDA contexts, so each busy neighbour can hold the GPU for one time slice before
the request runs: p99 grows by about one slice (2.34 ms) per busy neighbour.

The model:

* exclusive GPU: ``p50 = r`` (the request's own time), ``p99 = r * 1.10`` (the
  measured tail of the request alone);
* time-slicing with ``k`` busy neighbours: a request of ``n = ceil(r / slice)``
  slices waits behind ``k`` neighbour slices for each of its own, so
  ``p99 = 1.10 r + k n slice`` and ``p50 = r + (k n - 1/2) slice``; neighbours
  with ``duty == 0`` (a context holding memory but computing nothing) cost nothing,
  and any busy fraction counts as busy for the tail;
* MIG slice: isolated from its neighbours (own SMs, L2 and memory), so the
  neighbours do not appear at all; the request's compute time scales with the
  slice's share of SMs (``r * 132 / 16`` on an H200 1g.18gb).

Limits, stated so nobody reads more into it: one GPU model measured (other
models reuse the H200 calibration with their SM count); the MIG scaling assumes
compute-bound work and was not measured; memory-bandwidth contention, MPS,
power and clock throttling are not modelled; the second measured run (requests
every 6 ms instead of 4) shows shorter slices (about 1.5-2.3 ms) than the
calibration run, which the model does not reproduce; partial duty cycles only
affect p50 when the neighbour is busy more than half the time.
"""
from __future__ import annotations

import json
import math
from functools import cache
from importlib import resources

from .hardware import gpu_model

MODES = ("exclusive", "mig", "time-slicing")


@cache
def _measurement() -> dict:
    return json.loads(resources.files(__package__).joinpath("data/h200-timeslicing.json").read_text())


def measured_rows() -> list[dict]:
    """Every measured row, flattened for plotting.

    Keys: ``run`` (1: calibration run, 4096-side requests every 4 ms; 2: sizes and
    duty cycles, requests every 6 ms), ``size`` (matmul side), ``neighbours``,
    ``duty``, ``n`` and the percentiles ``p50_ms`` ... ``max_ms`` as measured.
    """
    data = _measurement()
    rows = []
    for row in data["rows"]:
        rows.append({"run": 1, "size": 4096, "neighbours": row["neighbors"], "duty": 1.0 if row["neighbors"] else 0.0,
                     **_percentiles(row)})
    for row in data["second_run"]["rows"]:
        rows.append({"run": 2, "size": row["size"], "neighbours": row["neighbors"], "duty": row["duty"],
                     **_percentiles(row)})
    return rows


def _percentiles(row: dict) -> dict:
    keys = ("n", "p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms")
    return {k: row[k] for k in keys if k in row}


def _alone() -> dict:
    return _measurement()["rows"][0]


def request_ms_default() -> float:
    """p50 of the calibration request on an idle H200 (two bf16 4096x4096 matmuls)."""
    return _alone()["p50_ms"]


def tail_ratio() -> float:
    """p99 / p50 of the calibration request alone."""
    alone = _alone()
    return alone["p99_ms"] / alone["p50_ms"]


def time_slice_ms() -> float:
    """The p99 cost of one busy neighbour: (p99 with 4 neighbours - p99 alone) / 4."""
    rows = _measurement()["rows"]
    busiest = max(rows, key=lambda r: r["neighbors"])
    return (busiest["p99_ms"] - rows[0]["p99_ms"]) / busiest["neighbors"]


def expected_latency(mode: str, *, neighbours: int = 0, duty: float = 1.0, request_ms: float | None = None,
                     mig_profile: str | None = None, model: str = "H200") -> dict[str, float]:
    """Expected ``{"p50_ms", "p99_ms"}`` of one request under ``mode`` (see the module docstring).

    ``request_ms`` is the request's p50 on an idle, exclusive H200 (default: the
    calibration request); ``duty`` the busy fraction of each neighbour;
    ``mig_profile`` the slice for ``mode="mig"`` (e.g. ``"1g.18gb"``).
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    if neighbours < 0 or not 0.0 <= duty <= 1.0:
        raise ValueError("neighbours must be >= 0 and duty within [0, 1]")
    gpu = gpu_model(model)
    reference = gpu_model("H200")
    r = (request_ms_default() if request_ms is None else request_ms) * reference.multiprocessors / gpu.multiprocessors
    if mode == "mig":
        if mig_profile is None:
            raise ValueError("mode 'mig' needs mig_profile")
        r *= gpu.multiprocessors / gpu.mig_profile(mig_profile).multiprocessors
        return _result(r, r * tail_ratio())
    if mode == "exclusive" or neighbours == 0 or duty == 0.0:
        return _result(r, r * tail_ratio())
    slice_ms = time_slice_ms()
    own_slices = max(1, math.ceil(r / slice_ms))
    waits = neighbours * own_slices
    p99 = r * tail_ratio() + waits * slice_ms
    p50 = r + (waits - 0.5) * slice_ms if duty > 0.5 else r
    return _result(p50, p99)


def _result(p50: float, p99: float) -> dict[str, float]:
    return {"p50_ms": round(p50, 4), "p99_ms": round(p99, 4)}
