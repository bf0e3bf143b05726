"""Printers of resource.k8s.io kinds: ports of printDeviceClass, printResourceClaim (with
resourceClaimState), printResourceClaimTemplate, printResourceSlice and printDeviceTaint in
kubernetes/pkg/printers/internalversion/printers.go."""
from __future__ import annotations

from .cells import age, name, since
from .columns import age_column, column, doc, name_column

RESOURCE = "io.k8s.api.resource.v1."


def plain_columns() -> list[dict]:
    """DeviceClass and ResourceClaimTemplate: Name and Age."""
    return [name_column(), age_column()]


def plain_cells(obj: dict, now_us: int) -> list:
    return [name(obj), age(obj, now_us)]


def claim_columns() -> list[dict]:
    return [name_column(), column("State", description="A summary of the current state (allocated, pending, "
                                                         "reserved, etc.)."), age_column()]


def claim_state(claim: dict) -> str:
    """resourceClaimState: deleted, then pending or allocated[,reserved]."""
    states = []
    deleting = bool((claim.get("metadata") or {}).get("deletionTimestamp"))
    status = claim.get("status") or {}
    if deleting:
        states.append("deleted")
    if not status.get("allocation"):
        if not deleting:
            states.append("pending")
    else:
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
    return ",".join(states)


def claim_cells(claim: dict, now_us: int) -> list:
    return [name(claim), claim_state(claim), age(claim, now_us)]


def slice_columns() -> list[dict]:
    spec = RESOURCE + "ResourceSliceSpec"
    return [name_column(), column("Node", description=doc(spec, "nodeName")),
            column("Driver", description=doc(spec, "driver")),
            column("Pool", description=doc(RESOURCE + "ResourcePool", "name")), age_column()]


def slice_cells(rs: dict, now_us: int) -> list:
    spec = rs.get("spec") or {}
    return [name(rs), spec.get("nodeName") or "", spec.get("driver") or "", (spec.get("pool") or {}).get("name", ""),
            age(rs, now_us)]


def taint_rule_columns() -> list[dict]:
    """DeviceTaintRule: the taint (the selector is left out upstream: a descriptive name says it better)."""
    taint = RESOURCE + "DeviceTaint"
    return [name_column(), column("Key", description=doc(taint, "key")),
            column("Value", description=doc(taint, "value")), column("Effect", description=doc(taint, "effect")),
            column("TimeAdded", description=doc(taint, "timeAdded")), age_column()]


def taint_rule_cells(rule: dict, now_us: int) -> list:
    taint = (rule.get("spec") or {}).get("taint") or {}
    added = since(taint["timeAdded"], now_us) if taint.get("timeAdded") else ""
    return [name(rule), taint.get("key") or "", taint.get("value") or "", taint.get("effect") or "", added,
            age(rule, now_us)]
