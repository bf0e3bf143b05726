"""core/v1 ResourceQuotas and LimitRanges: ports of ValidateResourceQuota(Update, StatusUpdate),
ValidateResourceQuotaResourceName, validateResourceQuotaScopes, validateScopeSelector and ValidateLimitRange in
pkg/apis/core/validation/validation.go, with the names of pkg/apis/core/helper/helpers.go
(IsStandardQuotaResourceName, IsResourceQuotaScopeValidForResource). Keys of a quota or limit map are walked
sorted (Go's map order is random)."""
from __future__ import annotations

from .. import quantity
from ..errors import FieldError
from .field import duplicate, forbidden, invalid, not_supported, required
from .formats import is_qualified_name, name_is_dns_subdomain
from .meta import validate_object_meta, validate_object_meta_update
from .path import Path
from .updates import update_of
from .resources import (is_overcommit_allowed, shown, validate_container_resource_name, validate_resource_name,
                        validate_resource_quantity_value)

SPEC = Path("spec")
STANDARD_QUOTA_RESOURCES = {
    "pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps", "persistentvolumeclaims",
    "services.nodeports", "services.loadbalancers", "cpu", "memory", "ephemeral-storage", "requests.cpu",
    "requests.memory", "requests.storage", "requests.ephemeral-storage", "limits.cpu", "limits.memory",
    "limits.ephemeral-storage",
}
SCOPES = ["Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass",
          "CrossNamespacePodAffinity", "VolumeAttributesClass"]
# helper.IsResourceQuotaScopeValidForResource: what each scope may limit.
_POD_OBJECT_COUNT = {"pods"}
_POD_COMPUTE = {"cpu", "requests.cpu", "limits.cpu", "memory", "requests.memory", "limits.memory"}
_VAC_RESOURCES = {"persistentvolumeclaims", "requests.storage"}
_SCOPE_RESOURCES = {
    "Terminating": _POD_OBJECT_COUNT | _POD_COMPUTE, "NotTerminating": _POD_OBJECT_COUNT | _POD_COMPUTE,
    "NotBestEffort": _POD_OBJECT_COUNT | _POD_COMPUTE, "PriorityClass": _POD_OBJECT_COUNT | _POD_COMPUTE,
    "CrossNamespacePodAffinity": _POD_OBJECT_COUNT | _POD_COMPUTE, "BestEffort": _POD_OBJECT_COUNT,
    "VolumeAttributesClass": _VAC_RESOURCES,
}
_SELECTOR_OPERATORS = ["DoesNotExist", "Exists", "In", "NotIn"]
LIMIT_TYPES = ("Pod", "Container", "PersistentVolumeClaim")


def is_standard_quota_resource(name: str) -> bool:
    return name in STANDARD_QUOTA_RESOURCES or name.startswith(("hugepages-", "requests.hugepages-"))


def _quota_resource_name(name: str, path: Path) -> list[FieldError]:
    errs = validate_resource_name(name, path)
    if "/" not in name and not is_standard_quota_resource(name):
        return errs + [invalid(path, name, "must be a standard resource for quota")]
    return errs


def _scopes(spec: dict) -> list[FieldError]:
    scopes = spec.get("scopes") or []
    path = SPEC.child("scopes")
    errs = []
    for scope in scopes:
        if scope not in SCOPES:
            errs.append(invalid(path, scopes, "unsupported scope"))
        for name in sorted(spec.get("hard") or {}):
            valid = _SCOPE_RESOURCES.get(scope)
            if is_standard_quota_resource(name) and valid is not None and name not in valid:
                errs.append(invalid(path, scopes, "unsupported scope applied to resource"))
    for pair in (("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating")):
        if set(pair) <= set(scopes):
            errs.append(invalid(path, scopes, "conflicting scopes"))
    return errs


def _scope_selector(spec: dict) -> list[FieldError]:
    selector = spec.get("scopeSelector")
    if selector is None:
        return []
    errs = []
    path = SPEC.child("scopeSelector", "matchExpressions")
    for i, req in enumerate(selector.get("matchExpressions") or []):
        p = path.index(i)
        if req.get("scopeName") not in SCOPES:
            errs.append(invalid(p.child("scopeName"), req.get("scopeName", ""), "unsupported scope"))
        operator, values = req.get("operator", ""), req.get("values") or []
        if operator in ("In", "NotIn"):
            if not values:
                errs.append(required(p.child("values"), "must be at least one value when `operator` is 'In' or "
                                                        "'NotIn' for scope selector"))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                errs.append(forbidden(p.child("values"), "must be no value when `operator` is 'Exist' or "
                                                         "'DoesNotExist' for scope selector"))
        else:
            errs.append(not_supported(p.child("operator"), operator, _SELECTOR_OPERATORS))
    return errs


def _resource_list(values: dict | None, path: Path) -> list[FieldError]:
    errs = []
    for name in sorted(values or {}):
        errs.extend(_quota_resource_name(name, path.key(name)))
        errs.extend(validate_resource_quantity_value(name, values[name], path.key(name)))
    return errs


def validate_resource_quota(quota: dict) -> list[FieldError]:
    spec = quota.get("spec") or {}
    errs = validate_object_meta(quota.get("metadata") or {}, True, name_is_dns_subdomain)
    errs.extend(_resource_list(spec.get("hard"), SPEC.child("hard")))
    errs.extend(_scopes(spec))
    errs.extend(_scope_selector(spec))
    status = quota.get("status") or {}
    errs.extend(_resource_list(status.get("hard"), Path("status").child("hard")))
    return errs + _resource_list(status.get("used"), Path("status").child("used"))


def validate_resource_quota_update(new: dict, old: dict) -> list[FieldError]:
    spec = new.get("spec") or {}
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    errs.extend(_resource_list(spec.get("hard"), SPEC.child("hard")))
    errs.extend(_scopes(spec))
    errs.extend(_scope_selector(spec))
    old_scopes = set((old.get("spec") or {}).get("scopes") or [])
    if set(spec.get("scopes") or []) != old_scopes:
        errs.append(invalid(SPEC.child("scopes"), spec.get("scopes") or [], "field is immutable"))
    return errs


def validate_resource_quota_status_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    status = new.get("status") or {}
    errs.extend(_resource_list(status.get("hard"), Path("status").child("hard")))
    return errs + _resource_list(status.get("used"), Path("status").child("used"))


# --- limit ranges ------------------------------------------------------------------------
def _limit_type_name(kind: str, path: Path) -> list[FieldError]:
    errs = [invalid(path, kind, m) for m in is_qualified_name(kind)]
    if not errs and "/" not in kind and kind not in LIMIT_TYPES:
        errs.append(invalid(path, kind, "must be a standard limit type or fully qualified"))
    return errs


def _limit_resource_name(kind: str, name: str, path: Path) -> list[FieldError]:
    if kind == "PersistentVolumeClaim":
        return validate_resource_name(name, path)
    return validate_container_resource_name(name, path)


def _q(value):
    return quantity.parse_quantity(value)


def _compare(key: str, found: dict[str, dict], path: Path) -> list[FieldError]:
    """The min <= defaultRequest <= default <= max and ratio checks for one resource."""
    lo, hi = found["min"].get(key), found["max"].get(key)
    default, request, ratio = found["default"].get(key), found["defaultRequest"].get(key), \
        found["maxLimitRequestRatio"].get(key)
    errs = []
    if lo is not None and hi is not None and _q(lo) > _q(hi):
        errs.append(invalid(path.child("min").key(key), shown(lo),
                            f"min value {shown(lo)} is greater than max value {shown(hi)}"))
    if request is not None and lo is not None and _q(lo) > _q(request):
        errs.append(invalid(path.child("defaultRequest").key(key), shown(request),
                            f"min value {shown(lo)} is greater than default request value {shown(request)}"))
    if request is not None and hi is not None and _q(request) > _q(hi):
        errs.append(invalid(path.child("defaultRequest").key(key), shown(request),
                            f"default request value {shown(request)} is greater than max value {shown(hi)}"))
    if request is not None and default is not None and _q(request) > _q(default):
        errs.append(invalid(path.child("defaultRequest").key(key), shown(request),
                            f"default request value {shown(request)} is greater than default limit value "
                            f"{shown(default)}"))
    if default is not None and lo is not None and _q(lo) > _q(default):
        errs.append(invalid(path.child("default").key(key), shown(lo),
                            f"min value {shown(lo)} is greater than default value {shown(default)}"))
    if default is not None and hi is not None and _q(default) > _q(hi):
        errs.append(invalid(path.child("default").key(key), shown(hi),
                            f"default value {shown(default)} is greater than max value {shown(hi)}"))
    if ratio is not None and _q(ratio) < 1:
        errs.append(invalid(path.child("maxLimitRequestRatio").key(key), shown(ratio),
                            f"ratio {shown(ratio)} is less than 1"))
    if ratio is not None and lo is not None and hi is not None and _q(lo) > 0:
        limit = float(_q(hi) / _q(lo))
        if float(_q(ratio)) > limit:
            errs.append(invalid(path.child("maxLimitRequestRatio").key(key), shown(ratio),
                                f"ratio {shown(ratio)} is greater than max/min = {limit:f}"))
    if not is_overcommit_allowed(key) and default is not None and request is not None and \
            _q(default) != _q(request):
        errs.append(invalid(path.child("defaultRequest").key(key), shown(request),
                            f"default value {shown(default)} must equal to defaultRequest value {shown(request)} in "
                            f"{key}"))
    return errs


def validate_limit_range(lr: dict) -> list[FieldError]:
    errs = validate_object_meta(lr.get("metadata") or {}, True, name_is_dns_subdomain)
    seen: set[str] = set()
    for i, item in enumerate((lr.get("spec") or {}).get("limits") or []):
        path = SPEC.child("limits").index(i)
        kind = item.get("type", "")
        errs.extend(_limit_type_name(kind, path.child("type")))
        if kind in seen:
            errs.append(duplicate(path.child("type"), kind))
        seen.add(kind)
        found = {field: item.get(field) or {} for field in ("max", "min", "default", "defaultRequest",
                                                              "maxLimitRequestRatio")}
        for field in ("max", "min"):
            for name in sorted(found[field]):
                errs.extend(_limit_resource_name(kind, name, path.child(field).key(name)))
        if kind == "Pod":
            if found["default"]:
                errs.append(forbidden(path.child("default"), "may not be specified when `type` is 'Pod'"))
            if found["defaultRequest"]:
                errs.append(forbidden(path.child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
        else:
            for field in ("default", "defaultRequest"):
                for name in sorted(found[field]):
                    errs.extend(_limit_resource_name(kind, name, path.child(field).key(name)))
        if kind == "PersistentVolumeClaim" and "storage" not in found["min"] and "storage" not in found["max"]:
            errs.append(required(path.child("limits"), "either minimum or maximum storage value is required, but "
                                                       "neither was provided"))
        for name in sorted(found["maxLimitRequestRatio"]):
            errs.extend(_limit_resource_name(kind, name, path.child("maxLimitRequestRatio").key(name)))
        for key in sorted(set().union(*(found[f] for f in ("max", "min", "default", "defaultRequest",
                                                           "maxLimitRequestRatio")))):
            errs.extend(_compare(key, found, path))
    return errs


validate_limit_range_update = update_of(validate_limit_range)
