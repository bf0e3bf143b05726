"""Cluster events that may make an unschedulable pod schedulable (framework.ClusterEvent).

pkg/scheduler/framework/events.go splits a node update into the aspects that
changed (``UpdateNodeAllocatable``, ``UpdateNodeLabel``, ``UpdateNodeTaint``,
the last one also covering ``spec.unschedulable``); plugins' queueing hints
look at the old and new objects.
"""
from __future__ import annotations

from dataclasses import dataclass, field

NODE, POD, POD_GROUP = "Node", "Pod", "PodGroup"
ADD, UPDATE, DELETE = "Add", "Update", "Delete"


@dataclass(frozen=True)
class ClusterEvent:
    resource: str
    action: str
    old: dict | None = None
    new: dict | None = None
    changes: frozenset[str] = field(default_factory=frozenset)  # for node updates: allocatable, label, taint


def node_update_changes(old: dict, new: dict) -> frozenset[str]:
    out = set()
    if (old.get("status") or {}).get("allocatable") != (new.get("status") or {}).get("allocatable"):
        out.add("allocatable")
    if (old["metadata"].get("labels") or {}) != (new["metadata"].get("labels") or {}):
        out.add("label")
    ospec, nspec = old.get("spec") or {}, new.get("spec") or {}
    if (ospec.get("taints") or []) != (nspec.get("taints") or []) or \
            bool(ospec.get("unschedulable")) != bool(nspec.get("unschedulable")):
        out.add("taint")
    return frozenset(out)
