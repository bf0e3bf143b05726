"""What one submission may consume while it is graded, and what its cell says when it goes over.

Every graded kernel, and everything it starts, shares four bounds (issue 23), so
that 300 hostile submissions cannot take the grading machine's memory, disk,
process table or CPU from the honest ones graded beside them:

* **memory**: each process at most ``memory`` bytes of address space
  (``RLIMIT_AS``): an allocation beyond fails (``MemoryError`` in Python) instead
  of growing into the host's memory. All of a submission's processes together
  stay under ``processes`` x ``memory``;
* **disk**: everything the submission can write (its notebook's folder, its
  home, ``/tmp``) is one tmpfs of ``disk`` bytes inside its sandbox
  (:mod:`.sandbox`): a write beyond fails with "No space left on device", and
  nothing it writes ever reaches the host's disk;
* **processes**: at most ``processes`` processes and threads (``RLIMIT_NPROC``),
  counted for the submission alone: it has an identity of its own (a uid of its
  own when grading as root, :mod:`.identity`; a user namespace of its own
  otherwise, where Linux counts per namespace);
* **CPU time**: each process at most ``cpu_seconds`` seconds (``RLIMIT_CPU``):
  the kernel gets :class:`CPUTimeExceeded` in the running cell, and is killed
  :data:`CPU_GRACE_S` seconds later should it carry on.

:mod:`.sandbox_entry` sets them inside the sandbox before any learner code
runs, soft and hard alike, so nothing there can raise them again. The sizes
are written as Kubernetes quantities (``2Gi``, ``512Mi``), as a pod's limits.
"""
from __future__ import annotations

import json
import resource
import signal
from dataclasses import asdict, dataclass

CPU_GRACE_S = 5             # after the soft CPU limit (SIGXCPU), the hard one (SIGKILL)
SHM_BYTES = 64 * 1024 * 1024  # /dev/shm (POSIX semaphores, shared memory), a tmpfs of its own beside ``disk``
DEFAULT_MEMORY = "2Gi"      # kubectl alone reserves 600Mi of address space; an idle lab kernel about 1Gi
DEFAULT_DISK = "512Mi"
DEFAULT_PROCESSES = 128     # a lab kernel runs about 15 threads, kubectl as many again
DEFAULT_CPU_SECONDS = 300   # a whole lab takes a few seconds; per process, so a restart starts afresh


class CPUTimeExceeded(Exception):
    """Raised in the kernel's running cell when it has used up its CPU time."""


@dataclass(frozen=True)
class Limits:
    memory: int
    disk: int
    processes: int
    cpu_seconds: int

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Limits:
        return cls(**json.loads(text))

    def apply(self) -> None:
        """Bound this process and everything it starts (inside the sandbox, before the kernel runs)."""
        resource.setrlimit(resource.RLIMIT_AS, (self.memory, self.memory))
        resource.setrlimit(resource.RLIMIT_NPROC, (self.processes, self.processes))
        resource.setrlimit(resource.RLIMIT_CPU, (self.cpu_seconds, self.cpu_seconds + CPU_GRACE_S))
        seconds = self.cpu_seconds

        def cpu_time_exceeded(signum, frame):
            raise CPUTimeExceeded(f"the kernel has used its {seconds} s of CPU time")

        signal.signal(signal.SIGXCPU, cpu_time_exceeded)

    def exceeded(self, outputs) -> str | None:
        """Which limit a cell's error outputs show it went over ("memory", "disk", "processes", "cpu"), if any."""
        for output in outputs:
            if output.get("output_type") != "error":
                continue
            ename, evalue = output.get("ename", ""), str(output.get("evalue", ""))
            if ename == "MemoryError":
                return "memory"
            if ename == CPUTimeExceeded.__name__:
                return "cpu"
            if "[Errno 28]" in evalue or "No space left on device" in evalue:
                return "disk"
            if "[Errno 11]" in evalue or "can't start new thread" in evalue:
                return "processes"
        return None

    def explain(self, limit: str) -> str:
        """The message the grader adds to a cell that went over ``limit``."""
        said = {
            "memory": f"each of its processes may use {_size(self.memory)} of memory "
                      "(c.HermeticExecute.memory_limit, gpulab grade --memory)",
            "disk": f"all it writes (its folder, its home and /tmp) may take {_size(self.disk)} "
                    "(c.HermeticExecute.disk_limit, gpulab grade --disk)",
            "processes": f"it may run {self.processes} processes and threads at once "
                         "(c.HermeticExecute.process_limit, gpulab grade --processes)",
            "cpu": f"each of its processes may use {self.cpu_seconds} s of CPU time "
                   "(c.HermeticExecute.cpu_limit, gpulab grade --cpu-seconds)",
        }[limit]
        noun = {"processes": "process", "cpu": "CPU time"}.get(limit, limit)
        return (f"this cell went over the submission's {noun} limit: {said}. It earns no points; the kernel "
                "was restarted and the earlier cells re-run before grading went on")


def parse_size(value: str, setting: str) -> int:
    """``value`` (a Kubernetes quantity such as ``2Gi``) in bytes, or a ValueError that says how to write it."""
    from kubernetes.utils import parse_quantity

    try:
        size = int(parse_quantity(str(value).strip()))
    except ValueError:
        raise ValueError(f"{setting} {value!r} is not a size: write it as a pod's limits are written, "
                         "e.g. 2Gi or 512Mi") from None
    if size <= 0:
        raise ValueError(f"{setting} {value!r} must be above zero")
    return size


def _size(size: int) -> str:
    for unit, scale in (("Gi", 1 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale}{unit}"
    return f"{size} bytes"
