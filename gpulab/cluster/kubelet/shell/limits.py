"""What a container's programs may consume: CPU a slice at a time, and memory up to their container's limit.

Every container's program is interpreted on the API server's own event loop, so a program that computes
without pausing (``while true; do x=$x$x; done``) must give the loop back often, and one that grows without
bound must end before the server's memory does. The interpreter counts each command it runs against a
:class:`Budget`: once the current slice's time is used up it yields :data:`BUSY` (its driver runs it again
on a later turn of the node agents' CPU, kubelet/cpu.py), and after ``SPIN_STEPS`` commands without
sleeping the program is taken to be busy for ever (it keeps its container running and costs nothing more).
Every value, pipe buffer and file the program builds is checked against the budget's memory before it is
built: past it the program ends as the kernel's OOM killer ends a container over its cgroup's memory limit,
SIGKILL, which the node agent reports as ``OOMKilled`` with exit code 137.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from ...quantity import value

# What a program yields when its slice of CPU is used up (it has more to compute at once).
BUSY = ("busy", 0.0)
SLICE = 0.001         # seconds a program computes before it yields BUSY
SPIN_STEPS = 100_000  # commands run without sleeping after which a program counts as busy for ever
# The memory an emulated container may hold whatever its limit says: the emulation keeps a program's values
# in the server's own memory, so a container without a limit (or with a larger one) is capped here. One
# command may copy a value this large without yielding, so the cap also bounds how long one step holds the
# event loop (about 5 ms for 8 MiB; 32 MiB let eight growing pods delay /healthz 0.4 s, bench/busy.py).
MEMORY_CAP = 8 * 1024 * 1024
_CLOCK_EVERY = 16     # commands between two reads of the clock


class Spin(Exception):
    """A loop ran a very long time without sleeping: the program is busy forever."""


class OutOfMemory(Exception):
    """The program asked for more memory than its container may use: the OOM killer ends it (SIGKILL)."""


@dataclass
class Budget:
    """One process's allowance: its memory limit (bytes), the end of its current slice, its steps since it slept."""

    memory: int = MEMORY_CAP
    slice_ends: float = float("inf")
    steps: int = 0

    def start_slice(self, seconds: float = SLICE) -> None:
        self.slice_ends = time.perf_counter() + seconds

    def spend(self) -> bool:
        """Count one command; True when the slice is used up (yield BUSY). Raises Spin past SPIN_STEPS."""
        self.steps += 1
        if self.steps > SPIN_STEPS:
            raise Spin
        return self.steps % _CLOCK_EVERY == 0 and time.perf_counter() >= self.slice_ends

    def slept(self) -> None:
        self.steps = 0

    def allocate(self, size: int) -> None:
        """Before building a value of ``size`` characters: OutOfMemory when it would not fit in the limit."""
        if size > self.memory:
            raise OutOfMemory


def memory_limit(container: dict) -> int:
    """The bytes a container's programs may hold: its ``resources.limits.memory``, at most MEMORY_CAP."""
    limit = ((container.get("resources") or {}).get("limits") or {}).get("memory")
    return MEMORY_CAP if limit is None else min(MEMORY_CAP, value(limit))
