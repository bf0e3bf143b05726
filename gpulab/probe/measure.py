"""One probe run: the server process, and for each (k, duty) k neighbour processes around one measurement.

For every row the neighbours start, load their matrices and signal ready; the
server warms up, says it started, and the neighbours' matmul counters are read
then and again when its requests are done, so ``neighbor_matmuls_each`` counts
the work each neighbour did during the measured window only. Neighbours are
stopped between rows, so rows do not leak into each other.
"""
from __future__ import annotations

import multiprocessing
import queue
import time
from dataclasses import dataclass
from typing import Any, Callable

from . import workload
from .stats import summarize

START_TIMEOUT = 300.0     # importing torch and creating a context on a busy GPU can take a while
SETTLE_SECONDS = 0.5


class ProbeError(RuntimeError):
    """A worker process failed; the message carries its traceback."""


@dataclass(frozen=True)
class Settings:
    size: int = 4096
    interval_ms: float = 4.0
    requests: int = 1500
    warmup: int = 50
    neighbours: tuple[int, ...] = (0, 1, 2, 3, 4)
    duties: tuple[float, ...] = (1.0,)
    neighbour_size: int = 8192
    matmuls_per_sync: int = 8
    period_ms: float = 20.0
    hold_gib: float = 0.0
    device: int = 0
    worker_env: tuple[tuple[str, str], ...] = ()   # set in each worker before CUDA starts (see mps.Sharing)

    def cases(self) -> list[tuple[int, float]]:
        """(k, duty) per row: k = 0 once (duty 0, nobody to be busy), then every duty for each k > 0."""
        return [(k, duty) for k in self.neighbours for duty in ((0.0,) if k == 0 else self.duties)]


@dataclass
class Outcome:
    device: dict           # the server's torch device properties
    rows: list[dict]
    seconds: float         # wall time the neighbours ran per row, longest


def _receive(conn: Any, process: Any, timeout: float, expected: str) -> tuple:
    deadline = time.monotonic() + timeout
    while not conn.poll(0.2):
        if not process.is_alive():
            raise ProbeError(f"the server process exited (code {process.exitcode}) before sending {expected!r}")
        if time.monotonic() > deadline:
            raise ProbeError(f"the server sent no {expected!r} within {timeout:.0f}s")
    message = conn.recv()
    if message[0] == "error":
        raise ProbeError(f"the server process failed:\n{message[1]}")
    return message


class _Neighbours:
    def __init__(self, ctx: Any, settings: Settings, k: int, duty: float):
        self.stop = ctx.Event()
        self.errors = ctx.Queue()
        self.ready = [ctx.Event() for _ in range(k)]
        self.done = [ctx.Value("q", 0, lock=False) for _ in range(k)]
        self.processes = [
            ctx.Process(target=workload.neighbour, daemon=True,
                        args=(settings.device, settings.neighbour_size, settings.matmuls_per_sync, duty,
                              settings.period_ms, settings.hold_gib, self.ready[i], self.stop, self.done[i],
                              self.errors, dict(settings.worker_env)))
            for i in range(k)]

    def start(self) -> None:
        for process in self.processes:
            process.start()
        deadline = time.monotonic() + START_TIMEOUT
        for event in self.ready:
            if not event.wait(max(0.0, deadline - time.monotonic())):
                raise ProbeError(f"a neighbour was not ready within {START_TIMEOUT:.0f}s")
        time.sleep(0.1)
        self._raise_failures()

    def counts(self) -> list[int]:
        return [value.value for value in self.done]

    def _raise_failures(self) -> None:
        failed = [p for p in self.processes if p.exitcode not in (None, 0)]
        if not failed:
            return
        try:
            detail = self.errors.get(timeout=5)
        except queue.Empty:
            detail = f"exit code {failed[0].exitcode}"
        raise ProbeError(f"a neighbour process failed:\n{detail}")

    def close(self) -> None:
        self.stop.set()
        for process in self.processes:
            process.join(30)
            if process.is_alive():
                process.terminate()
        self._raise_failures()


def run(settings: Settings, on_row: Callable[[dict], None] = lambda row: None) -> Outcome:
    """Measure every (k, duty) case of ``settings``; ``on_row`` sees each row as it is done."""
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    server = ctx.Process(target=workload.serve, args=(child, settings.device, settings.size, dict(settings.worker_env)),
                         daemon=True)
    server.start()
    rows: list[dict] = []
    longest = 0.0
    try:
        device = _receive(parent, server, START_TIMEOUT, "ready")[1]
        window = settings.requests * settings.interval_ms / 1000.0
        for k, duty in settings.cases():
            neighbours = _Neighbours(ctx, settings, k, duty)
            began = time.monotonic()
            try:
                neighbours.start()
                time.sleep(SETTLE_SECONDS if k else 0.0)
                parent.send(("measure", settings.requests, settings.interval_ms, settings.warmup))
                _receive(parent, server, START_TIMEOUT, "started")
                before = neighbours.counts()
                latencies = _receive(parent, server, START_TIMEOUT + 20 * window, "latencies")[1]
                after = neighbours.counts()
            finally:
                neighbours.close()
            longest = max(longest, time.monotonic() - began)
            row = {**summarize(latencies), "neighbors": k,
                   "neighbor_matmuls_each": [b - a for a, b in zip(before, after)],
                   "size": settings.size, "duty": duty}
            rows.append(row)
            on_row(row)
        parent.send(("stop",))
        server.join(30)
    finally:
        if server.is_alive():
            server.terminate()
    return Outcome(device=device, rows=rows, seconds=longest)
