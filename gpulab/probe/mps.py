"""Is an MPS control daemon serving this GPU, so that the probe's processes run as MPS clients?

NVIDIA's MPS documentation: clients, server and control daemon talk through the
pipe directory, ``CUDA_MPS_PIPE_DIRECTORY`` (default ``/tmp/nvidia-mps``), where
the control daemon opens its ``control`` endpoint (a named pipe in older drivers,
a UNIX socket in CUDA 13's: "Starting control daemon using socket
<dir>/control"). When CUDA initialises in a process it tries to connect there;
when that fails the process runs without MPS. The device plugin's MPS strategy
sets ``CUDA_MPS_PIPE_DIRECTORY=/mps/<resource>/pipe`` in a client container and
mounts the daemon's pipe directory there (k8s-device-plugin
``internal/plugin/mps.go``), so the same test finds it in a pod.

Detection only looks at the file system: it does not connect, so it leaves no
"User did not send valid credentials" line in the daemon's log, and a
``control`` endpoint left behind by a daemon killed without ``quit`` reads as a
running one (the first CUDA call then fails, and the probe reports it).
``choose`` turns ``--sharing`` into a ``Sharing``; for ``time-slicing`` beside a
running daemon it points the workers at a pipe directory where none listens.
"""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from typing import Mapping

DEFAULT_PIPE_DIRECTORY = "/tmp/nvidia-mps"
PIPE_ENV = "CUDA_MPS_PIPE_DIRECTORY"
THREAD_ENV = "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"
CONTROL = "control"
EXCLUSIVE_PROCESS = 3     # nvmlComputeMode_t NVML_COMPUTEMODE_EXCLUSIVE_PROCESS, which the device plugin's daemon sets


@dataclass(frozen=True)
class Daemon:
    """A running MPS control daemon as a client sees it."""
    pipe_directory: str
    active_thread_percentage: float | None    # the client's own limit, else the daemon's default; None if unknown

    def describe(self) -> dict:
        return {"mode": "mps", "pipe_directory": self.pipe_directory,
                "active_thread_percentage": self.active_thread_percentage}


def pipe_directory(environ: Mapping[str, str]) -> str:
    return environ.get(PIPE_ENV) or DEFAULT_PIPE_DIRECTORY


def absent_reason(environ: Mapping[str, str]) -> str:
    """Where the probe looked for a daemon, in words, for a message saying none was found."""
    directory = pipe_directory(environ)
    origin = f"{PIPE_ENV}={directory}" if environ.get(PIPE_ENV) else f"the default, {PIPE_ENV} is not set"
    return f"no MPS control daemon at {os.path.join(directory, CONTROL)} ({origin})"


def detect(environ: Mapping[str, str] = os.environ) -> Daemon | None:
    """The daemon whose ``control`` pipe or socket is in this process's pipe directory, or None."""
    directory = pipe_directory(environ)
    try:
        mode = os.stat(os.path.join(directory, CONTROL)).st_mode
    except OSError:
        return None
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return None
    return Daemon(pipe_directory=directory, active_thread_percentage=_thread_percentage(environ, directory))


def _thread_percentage(environ: Mapping[str, str], directory: str) -> float | None:
    """The client's ``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE``, else the daemon's
    ``get_default_active_thread_percentage`` when ``nvidia-cuda-mps-control`` is here to ask."""
    own = _number(environ.get(THREAD_ENV))
    if own is not None:
        return own
    control = shutil.which("nvidia-cuda-mps-control", path=environ.get("PATH"))
    if not control:
        return None
    try:
        out = subprocess.run([control], input="get_default_active_thread_percentage\n", capture_output=True,
                             text=True, timeout=10, env={**environ, PIPE_ENV: directory}).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return _number(out.strip().splitlines()[-1] if out.strip() else None)


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None


class SharingError(RuntimeError):
    """The requested sharing mode cannot be measured here; the message says why and what to do."""


@dataclass(frozen=True)
class Sharing:
    """How the probe's processes will share the GPU, and the environment its workers need for it."""
    mode: str                                  # "mps" or "time-slicing"
    daemon: Daemon | None
    worker_env: tuple[tuple[str, str], ...] = ()

    def describe(self) -> dict:
        return self.daemon.describe() if self.mode == "mps" else {"mode": "time-slicing"}

    def line(self) -> str:
        if self.mode == "time-slicing":
            hidden = (f", hidden from its processes: a daemon runs at {self.daemon.pipe_directory}"
                      if self.daemon else "")
            return f"sharing: time-slicing (each process holds its own CUDA context{hidden})"
        limit = self.daemon.active_thread_percentage
        threads = f"active thread percentage {limit:g}" if limit is not None else "active thread percentage unknown"
        return (f"sharing: MPS (control daemon at {self.daemon.pipe_directory}; server and neighbours run as its "
                f"clients; {threads})")


SHARING_CHOICES = ("auto", "mps", "time-slicing")


def choose(requested: str, environ: Mapping[str, str], compute_mode: int | None, scratch: str) -> Sharing:
    """The sharing to measure: ``auto`` is MPS where a daemon runs, else time-slicing. ``scratch`` is an empty
    directory to point the workers at when they must not join a running daemon (``time-slicing``)."""
    daemon = detect(environ)
    if requested == "auto":
        requested = "mps" if daemon else "time-slicing"
    if requested == "mps":
        if daemon is None:
            raise SharingError(f"--sharing mps needs a running MPS control daemon, and there is "
                               f"{absent_reason(environ)}. Start one (nvidia-cuda-mps-control -d), set {PIPE_ENV} "
                               "to its pipe directory, or run the probe in a pod given a GPU by the device plugin's "
                               "MPS strategy")
        return Sharing("mps", daemon)
    if daemon is not None and compute_mode == EXCLUSIVE_PROCESS:
        raise SharingError("--sharing time-slicing cannot run here: the GPU is in Exclusive_Process compute mode "
                           "(as the device plugin's MPS daemon sets it), so only MPS clients can share it; measure "
                           "MPS instead (--sharing mps, or auto)")
    return Sharing("time-slicing", daemon, ((PIPE_ENV, scratch),) if daemon else ())

