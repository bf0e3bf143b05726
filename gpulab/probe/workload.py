"""The two kinds of process that share the GPU during a probe: the latency server and a busy neighbour.

Each runs in its own process (``spawn``), so each holds its own CUDA context,
exactly as two time-sliced pods do: the GPU driver switches between contexts
by time slice, and that is the effect being measured. Where an MPS control
daemon runs, CUDA makes each process one of its clients instead, and their
kernels run concurrently, as MPS pods' do. ``env`` is set before CUDA starts
(``--sharing time-slicing`` uses it to keep the processes off a daemon).
PyTorch is imported inside the process functions only.

Server: each request is two bf16 ``size x size`` matmuls followed by
``torch.cuda.synchronize()``; latency runs from submit to synchronize.
Requests are issued open loop, one every ``interval`` on a fixed schedule; a
request due while the previous one is still running is issued as soon as that
one returns (one thread, as in the measurement this reproduces), and its
latency still counts from its own submit.

Neighbour: bf16 ``size x size`` matmuls back to back, ``per_sync`` per
synchronize, for as long as the probe runs. With ``duty < 1`` it is busy for
``duty x period`` out of every ``period`` (synchronizing after each matmul to
keep time); ``duty == 0`` holds a context (and ``hold_gib`` of memory) but
computes nothing.
"""
from __future__ import annotations

import os
import time
import traceback
from typing import Any


def _matrices(torch: Any, size: int, count: int) -> list[Any]:
    return [torch.randn(size, size, dtype=torch.bfloat16, device="cuda") for _ in range(count)]


def serve(conn: Any, device: int, size: int, env: dict[str, str]) -> None:
    """Server process: answer ``("measure", requests, interval_ms, warmup)`` with ``("latencies", [ms...])``."""
    try:
        os.environ.update(env)
        import torch

        torch.cuda.set_device(device)
        a, b = _matrices(torch, size, 2)

        def request() -> float:
            start = time.perf_counter()
            c = a @ b
            c @ b
            torch.cuda.synchronize()
            return (time.perf_counter() - start) * 1000.0

        request()   # pays for cuBLAS initialisation outside any measurement
        props = torch.cuda.get_device_properties(device)
        conn.send(("ready", {"name": props.name, "total_memory": props.total_memory,
                             "multi_processor_count": props.multi_processor_count,
                             "capability": [props.major, props.minor],
                             "torch": torch.__version__, "cuda": torch.version.cuda}))
        while True:
            message = conn.recv()
            if message[0] == "stop":
                return
            _, requests, interval_ms, warmup = message
            for _ in range(warmup):
                request()
            conn.send(("started",))
            interval = interval_ms / 1000.0
            latencies = []
            schedule = time.perf_counter()
            for i in range(requests):
                wait = schedule + i * interval - time.perf_counter()
                if wait > 0:
                    time.sleep(wait)
                latencies.append(request())
            conn.send(("latencies", latencies))
    except Exception:  # noqa: BLE001 - the parent reports it; a dead server would only look like a hang
        conn.send(("error", traceback.format_exc()))


def neighbour(device: int, size: int, per_sync: int, duty: float, period_ms: float, hold_gib: float,
              ready: Any, stop: Any, done: Any, errors: Any, env: dict[str, str]) -> None:
    """Neighbour process: keep the GPU busy until ``stop`` is set, counting matmuls in ``done.value``."""
    try:
        os.environ.update(env)
        import torch

        torch.cuda.set_device(device)
        held = torch.empty(int(hold_gib * 2**30), dtype=torch.uint8, device="cuda") if hold_gib > 0 else None
        a, b, out = _matrices(torch, size, 3)
        torch.matmul(a, b, out=out)
        torch.cuda.synchronize()
        ready.set()
        period = period_ms / 1000.0
        while not stop.is_set():
            if duty >= 1.0:
                for _ in range(per_sync):
                    torch.matmul(a, b, out=out)
                torch.cuda.synchronize()
                done.value += per_sync
            elif duty <= 0.0:
                stop.wait(0.05)
            else:
                began = time.perf_counter()
                while time.perf_counter() - began < duty * period and not stop.is_set():
                    torch.matmul(a, b, out=out)
                    torch.cuda.synchronize()
                    done.value += 1
                rest = period - (time.perf_counter() - began)
                if rest > 0:
                    stop.wait(rest)
        del held
    except Exception:  # noqa: BLE001
        errors.put(traceback.format_exc())
        ready.set()
        raise SystemExit(1) from None
