"""dcgm-exporter as its container logs its start, before it serves ``/metrics`` on its port.

NVIDIA/dcgm-exporter 4.5.3-4.8.2 (``docker/dcgm-exporter-entrypoint.sh`` execs ``dcgm-exporter``; ``pkg/cmd/app.go``
``StartDCGMExporterWithSignalSource``) logs through Go's ``log/slog`` text handler on stderr (``time=...
level=INFO msg="..."``): its start and version, DCGM's initialisation (``internal/pkg/dcgmprovider/dcgm.go``: the
embedded host engine, or the remote one ``DCGM_REMOTE_HOSTENGINE_INFO`` names), NVML's for Kubernetes mode
(``DCGM_EXPORTER_KUBERNETES``), ``DCGM successfully initialized!``, the registry it builds, then the metrics
server's ``Starting webserver`` (``internal/pkg/server/server.go``) and ``HTTP server started - ready to serve
metrics``. Left out: the lines whose figures only DCGM knows (the profiling metric groups it found, the number of
collectors the registry holds), and the debug lines. The version is that release's whatever the image's tag.
The metrics themselves come from the content provider of the image's port (:mod:`.observe`). A native program of
the node agent (:data:`gpulab.contract.NativeProgram`).
"""
from __future__ import annotations

import math
from typing import Generator

from ..contract import ContainerProcess
from .golog import slog_line

VERSION = "4.5.3-4.8.2"
_TRUE = ("1", "t", "T", "TRUE", "true", "True")


def main(process: ContainerProcess) -> Generator[tuple[str, object], None, int]:
    now = process.now()
    yield slog_line(now, "Starting dcgm-exporter", Version=VERSION)
    remote = process.getenv("DCGM_REMOTE_HOSTENGINE_INFO") or ""
    if remote:
        yield slog_line(now, "Attempting to connect to remote hostengine at " + remote)
    else:
        yield slog_line(now, "Attempting to initialize DCGM.")
    yield slog_line(now, "Initialized DCGM Fields module.")
    if (process.getenv("DCGM_EXPORTER_KUBERNETES") or "") in _TRUE:
        yield slog_line(now, "NVML provider successfully initialized for Kubernetes MIG support")
    else:
        yield slog_line(now, "NVML provider skipped (not running in Kubernetes mode)")
    yield slog_line(now, "DCGM successfully initialized!")
    yield slog_line(now, "Building registry for current GPU topology")
    yield slog_line(now, "Starting webserver")
    yield slog_line(now, "HTTP server started - ready to serve metrics")
    yield ("sleep", math.inf)
    return 0
