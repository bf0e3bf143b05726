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

A fault on a GPU it holds (the node's ``gpulab.dev/gpu-faults``, :mod:`.faults`) kills it the same way, with
the CUDA error the fault raises: a GPU off the bus fails every program on it, at once or at start; a
double-bit ECC error or a page fault kills the programs running when it struck (a restarted one runs on).

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
from . import faults
from .hardware import gpu_uuid, mig_uuid

# The training programs of data/workloads.yaml that are programs of their own (train.py is run by python).
PROGRAMS = ("python", "python3", "torchrun", "accelerate", "deepspeed")
OUT_OF_MEMORY = "RuntimeError: CUDA error: out of memory\n"
FAULT_POLL_SECONDS = 1.0    # how soon a running program notices a fault recorded on its node


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
    indices = gpu_indices(process)
    if not indices:
        yield ("sleep", math.inf)
        return 0
    started = process.now()
    while True:
        recorded = faults.read({faults.FAULTS_ANNOTATION: process.node_annotation(faults.FAULTS_ANNOTATION) or ""})
        xid = next((x for x in (faults.process_error(recorded, i, started) for i in indices) if x), None)
        if xid is not None:
            yield ("stderr", faults.cuda_error_text(xid))
            return 1
        yield ("sleep", FAULT_POLL_SECONDS)


def gpu_indices(process: ContainerProcess) -> list[int]:
    """The node's GPUs behind the container's ``NVIDIA_VISIBLE_DEVICES`` (GPU or MIG UUIDs), by index."""
    from ..contract import GPU_COUNT_ANNOTATION, GPU_MODEL_ANNOTATION
    from .nodestate import MIG_LAYOUT_ANNOTATION, node_gpus, read_layout

    wanted = {i for i in (process.getenv("NVIDIA_VISIBLE_DEVICES") or "").split(",") if i}
    node_name = process.node_label("kubernetes.io/hostname") or ""
    if not wanted or not node_name:
        return []
    notes = {k: process.node_annotation(k) or "" for k in (GPU_MODEL_ANNOTATION, GPU_COUNT_ANNOTATION,
                                                             MIG_LAYOUT_ANNOTATION)}
    node = {"metadata": {"annotations": {k: v for k, v in notes.items() if v}}}
    hardware = node_gpus(node)
    if hardware is None:
        return []
    out = []
    for index, state in enumerate(read_layout(node, hardware)):
        uuid = gpu_uuid(node_name, index)
        migs = {mig_uuid(uuid, d.gpu_instance_id, d.compute_instance_id) for d in state.devices}
        if uuid in wanted or wanted & migs:
            out.append(index)
    return out
