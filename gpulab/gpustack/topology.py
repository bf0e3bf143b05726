"""The GPU stack's part of a topology: the ``gpu`` node field and the course's default topology.

A node's GPUs are the hardware annotations of :mod:`gpulab.contract` and nothing else (the cluster
registers them as it would any annotation; the stack reads them, :mod:`.nodestate`). In a topology file
``gpu: {model: NVIDIA H100 80GB HBM3, count: 8}`` stands for them; ``gpulab/embedded.py`` hands this field
and ``data/default-topology.yaml`` to the cluster's topology reader, and ``gpulab kind up`` builds its kind
config from the same file. Plain data in, plain data out: nothing here imports the cluster.
"""
from __future__ import annotations

from pathlib import Path

from ..contract import GPU_COUNT_ANNOTATION, GPU_MODEL_ANNOTATION

DEFAULT_TOPOLOGY = Path(__file__).parent / "data" / "default-topology.yaml"
GPU_FIELD = "gpu"


def hardware(value: object) -> tuple[str, int]:
    """A ``gpu`` field's (model, count); ValueError when it lacks either."""
    count = value.get("count", 0) if isinstance(value, dict) else 0
    if not isinstance(value, dict) or not value.get("model") or not str(count).isdigit() or int(count) < 1:
        raise ValueError("gpu needs a model and a count of at least 1")
    return str(value["model"]), int(count)


def gpu_annotations(value: object) -> dict[str, str]:
    """The annotations a ``gpu`` field stands for."""
    model, count = hardware(value)
    return {GPU_MODEL_ANNOTATION: model, GPU_COUNT_ANNOTATION: str(count)}


NODE_FIELDS = {GPU_FIELD: gpu_annotations}
