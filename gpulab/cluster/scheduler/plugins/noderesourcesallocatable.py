"""NodeResourcesAllocatable (kubernetes-sigs/scheduler-plugins pkg/noderesources/allocatable.go), enabled by
the scheduler-plugins Helm chart's second scheduler.

Score, mode Least (the default): minus the weighted allocatable of the node
(cpu weight 1<<20 per millicore, memory weight 1 per byte), divided by the
weight sum, so smaller nodes are preferred; normalised linearly onto 0..100
between the lowest and highest score.
"""
from __future__ import annotations

from ..interface import RESOURCES, ScorePlugin
from ..resources import Resources
from .helper import go_div

NAME = "NodeResourcesAllocatable"
_WEIGHTS = {"cpu": 1 << 20, "memory": 1}


class NodeResourcesAllocatable(ScorePlugin):
    NAME = NAME
    score_scope = RESOURCES

    def score(self, state, pod, node) -> int:
        return score_node(node.alloc)

    def normalize_score(self, state, pod, scores: list[int]) -> list[int]:
        return normalize(scores)


def score_node(alloc: Resources) -> int:
    total = alloc.cpu * _WEIGHTS["cpu"] + alloc.memory * _WEIGHTS["memory"]
    return -go_div(total, sum(_WEIGHTS.values()))


def normalize(scores: list[int]) -> list[int]:
    if not scores:
        return []
    highest, lowest = max(scores), min(scores)
    old_range = highest - lowest
    if old_range == 0:
        return [0] * len(scores)
    return [(s - lowest) * 100 // old_range for s in scores]
