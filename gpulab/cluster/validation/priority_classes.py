"""scheduling.k8s.io/v1 PriorityClasses: a port of pkg/apis/scheduling/validation/validation.go, with
IsKnownSystemPriorityClass from pkg/apis/scheduling/v1/helpers.go."""
from __future__ import annotations

from ..errors import FieldError
from .field import forbidden, immutable, not_supported, required
from .formats import name_is_dns_subdomain
from .meta import validate_object_meta, validate_object_meta_update
from .path import Path

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_CRITICAL_PRIORITY = 2 * HIGHEST_USER_DEFINABLE_PRIORITY
# The classes kube-apiserver bootstraps (scheduling.SystemPriorityClasses).
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": SYSTEM_CRITICAL_PRIORITY + 1000,
                           "system-cluster-critical": SYSTEM_CRITICAL_PRIORITY}


def _known_system_class_error(name: str, value: int, global_default: bool) -> str | None:
    if name not in SYSTEM_PRIORITY_CLASSES:
        return f"{name} is not a known system priority class"
    if value != SYSTEM_PRIORITY_CLASSES[name]:
        return f"value of {name} PriorityClass must be {SYSTEM_PRIORITY_CLASSES[name]}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return None


def validate_priority_class(pc: dict) -> list[FieldError]:
    meta = pc.get("metadata") or {}
    errs = validate_object_meta(meta, False, name_is_dns_subdomain)
    name, value = meta.get("name") or "", int(pc.get("value") or 0)
    if name.startswith("system-"):
        problem = _known_system_class_error(name, value, bool(pc.get("globalDefault")))
        if problem:
            errs.append(forbidden(Path("metadata").child("name"), "priority class names with 'system-' prefix are "
                                                                  f"reserved for system use only. error: {problem}"))
    elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
        errs.append(forbidden(Path("value"), "maximum allowed value of a user defined priority is "
                                             f"{HIGHEST_USER_DEFINABLE_PRIORITY}"))
    policy = pc.get("preemptionPolicy")
    if policy is not None:
        if not policy:
            errs.append(required(Path("preemptionPolicy")))
        elif policy not in ("PreemptLowerPriority", "Never"):
            errs.append(not_supported(Path("preemptionPolicy"), policy, ["PreemptLowerPriority", "Never"]))
    return errs


def validate_priority_class_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    if new.get("value") != old.get("value"):
        errs.append(forbidden(Path("value"), "may not be changed in an update."))
    return errs + immutable(Path("preemptionPolicy"), new.get("preemptionPolicy"), old.get("preemptionPolicy"))
