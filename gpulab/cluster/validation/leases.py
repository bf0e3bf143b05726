"""coordination.k8s.io/v1 Leases: a port of pkg/apis/coordination/validation/validation.go."""
from __future__ import annotations

from ..errors import FieldError
from .field import forbidden, invalid, not_supported
from .formats import name_is_dns_subdomain
from .meta import validate_object_meta, validate_object_meta_update
from .path import Path

_LEASE_STRATEGIES = ["OldestEmulationVersion"]


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
