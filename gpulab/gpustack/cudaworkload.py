"""A training program (``python``, ``torchrun``, ...) as it runs in a container on the embedded cluster's nodes.

No program really computes on an emulated GPU: the workload model (:mod:`.usage`, ``data/workloads.yaml``)
says a training program is busy and holds ``memoryFraction`` of its device's memory. Elsewhere that is all it
does, silently, until it is stopped (a stop signal ends it with 143, as an unknown program's). As an MPS
client (its environment has ``CUDA_MPS_PIPE_DIRECTORY``, which the device plugin sets for MPS replicas:
``internal/plugin/mps.go``) its CUDA allocations are capped by the control daemon's
``set_default_device_pinned_mem_limit`` (memory / replicas, :func:`.mpsdaemon.device_limits`). When the
memory the model gives it is more than that, the allocation fails as CUDA's does (``cudaErrorMemoryAllocation``,
"out of memory"), in the words PyTorch wraps a CUDA error in, and the program exits 1: the container ends in
``Error`` and, under ``restartPolicy: Always``, crash-loops.

Asked only for its version (``python -V``, ``python --version``), the interpreter prints ``Python`` and the
release its image declares in ``PYTHON_VERSION`` (set from the image's tag, docs/images.md) and exits 0, as
CPython does; an image that declares none (the NGC images) leaves the program a training program.

The GPU's memory and the replicas come from the node's GFD labels (``nvidia.com/gpu.memory``,
``nvidia.com/gpu.replicas``), the same config the control daemon reads. A native program of the node agent
(:data:`gpulab.contract.NativeProgram`), named by the behaviours of ``data/images.yaml`` listed in
:data:`PROGRAMS`.
"""
from __future__ import annotations

import math
from typing import Generator

from ..contract import ContainerProcess

# The training programs of data/workloads.yaml that are programs of their own (train.py is run by python).
PROGRAMS = ("python", "python3", "torchrun", "accelerate", "deepspeed")
OUT_OF_MEMORY = "RuntimeError: CUDA error: out of memory\n"


def mps_memory(process: ContainerProcess) -> tuple[int, int] | None:
    """(MiB the workload model gives the program, MiB its MPS share allows), or None outside an MPS client."""
    from .mpsdaemon import device_limits
    from .usage import workload_model

    if not process.getenv("CUDA_MPS_PIPE_DIRECTORY"):
        return None
    memory = process.node_label("nvidia.com/gpu.memory") or ""
    replicas = process.node_label("nvidia.com/gpu.replicas") or ""
    if not (memory.isdigit() and replicas.isdigit() and int(replicas) > 0):
        return None
    limit = device_limits("", {0: int(memory)}, int(replicas)).memory_limits[0]
    return int(int(memory) * workload_model().memory_fraction), int(limit.rstrip("M"))


def _version_query(process: ContainerProcess) -> str | None:
    """CPython's answer to ``-V``/``--version`` in an image that declares its release, else None."""
    interpreter = process.argv[0].rsplit("/", 1)[-1] in ("python", "python3")
    release = process.getenv("PYTHON_VERSION")
    if interpreter and release and process.argv[1:2] in (["-V"], ["--version"]):
        return f"Python {release}\n"
    return None


def main(process: ContainerProcess) -> Generator[tuple[str, object], None, int]:
    version = _version_query(process)
    if version is not None:
        yield ("stdout", version)
        return 0
    needs = mps_memory(process)
    if needs is not None and needs[0] > needs[1]:
        yield ("stderr", OUT_OF_MEMORY)
        return 1
    yield ("sleep", math.inf)
    return 0
