"""TaintToleration (pkg/scheduler/framework/plugins/tainttoleration).

Filter: a NoSchedule or NoExecute taint the pod does not tolerate rejects the
node with ``node(s) had untolerated taint(s)`` (the v1.35+ text; earlier
releases named the taint). Score: the number of PreferNoSchedule taints not
tolerated by the pod's PreferNoSchedule (or effect-less) tolerations,
normalised in reverse (``helper.DefaultNormalizeScore(MaxNodeScore, true, ...)``).
Weight 3 in the default profile.
"""
from __future__ import annotations

from ..events import ADD, NODE, UPDATE_NODE_TAINT, ClusterEvent, ClusterEventWithHint
from ..interface import TAINTS, EnqueueExtensions, FilterPlugin, PreScorePlugin, ScorePlugin
from ..status import Status, unresolvable
from ..tolerations import DO_NOT_SCHEDULE_EFFECTS, first_untolerated, tolerated
from .helper import default_normalize_score

NAME = "TaintToleration"
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"
_REJECTION = unresolvable(ERR_REASON_UNTOLERATED, plugin=NAME)


class TaintToleration(FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions):
    NAME = NAME
    filter_scope = score_scope = TAINTS

    def filter(self, state, pod, node) -> Status | None:
        return _REJECTION if untolerated(pod.tolerations, node.taints) else None

    def pre_score(self, state, pod, feasible) -> Status | None:
        state.write(NAME, prefer_no_schedule_tolerations(pod.tolerations))
        return None

    def score(self, state, pod, node) -> int:
        return intolerable_prefer_no_schedule(state.read(NAME), node.taints)

    def normalize_score(self, state, pod, scores: list[int]) -> list[int]:
        return default_normalize_score(scores, reverse=True)

    def events_to_register(self) -> list:
        return [ClusterEventWithHint(NODE, frozenset({ADD, UPDATE_NODE_TAINT}), requeue)]


def untolerated(tolerations: list[dict], taints: list[dict]) -> bool:
    return first_untolerated(taints, tolerations, DO_NOT_SCHEDULE_EFFECTS) is not None


def prefer_no_schedule_tolerations(tolerations: list[dict]) -> list[dict]:
    """getAllTolerationPreferNoSchedule: tolerations with effect PreferNoSchedule or no effect."""
    return [t for t in tolerations if (t.get("effect") or "") in ("", "PreferNoSchedule")]


def intolerable_prefer_no_schedule(prefer_tolerations: list[dict], taints: list[dict]) -> int:
    """countIntolerableTaintsPreferNoSchedule."""
    return sum(1 for t in taints if t.get("effect") == "PreferNoSchedule" and not tolerated(prefer_tolerations, t))


def requeue(pod, event: ClusterEvent) -> bool:
    """isSchedulableAfterNodeChange: the node's NoSchedule/NoExecute taints were untolerated and now are not."""
    was = event.old is None or untolerated(pod.tolerations, (event.old.get("spec") or {}).get("taints") or [])
    return was and not untolerated(pod.tolerations, (event.new.get("spec") or {}).get("taints") or [])
