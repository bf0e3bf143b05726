"""NodeResourcesBalancedAllocation (pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go).

Favours nodes whose cpu and memory would be used in equal fractions:
``(1 - std) * 100`` with ``std = |f_cpu - f_memory| / 2`` on the real requests
(fractions capped at 1), truncated to an integer. PreScore skips best-effort
pods (no cpu and no memory requests, kubernetes/kubernetes#129138). Weight 1.
"""
from __future__ import annotations

from ..interface import RESOURCES, PreScorePlugin, ScorePlugin
from ..resources import Resources
from ..status import SKIP_STATUS, Status

NAME = "NodeResourcesBalancedAllocation"


class BalancedAllocation(PreScorePlugin, ScorePlugin):
    NAME = NAME
    score_scope = RESOURCES

    def pre_score(self, state, pod, feasible) -> Status | None:
        return SKIP_STATUS if pod.real_cpu_memory == (0, 0) else None

    def score(self, state, pod, node) -> int:
        return balanced(pod.real_cpu_memory, node.alloc, node.requested)


def balanced(pod_cpu_memory: tuple[int, int], alloc: Resources, requested: Resources) -> int:
    fractions = []
    for capacity, used, want in zip((alloc.cpu, alloc.memory), (requested.cpu, requested.memory), pod_cpu_memory):
        if capacity == 0:
            continue
        fractions.append(min((used + want) / capacity, 1.0))
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    return int((1 - std) * 100)
