"""flowcontrol.apiserver.k8s.io/v1 FlowSchemas and PriorityLevelConfigurations: the structural checks of
ValidateFlowSchema and ValidatePriorityLevelConfiguration in pkg/apis/flowcontrol/validation/validation.go
(requests are not throttled by them here: see docs/fidelity.md)."""
from __future__ import annotations

from ..errors import FieldError
from .field import forbidden, invalid, not_supported, required
from .formats import name_is_dns_subdomain
from .meta import validate_object_meta
from .path import Path

SPEC = Path("spec")
_PRIORITY_TYPES = ["Exempt", "Limited"]
_LIMIT_RESPONSES = ["Queue", "Reject"]


def validate_flow_schema(fs: dict) -> list[FieldError]:
    errs = validate_object_meta(fs.get("metadata") or {}, False, name_is_dns_subdomain)
    spec = fs.get("spec") or {}
    precedence = spec.get("matchingPrecedence", 0)
    if not 1 <= precedence <= 10000:
        errs.append(invalid(SPEC.child("matchingPrecedence"), precedence, "must be between 1 and 10000 inclusively"))
    if not (spec.get("priorityLevelConfiguration") or {}).get("name"):
        errs.append(required(SPEC.child("priorityLevelConfiguration", "name"), "must reference a priority level"))
    method = spec.get("distinguisherMethod")
    if method is not None and method.get("type") not in ("ByNamespace", "ByUser"):
        errs.append(not_supported(SPEC.child("distinguisherMethod", "type"), method.get("type") or "",
                                  ["ByNamespace", "ByUser"]))
    for i, rule in enumerate(spec.get("rules") or []):
        if not rule.get("subjects"):
            errs.append(required(SPEC.child("rules").index(i).child("subjects"), "subjects must contain at least "
                                                                                 "one value"))
    return errs


def validate_priority_level(plc: dict) -> list[FieldError]:
    errs = validate_object_meta(plc.get("metadata") or {}, False, name_is_dns_subdomain)
    spec = plc.get("spec") or {}
    kind = spec.get("type") or ""
    if kind not in _PRIORITY_TYPES:
        errs.append(not_supported(SPEC.child("type"), kind, _PRIORITY_TYPES))
    if kind == "Limited":
        limited = spec.get("limited")
        if limited is None:
            errs.append(required(SPEC.child("limited"), "must not be empty when type is Limited"))
        else:
            response = (limited.get("limitResponse") or {}).get("type") or ""
            if response not in _LIMIT_RESPONSES:
                errs.append(not_supported(SPEC.child("limited", "limitResponse", "type"), response, _LIMIT_RESPONSES))
        if spec.get("exempt") is not None:
            errs.append(forbidden(SPEC.child("exempt"), "must be nil if the type is Limited"))
    elif kind == "Exempt" and spec.get("limited") is not None:
        errs.append(forbidden(SPEC.child("limited"), "must be nil if the type is not Limited"))
    return errs
