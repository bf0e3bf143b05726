"""Conversion between the versions a resource is served in and the one it is stored in.

Events are stored as core/v1 and also served as events.k8s.io/v1 (field
mapping from pkg/apis/events/v1/conversion.go); custom resources with several
versions and ``conversion.strategy: None`` change only ``apiVersion``; a
built-in kind served in several versions (autoscaling/v1 and v2
HorizontalPodAutoscalers) converts as its strategy says.
"""
from __future__ import annotations

from .kinds import strategy_for
from .registry import ResourceType

_EVENTS_V1_FIELDS = {
    # events.k8s.io/v1 field -> core/v1 field
    "regarding": "involvedObject",
    "related": "related",
    "note": "message",
    "reason": "reason",
    "type": "type",
    "action": "action",
    "eventTime": "eventTime",
    "reportingController": "reportingComponent",
    "reportingInstance": "reportingInstance",
    "series": "series",
}


def to_storage(rt: ResourceType, obj: dict, storage_rt: ResourceType) -> dict:
    """An object as sent to ``rt`` -> the stored form (``storage_rt``)."""
    if rt.group == "events.k8s.io":
        core = {k: v for k, v in obj.items() if k not in _EVENTS_V1_FIELDS}
        for new, old in _EVENTS_V1_FIELDS.items():
            if new in obj:
                core[old] = obj[new]
        if "deprecatedSource" in obj:
            core["source"] = core.pop("deprecatedSource")
        for dep, old in (("deprecatedFirstTimestamp", "firstTimestamp"), ("deprecatedLastTimestamp", "lastTimestamp"),
                         ("deprecatedCount", "count")):
            if dep in core:
                core[old] = core.pop(dep)
        core["apiVersion"], core["kind"] = "v1", "Event"
        return core
    if rt.crd is None and rt.api_version != storage_rt.api_version:
        return strategy_for(storage_rt).to_storage_version(obj, rt, storage_rt)
    if rt.api_version != storage_rt.api_version:
        return {**obj, "apiVersion": storage_rt.api_version}
    return obj


def from_storage(rt: ResourceType, obj: dict) -> dict:
    """A stored object -> the form served by ``rt``."""
    if rt.group == "events.k8s.io":
        out = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": obj.get("metadata", {})}
        for new, old in _EVENTS_V1_FIELDS.items():
            if obj.get(old) not in (None, ""):
                out[new] = obj[old]
        if "reportingController" not in out and (obj.get("source") or {}).get("component"):
            out["reportingController"] = obj["source"]["component"]
        if obj.get("source"):
            out["deprecatedSource"] = obj["source"]
        for dep, old in (("deprecatedFirstTimestamp", "firstTimestamp"), ("deprecatedLastTimestamp", "lastTimestamp"),
                         ("deprecatedCount", "count")):
            if obj.get(old) is not None:
                out[dep] = obj[old]
        return out
    if rt.crd is None and obj.get("apiVersion") != rt.api_version:
        return strategy_for(rt).from_storage_version(obj, rt)
    if obj.get("apiVersion") != rt.api_version:
        return {**obj, "apiVersion": rt.api_version}
    return obj
