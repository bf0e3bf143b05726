"""Cluster events that may make an unschedulable pod schedulable (framework.ClusterEvent, ActionType).

pkg/scheduler/framework/events.go splits an update into the aspects that
changed (``UpdateNodeAllocatable``, ``UpdateNodeLabel``, ``UpdateNodeTaint``,
the last one also covering ``spec.unschedulable``; ``UpdatePodLabel``,
``UpdatePodScaleDown``). A plugin registers the events it cares about
(``EventsToRegister``) with a queueing hint that looks at the old and new
objects; an update event matches a registration for ``Update`` or for one of
the aspects it changed.

Besides ``Node`` and ``Pod``, a registration may name any API resource by its
storage key (``podgroups.scheduling.x-k8s.io``): the profile then watches it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

NODE, POD = "Node", "Pod"
ADD, UPDATE, DELETE = "Add", "Update", "Delete"
UPDATE_NODE_ALLOCATABLE, UPDATE_NODE_LABEL, UPDATE_NODE_TAINT = "UpdateNodeAllocatable", "UpdateNodeLabel", \
    "UpdateNodeTaint"
UPDATE_POD_LABEL, UPDATE_POD_SCALE_DOWN = "UpdatePodLabel", "UpdatePodScaleDown"
ALL = frozenset({ADD, UPDATE, DELETE})


@dataclass(frozen=True)
class ClusterEvent:
    resource: str
    action: str
    old: dict | None = None
    new: dict | None = None
    changes: frozenset[str] = field(default_factory=frozenset)  # for updates: the Update* aspects that changed


@dataclass(frozen=True)
class ClusterEventWithHint:
    """One registration of EventsToRegister; ``hint(pod, event)`` (None: always) says whether to requeue."""

    resource: str
    actions: frozenset[str]
    hint: Callable[[object, ClusterEvent], bool] | None = None

    def matches(self, event: ClusterEvent) -> bool:
        if event.resource != self.resource:
            return False
        return event.action in self.actions or (event.action == UPDATE and not event.changes.isdisjoint(self.actions))


def node_update_changes(old: dict, new: dict) -> frozenset[str]:
    out = set()
    if (old.get("status") or {}).get("allocatable") != (new.get("status") or {}).get("allocatable"):
        out.add(UPDATE_NODE_ALLOCATABLE)
    if (old["metadata"].get("labels") or {}) != (new["metadata"].get("labels") or {}):
        out.add(UPDATE_NODE_LABEL)
    ospec, nspec = old.get("spec") or {}, new.get("spec") or {}
    if (ospec.get("taints") or []) != (nspec.get("taints") or []) or \
            bool(ospec.get("unschedulable")) != bool(nspec.get("unschedulable")):
        out.add(UPDATE_NODE_TAINT)
    return frozenset(out)


def pod_update_changes(old: dict, new: dict) -> frozenset[str]:
    """The aspects of an assigned pod's update that plugins listen for (a label change, an in-place resize)."""
    out = set()
    if (old["metadata"].get("labels") or {}) != (new["metadata"].get("labels") or {}):
        out.add(UPDATE_POD_LABEL)
    ospec, nspec = old.get("spec") or {}, new.get("spec") or {}
    if any(ospec.get(k) != nspec.get(k) for k in ("containers", "initContainers", "resources", "overhead")):
        out.add(UPDATE_POD_SCALE_DOWN)
    return frozenset(out)
