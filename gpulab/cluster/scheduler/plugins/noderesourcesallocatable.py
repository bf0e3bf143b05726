"""NodeResourcesAllocatable (kubernetes-sigs/scheduler-plugins pkg/noderesources/allocatable.go), enabled by
the scheduler-plugins Helm chart's second scheduler.

Score, mode Least (the default): minus the weighted allocatable of the node
(cpu weight 1<<20 per millicore, memory weight 1 per byte), divided by the
weight sum, so smaller nodes are preferred; normalised linearly onto 0..100
between the lowest and highest score.
"""
from __future__ import annotations

from ..resources import Resources

NAME = "NodeResourcesAllocatable"
WEIGHT = 1
_WEIGHTS = {"cpu": 1 << 20, "memory": 1}


def score_node(alloc: Resources) -> int:
    total = alloc.cpu * _WEIGHTS["cpu"] + alloc.memory * _WEIGHTS["memory"]
    return -(total // sum(_WEIGHTS.values()))  # Go's int64 division truncates toward zero


def normalize(scores: list[int]) -> list[int]:
    if not scores:
        return []
    highest, lowest = max(scores), min(scores)
    old_range = highest - lowest
    if old_range == 0:
        return [0] * len(scores)
    return [(s - lowest) * 100 // old_range for s in scores]
