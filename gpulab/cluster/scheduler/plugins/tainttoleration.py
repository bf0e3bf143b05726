"""TaintToleration (pkg/scheduler/framework/plugins/tainttoleration).

Filter: a NoSchedule or NoExecute taint the pod does not tolerate rejects the
node with ``node(s) had untolerated taint(s)`` (the v1.35+ text; earlier
releases named the taint). Score: the number of PreferNoSchedule taints not
tolerated by the pod's PreferNoSchedule (or effect-less) tolerations,
normalised in reverse (``helper.DefaultNormalizeScore(MaxNodeScore, true, ...)``).
Weight 3 in the default profile.
"""
from __future__ import annotations

from ..status import Status, unresolvable
from ..tolerations import DO_NOT_SCHEDULE_EFFECTS, first_untolerated, tolerated
from .events import ADD, NODE, UPDATE, ClusterEvent

NAME = "TaintToleration"
WEIGHT = 3
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"


def filter_class(tolerations: list[dict], taints: list[dict]) -> Status | None:
    if first_untolerated(taints, tolerations, DO_NOT_SCHEDULE_EFFECTS) is None:
        return None
    return unresolvable(ERR_REASON_UNTOLERATED, plugin=NAME)


def prefer_no_schedule_tolerations(tolerations: list[dict]) -> list[dict]:
    """getAllTolerationPreferNoSchedule: tolerations with effect PreferNoSchedule or no effect."""
    return [t for t in tolerations if (t.get("effect") or "") in ("", "PreferNoSchedule")]


def score_class(prefer_tolerations: list[dict], taints: list[dict]) -> int:
    """countIntolerableTaintsPreferNoSchedule."""
    return sum(1 for t in taints if t.get("effect") == "PreferNoSchedule" and not tolerated(prefer_tolerations, t))


def requeue(pod, event: ClusterEvent) -> bool:
    """isSchedulableAfterNodeChange: the node's NoSchedule/NoExecute taints were untolerated and now are not."""
    if event.resource != NODE or event.action not in (ADD, UPDATE):
        return False
    if event.action == UPDATE and "taint" not in event.changes:
        return False
    tolerations = pod.tolerations
    was = event.old is None or first_untolerated((event.old.get("spec") or {}).get("taints") or [], tolerations,
                                                 DO_NOT_SCHEDULE_EFFECTS) is not None
    now = first_untolerated((event.new.get("spec") or {}).get("taints") or [], tolerations,
                            DO_NOT_SCHEDULE_EFFECTS) is not None
    return was and not now
