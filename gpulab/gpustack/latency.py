"""How sharing a GPU changes a latency-sensitive request: exclusive, MIG slice, time-slicing, MPS.

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
  slice's share of SMs (``r * 132 / 16`` on an H200 1g.18gb);
* MPS with ``b`` busy neighbours and an active-thread limit ``a`` (a fraction of
  the SMs each client's kernels may use; 1 without a limit): clients' kernels run
  at the same time, so nobody waits for a time slice. The request gets
  ``share = min(a, max(1 - b a, 1 / (b + 1)))`` of the SMs (its limit while the
  neighbours' limits leave room, an even split of the SMs once they do not) and
  its compute time scales with that share as for MIG; while any neighbour is
  busy, memory bandwidth and L2 are shared (MPS partitions neither), which adds
  ``MPS_CONTENTION`` (30 %). ``p50`` uses the median number of busy neighbours
  (binomial in ``duty``), ``p99 = 1.10 x`` the time with all ``k`` busy. So at
  low load, without a limit, a request takes about a whole GPU's time; each busy
  neighbour takes SMs from it; with the device plugin's limit of ``100 //
  replicas`` percent the request is slower alone (a fixed share of SMs) and its
  latency stays flat until the neighbours' limits add up to more than the GPU.

What the MPS curve rests on (published, none measured by gpulab; see
``MPS_CURVE_BASIS``, which the course shows):

* NVIDIA, *Multi-Process Service* (docs.nvidia.com/deploy/mps): kernels and
  copies of different client processes overlap on the GPU (Hyper-Q), with one
  set of scheduling resources and no context switches between clients; since
  Volta a client's ``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`` (or the daemon's
  ``set_default_active_thread_percentage``) caps the share of threads, hence SMs,
  its kernels may use, without reserving them for it; memory bandwidth is not
  partitioned, and a fatal fault in one client can end the others.
* NVIDIA k8s-device-plugin, ``cmd/mps-control-daemon/mps/daemon.go``
  (``activeThreadPercentage``): the plugin's MPS daemon sets the default active
  thread percentage to ``100 / replicas`` (integer division) and the pinned
  memory limit to memory / replicas.
* Villarrubia, Costero, Igual, Olcoz, *A comprehensive evaluation of spatial
  co-execution on GPUs using MPS and MIG technologies* (arXiv:2604.22430, 2026;
  J. Supercomputing, doi:10.1007/s11227-026-08312-z): MPS co-execution with
  thread provisioning gains up to about 30 % where jobs complement each other and
  loses about 30 % under memory contention, which MIG's isolation removes; the
  30 % penalty here is that figure.
* Gilman and Walls, *Characterizing Concurrency Mechanisms for NVIDIA GPUs under
  Deep Learning Workloads* (arXiv:2110.00459, 2021, A100): no fine-grained
  preemption between concurrent kernels and contention-unaware thread-block
  placement, so concurrent clients share SMs as their blocks happen to land (the
  even split above) and turnaround under co-location is hard to predict.
* Pebble, *NVIDIA MPS vs dedicated GPU allocation for LLM inference*
  (gopebble.com case study; vLLM, Qwen3-4B-FP8, A100-80GB, two MPS clients at 60 %
  threads each vs one dedicated GPU): median time to first token +1.4 %, median
  time per output token +19.5 %; a published order of magnitude for "close to a
  whole GPU at low load, slower under bandwidth-bound contention".

Limits, stated so nobody reads more into it: one GPU model measured (other
models reuse the H200 calibration with their SM count); the MIG scaling assumes
compute-bound work and was not measured; the MPS curve is a model built from
the published figures above, not fitted to any measurement of gpulab's request
(``gpulab probe`` measures it on a GPU where an MPS daemon runs): it assumes
compute-bound work that scales with its SM share, a fair split of SMs between
busy clients without limits, one 30 % bandwidth penalty whatever the number of
busy neighbours and whatever the request's mix of compute and memory traffic,
and no wait for neighbours' thread blocks to drain; power and clock throttling
are not modelled; the second measured run (requests every 6 ms instead of 4)
shows shorter slices (about 1.5-2.3 ms) than the calibration run, which the
model does not reproduce; under time-slicing partial duty cycles only affect
p50 when the neighbour is busy more than half the time.
"""
from __future__ import annotations

import json
import math
from functools import cache
from importlib import resources

from .hardware import gpu_model

MODES = ("exclusive", "mig", "time-slicing", "mps")

MPS_CONTENTION = 0.30
"""Extra time of a request under MPS while any neighbour is busy: memory bandwidth and L2 are shared, not
partitioned. The "around 30 %" that Villarrubia et al. (arXiv:2604.22430) report for MPS co-execution under
memory contention."""

MPS_CURVE_BASIS = """\
**What the MPS curve rests on.** It is a model built from published figures, not a measurement of this
request (run `gpulab probe` on a GPU where an MPS control daemon runs to measure yours):

* *Concurrency, not time slices.* NVIDIA's [Multi-Process Service
  documentation](https://docs.nvidia.com/deploy/mps/index.html): kernels from different client processes run on
  the GPU at the same time, with no context switch between clients, so a request waits for no neighbour's time
  slice. Memory bandwidth and L2 are shared, and a fatal fault in one client can end the others.
* *The thread limit.* The same documentation: `CUDA_MPS_ACTIVE_THREAD_PERCENTAGE` (or the daemon's
  `set_default_active_thread_percentage`) caps the share of SMs a client's kernels may use, without reserving
  them. NVIDIA's Kubernetes device plugin sets it to `100 / replicas` percent for every client
  ([`cmd/mps-control-daemon/mps/daemon.go`](https://github.com/NVIDIA/k8s-device-plugin)), so a request on a GPU
  shared 4 ways runs on at most 25 % of the SMs, busy neighbours or not.
* *Contention.* Villarrubia, Costero, Igual and Olcoz, [*A comprehensive evaluation of spatial co-execution on
  GPUs using MPS and MIG technologies*](https://arxiv.org/abs/2604.22430) (2026): MPS co-execution gains up to
  about 30 % where jobs complement each other and loses about 30 % under memory contention, which MIG's
  isolation removes. The model adds that 30 % while any neighbour is busy.
* *No preemption between clients.* Gilman and Walls, [*Characterizing Concurrency Mechanisms for NVIDIA GPUs
  under Deep Learning Workloads*](https://arxiv.org/abs/2110.00459) (2021, A100): there is no fine-grained
  preemption between concurrent kernels and thread blocks are placed without regard to contention, so busy
  clients without a limit split the SMs (the model splits them evenly) and turnaround is hard to predict.
* *An order of magnitude from serving.* Pebble's [MPS vs dedicated GPU case
  study](https://www.gopebble.com/case-studies/nvidia-mps-vs-dedicated-gpu-allocation-for-llm-inference) (vLLM
  on an A100-80GB, two MPS clients at 60 % threads each): median time to first token +1.4 %, median time per
  output token +19.5 % against a dedicated GPU.

Its limits: work is assumed compute-bound (time scales with the SM share, as for the MIG line), the 30 % is
the same for one busy neighbour or many and for any mix of compute and memory traffic, and the wait for
neighbours' running thread blocks to finish is left out. The time-slicing curve is fitted to a measurement;
this one is not.
"""


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


def device_plugin_thread_percentage(replicas: int) -> int:
    """The active thread percentage NVIDIA's device plugin gives every MPS client of a GPU shared ``replicas`` ways
    (``100 / replicas`` in integer arithmetic, as k8s-device-plugin's ``activeThreadPercentage``)."""
    if replicas < 1:
        raise ValueError(f"replicas must be >= 1, got {replicas}")
    return 100 // replicas


def expected_latency(mode: str, *, neighbours: int = 0, duty: float = 1.0, request_ms: float | None = None,
                     mig_profile: str | None = None, model: str = "H200",
                     active_thread_percentage: float | None = None) -> dict[str, float]:
    """Expected ``{"p50_ms", "p99_ms"}`` of one request under ``mode`` (see the module docstring).

    ``request_ms`` is the request's p50 on an idle, exclusive H200 (default: the
    calibration request); ``duty`` the busy fraction of each neighbour;
    ``mig_profile`` the slice for ``mode="mig"`` (e.g. ``"1g.18gb"``);
    ``active_thread_percentage`` the MPS limit on each client's share of SMs, for
    ``mode="mps"`` (default: no limit, 100; what the device plugin sets is
    :func:`device_plugin_thread_percentage`).
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    if neighbours < 0 or not 0.0 <= duty <= 1.0:
        raise ValueError("neighbours must be >= 0 and duty within [0, 1]")
    if active_thread_percentage is not None and mode != "mps":
        raise ValueError(f"active_thread_percentage is MPS's limit on a client's SMs: it applies to mode 'mps', "
                         f"not {mode!r}")
    gpu = gpu_model(model)
    reference = gpu_model("H200")
    r = (request_ms_default() if request_ms is None else request_ms) * reference.multiprocessors / gpu.multiprocessors
    if mode == "mig":
        if mig_profile is None:
            raise ValueError("mode 'mig' needs mig_profile")
        r *= gpu.multiprocessors / gpu.mig_profile(mig_profile).multiprocessors
        return _result(r, r * tail_ratio())
    if mode == "mps":
        return _mps(r, neighbours, duty, 100.0 if active_thread_percentage is None else active_thread_percentage)
    if mode == "exclusive" or neighbours == 0 or duty == 0.0:
        return _result(r, r * tail_ratio())
    slice_ms = time_slice_ms()
    own_slices = max(1, math.ceil(r / slice_ms))
    waits = neighbours * own_slices
    p99 = r * tail_ratio() + waits * slice_ms
    p50 = r + (waits - 0.5) * slice_ms if duty > 0.5 else r
    return _result(p50, p99)


def _mps(r: float, neighbours: int, duty: float, percentage: float) -> dict[str, float]:
    if not 0.0 < percentage <= 100.0:
        raise ValueError(f"active_thread_percentage must lie in (0, 100], got {percentage:g}: it is the share of "
                         "the GPU's threads one MPS client may use")
    limit = percentage / 100.0
    tail_busy = neighbours if duty > 0.0 else 0
    return _result(_mps_ms(r, _median_busy(neighbours, duty), limit),
                   _mps_ms(r, tail_busy, limit) * tail_ratio())


def _mps_ms(r: float, busy: int, limit: float) -> float:
    """The request's time with ``busy`` neighbours computing beside it under MPS (the module docstring's formula)."""
    share = min(limit, max(1.0 - busy * limit, 1.0 / (busy + 1)))
    return r / share * (1.0 + (MPS_CONTENTION if busy else 0.0))


def _median_busy(neighbours: int, duty: float) -> int:
    """The median number of busy neighbours when each is busy a ``duty`` fraction of the time, independently."""
    cumulative = 0.0
    for busy in range(neighbours + 1):
        cumulative += math.comb(neighbours, busy) * duty ** busy * (1.0 - duty) ** (neighbours - busy)
        if cumulative >= 0.5:
            return busy
    return neighbours


def _result(p50: float, p99: float) -> dict[str, float]:
    return {"p50_ms": round(p50, 4), "p99_ms": round(p99, 4)}
