"""NodeUnschedulable (pkg/scheduler/framework/plugins/nodeunschedulable): cordoned nodes
(``spec.unschedulable``) admit only pods tolerating ``node.kubernetes.io/unschedulable:NoSchedule``."""
from __future__ import annotations

from ..events import ADD, NODE, UPDATE, UPDATE_NODE_TAINT, ClusterEvent, ClusterEventWithHint
from ..interface import TAINTS, EnqueueExtensions, FilterPlugin
from ..status import Status, unresolvable
from ..tolerations import tolerated

NAME = "NodeUnschedulable"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
_REJECTION = unresolvable(ERR_REASON_UNSCHEDULABLE, plugin=NAME)


class NodeUnschedulable(FilterPlugin, EnqueueExtensions):
    NAME = NAME
    filter_scope = TAINTS

    def filter(self, state, pod, node) -> Status | None:
        if not node.unschedulable or tolerated(pod.tolerations, _TAINT):
            return None
        return _REJECTION

    def events_to_register(self) -> list:
        return [ClusterEventWithHint(NODE, frozenset({ADD, UPDATE_NODE_TAINT}), requeue)]


def requeue(pod, event: ClusterEvent) -> bool:
    """isSchedulableAfterNodeChange: a node became schedulable (added schedulable, or uncordoned)."""
    now_ok = not (event.new.get("spec") or {}).get("unschedulable")
    was_ok = event.action == UPDATE and not (event.old.get("spec") or {}).get("unschedulable")
    return now_ok and not was_ok
