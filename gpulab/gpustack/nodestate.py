"""What one node's GPUs are and how they are split, read from (and written to) the Node object.

A real node's hardware is found by NFD and NVML; the emulation's nodes carry it
as the ``gpulab.dev/gpu-model`` / ``gpulab.dev/gpu-count`` annotations of
:mod:`gpulab.contract` (the embedded cluster's topology writes them, ``gpulab
kind up`` puts them on kind nodes). MIG
geometry lives in the GPU itself on real hardware and survives a restart of
every pod; here it is the ``gpulab.dev/mig-layout`` annotation, written only by
the emulated ``nvidia-mig-parted apply``, so that it too survives restarts of
the reconciler and of the cluster.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from ..contract import GPU_COUNT_ANNOTATION, GPU_MODEL_ANNOTATION
from .hardware import GpuModel, gpu_model
from .mig import GpuState, Layout, MigDevice, gpu_instance_id, whole_gpus

MIG_LAYOUT_ANNOTATION = "gpulab.dev/mig-layout"


@dataclass(frozen=True)
class NodeGpus:
    model: GpuModel
    count: int


def annotations(node: dict) -> dict[str, str]:
    return (node.get("metadata") or {}).get("annotations") or {}


def node_gpus(node: dict) -> NodeGpus | None:
    """The node's GPUs, or None for a node without (or with unreadable) GPU annotations."""
    notes = annotations(node)
    name = notes.get(GPU_MODEL_ANNOTATION)
    if not name:
        return None
    try:
        count = int(notes.get(GPU_COUNT_ANNOTATION, "0"))
        model = gpu_model(name)
    except (KeyError, ValueError):
        return None
    return NodeGpus(model, count) if count > 0 else None


def read_layout(node: dict, gpus: NodeGpus) -> Layout:
    """The node's current MIG geometry (MIG disabled everywhere when never configured)."""
    raw = annotations(node).get(MIG_LAYOUT_ANNOTATION)
    if not raw:
        return whole_gpus(gpus.count)
    try:
        doc = json.loads(raw)
        states = []
        for entry in doc:
            if entry is None:
                states.append(GpuState(False))
                continue
            devices = []
            for name, start in entry:
                profile = gpus.model.mig_profile(name)
                devices.append(MigDevice(profile, gpu_instance_id(profile, start), start))
            states.append(GpuState(True, tuple(devices)))
    except (ValueError, TypeError, KeyError):
        return whole_gpus(gpus.count)
    if len(states) != gpus.count:
        return whole_gpus(gpus.count)
    return tuple(states)


def encode_layout(layout: Layout) -> str | None:
    """The annotation value for ``layout``; None (no annotation) when MIG is off on every GPU."""
    if not any(gpu.mig_enabled for gpu in layout):
        return None
    return json.dumps([[[d.profile.name, d.start] for d in gpu.devices] if gpu.mig_enabled else None
                       for gpu in layout], separators=(",", ":"))
