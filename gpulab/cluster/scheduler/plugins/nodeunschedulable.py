"""NodeUnschedulable (pkg/scheduler/framework/plugins/nodeunschedulable): cordoned nodes
(``spec.unschedulable``) admit only pods tolerating ``node.kubernetes.io/unschedulable:NoSchedule``."""
from __future__ import annotations

from ..status import Status, unresolvable
from ..tolerations import tolerated
from .events import ADD, NODE, UPDATE, ClusterEvent

NAME = "NodeUnschedulable"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def filter_class(tolerations: list[dict], unschedulable: bool) -> Status | None:
    if not unschedulable or tolerated(tolerations, _TAINT):
        return None
    return unresolvable(ERR_REASON_UNSCHEDULABLE, plugin=NAME)


def requeue(pod, event: ClusterEvent) -> bool:
    """isSchedulableAfterNodeChange: a node became schedulable (added schedulable, or uncordoned)."""
    if event.resource != NODE or event.action not in (ADD, UPDATE):
        return False
    if event.action == UPDATE and "taint" not in event.changes:
        return False
    now_ok = not (event.new.get("spec") or {}).get("unschedulable")
    was_ok = event.old is not None and not (event.old.get("spec") or {}).get("unschedulable")
    return now_ok and not was_ok
