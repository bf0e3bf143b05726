"""Small kinds: coordination Leases, PodDisruptionBudgets and PriorityClasses.

Ports of pkg/apis/coordination/validation/validation.go,
pkg/apis/policy/validation/validation.go and
pkg/apis/scheduling/validation/validation.go (with IsKnownSystemPriorityClass
from pkg/apis/scheduling/v1/helpers.go).
"""
from __future__ import annotations

from ..errors import FieldError
from .apps import is_not_more_than_100_percent, selector_json, validate_positive_int_or_percent
from .field import forbidden, immutable, invalid, non_negative, not_supported, required
from .formats import name_is_dns_subdomain
from .labels import validate_label_selector
from .meta import validate_object_meta, validate_object_meta_update
from .path import Path

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_CRITICAL_PRIORITY = 2 * HIGHEST_USER_DEFINABLE_PRIORITY
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": SYSTEM_CRITICAL_PRIORITY + 1000,
                           "system-cluster-critical": SYSTEM_CRITICAL_PRIORITY}
_LEASE_STRATEGIES = ["OldestEmulationVersion"]
_EVICTION_POLICIES = ["AlwaysAllow", "IfHealthyBudget"]


# --- leases --------------------------------------------------------------------------------------------
def _lease_spec(spec: dict) -> list[FieldError]:
    path, errs = Path("spec"), []
    duration = spec.get("leaseDurationSeconds")
    if duration is not None and duration <= 0:
        errs.append(invalid(path.child("leaseDurationSeconds"), duration, "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if transitions is not None and transitions < 0:
        errs.append(invalid(path.child("leaseTransitions"), transitions, "must be greater than or equal to 0"))
    strategy = spec.get("strategy")
    if strategy is not None and "/" not in strategy and strategy not in _LEASE_STRATEGIES:
        errs.append(not_supported(path.child("strategy"), strategy, _LEASE_STRATEGIES))
    if spec.get("preferredHolder") and not spec.get("strategy"):
        errs.append(forbidden(path.child("preferredHolder"), "may only be specified if `strategy` is defined"))
    return errs


def validate_lease(lease: dict) -> list[FieldError]:
    errs = validate_object_meta(lease.get("metadata") or {}, True, name_is_dns_subdomain, kube_finalizers=False)
    return errs + _lease_spec(lease.get("spec") or {})


def validate_lease_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {}, kube_finalizers=False)
    return errs + _lease_spec(new.get("spec") or {})


# --- pod disruption budgets ----------------------------------------------------------------------------
def _go_pdb_spec(spec: dict) -> dict:
    """The internal PodDisruptionBudgetSpec as encoding/json writes it (no json tags)."""
    return {"MinAvailable": spec.get("minAvailable"), "Selector": selector_json(spec.get("selector")),
            "MaxUnavailable": spec.get("maxUnavailable"),
            "UnhealthyPodEvictionPolicy": spec.get("unhealthyPodEvictionPolicy")}


def validate_pdb(pdb: dict) -> list[FieldError]:
    """ValidatePodDisruptionBudget: the spec only (metadata is left to the generic registry check)."""
    spec, path = pdb.get("spec") or {}, Path("spec")
    errs: list[FieldError] = []
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        errs.append(invalid(path, _go_pdb_spec(spec), "minAvailable and maxUnavailable cannot be both set"))
    for field in ("minAvailable", "maxUnavailable"):
        if spec.get(field) is not None:
            errs.extend(validate_positive_int_or_percent(spec[field], path.child(field)))
            errs.extend(is_not_more_than_100_percent(spec[field], path.child(field)))
    errs.extend(validate_label_selector(spec.get("selector"), path.child("selector")))
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in _EVICTION_POLICIES:
        errs.append(not_supported(path.child("unhealthyPodEvictionPolicy"), policy, _EVICTION_POLICIES))
    return errs


def validate_pdb_status_update(new: dict, old: dict) -> list[FieldError]:
    """ValidatePodDisruptionBudgetStatusUpdate for policy/v1."""
    status, path = new.get("status") or {}, Path("status")
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    for i, cond in enumerate(status.get("conditions") or []):
        p = path.child("conditions").index(i)
        if cond.get("status") not in ("False", "True", "Unknown"):
            errs.append(not_supported(p.child("status"), cond.get("status", ""), ["False", "True", "Unknown"]))
        if not cond.get("lastTransitionTime"):
            errs.append(required(p.child("lastTransitionTime"), "must be set"))
        if not cond.get("reason"):
            errs.append(required(p.child("reason"), "must be set"))
    for field in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
        errs.extend(non_negative(int(status.get(field) or 0), path.child(field)))
    return errs


# --- priority classes ----------------------------------------------------------------------------------
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
