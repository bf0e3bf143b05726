"""policy/v1 PodDisruptionBudgets: a port of pkg/apis/policy/validation/validation.go."""
from __future__ import annotations

from ..errors import FieldError
from .apps import is_not_more_than_100_percent, selector_json, validate_positive_int_or_percent
from .field import invalid, non_negative, not_supported, required
from .labels import validate_label_selector
from .meta import validate_object_meta_update
from .path import Path

_EVICTION_POLICIES = ["AlwaysAllow", "IfHealthyBudget"]


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
