"""Resource names and quantities: ``resources.limits`` / ``requests`` and node capacity.

Ports of pkg/apis/core/validation/validation.go (validateResourceName,
validateContainerResourceName, ValidateResourceQuantityValue,
validateResourceRequirements) and the predicates of
pkg/apis/core/helper/helpers.go. Extended resources such as
``example.com/gpu`` must be whole numbers, may not be overcommitted (request
equals limit) and need a limit -- these are the messages a learner sees for
``example.com/gpu: 0.5``.
"""
from __future__ import annotations

from fractions import Fraction

from .. import quantity
from ..errors import FieldError
from .field import duplicate, forbidden, invalid, not_found, required
from .formats import is_dns1123_label, is_qualified_name
from .path import Path

_STANDARD_CONTAINER_RESOURCES = {"cpu", "memory", "ephemeral-storage"}
_STANDARD_RESOURCES = {
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "resourcequotas", "services",
    "replicationcontrollers", "secrets", "configmaps", "persistentvolumeclaims", "storage", "requests.storage",
    "services.nodeports", "services.loadbalancers",
}
_INTEGER_RESOURCES = {
    "pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps", "persistentvolumeclaims",
    "services.nodeports", "services.loadbalancers",
}
_HUGEPAGES = "hugepages-"


def is_hugepage_resource(name: str) -> bool:
    return name.startswith(_HUGEPAGES)


def is_native_resource(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_extended_resource(name: str) -> bool:
    """IsExtendedResourceName: outside kubernetes.io, and a qualified name once prefixed with 'requests.'."""
    if is_native_resource(name) or name.startswith("requests."):
        return False
    return not is_qualified_name("requests." + name)


def is_overcommit_allowed(name: str) -> bool:
    return is_native_resource(name) and not is_hugepage_resource(name)


def is_integer_resource(name: str) -> bool:
    return name in _INTEGER_RESOURCES or is_extended_resource(name)


def validate_resource_name(name: str, path: Path) -> list[FieldError]:
    errs = [invalid(path, name, msg) for msg in is_qualified_name(name)]
    if errs:
        return errs
    if "/" not in name and not (name in _STANDARD_RESOURCES or name.startswith((_HUGEPAGES, "requests.hugepages-"))):
        return [invalid(path, name, "must be a standard resource type or fully qualified")]
    return []


def validate_container_resource_name(name: str, path: Path) -> list[FieldError]:
    errs = validate_resource_name(name, path)
    if "/" not in name:
        if name not in _STANDARD_CONTAINER_RESOURCES and not is_hugepage_resource(name):
            return errs + [invalid(path, name, "must be a standard resource for containers")]
    elif not is_native_resource(name) and not is_extended_resource(name):
        return errs + [invalid(path, name, "doesn't follow extended resource name standard")]
    return errs


def parsed(value) -> Fraction | None:
    """The value of a quantity field, None when it is not a quantity (decoding rejects those earlier)."""
    try:
        return quantity.parse_quantity(value)
    except ValueError:
        return None


def shown(value) -> str:
    """Quantity.String(): how a quantity appears inside a message."""
    try:
        return quantity.canonical(value)
    except ValueError:
        return str(value)


def validate_resource_quantity_value(name: str, value, path: Path) -> list[FieldError]:
    amount = parsed(value)
    if amount is None:
        return []
    errs = []
    if amount < 0:
        errs.append(invalid(path, shown(value), "must be greater than or equal to 0"))
    if is_integer_resource(name) and quantity.milli_value(amount) % 1000 != 0:
        errs.append(invalid(path, shown(value), "must be an integer"))
    return errs


def _hugepage_value_error(name: str, value) -> str | None:
    """validateResourceQuantityHugePageValue: the amount must be a whole number of pages."""
    try:
        page = quantity.parse_quantity(name[len(_HUGEPAGES):])
    except ValueError:
        page = Fraction(0)
    amount = parsed(value) or Fraction(0)
    if page > 0 and quantity.milli_value(page) % 1000 == 0 and quantity.value(amount) % quantity.value(page) == 0:
        return None
    return f"{shown(value)} is not positive integer multiple of {name}"


def validate_resource_requirements(requirements: dict | None, path: Path, claim_names: set[str] | None = None,
                                   name_fn=validate_container_resource_name) -> list[FieldError]:
    """validateResourceRequirements; resources are walked in sorted order (Go's map order is random)."""
    requirements = requirements or {}
    limits = requirements.get("limits") or {}
    requests = requirements.get("requests") or {}
    lim_path, req_path = path.child("limits"), path.child("requests")
    errs: list[FieldError] = []
    cpu_or_memory, hugepages = False, False
    for name in sorted(limits):
        p = lim_path.key(name)
        errs.extend(name_fn(name, p))
        errs.extend(validate_resource_quantity_value(name, limits[name], p))
        if is_hugepage_resource(name):
            hugepages = True
            if (msg := _hugepage_value_error(name, limits[name])) is not None:
                errs.append(invalid(p, shown(limits[name]), msg))
        cpu_or_memory = cpu_or_memory or name in ("cpu", "memory")
    for name in sorted(requests):
        p = req_path.key(name)
        errs.extend(name_fn(name, p))
        errs.extend(validate_resource_quantity_value(name, requests[name], p))
        request = parsed(requests[name])
        if name in limits:
            limit = parsed(limits[name])
            if request is not None and limit is not None:
                if request != limit and not is_overcommit_allowed(name):
                    errs.append(invalid(req_path, shown(requests[name]),
                                        f"must be equal to {name} limit of {shown(limits[name])}"))
                elif request > limit:
                    errs.append(invalid(req_path, shown(requests[name]),
                                        f"must be less than or equal to {name} limit of {shown(limits[name])}"))
        elif not is_overcommit_allowed(name):
            errs.append(required(lim_path, "Limit must be set for non overcommitable resources"))
        if is_hugepage_resource(name):
            hugepages = True
            if (msg := _hugepage_value_error(name, requests[name])) is not None:
                errs.append(invalid(p, shown(requests[name]), msg))
        cpu_or_memory = cpu_or_memory or name in ("cpu", "memory")
    if hugepages and not cpu_or_memory:
        errs.append(forbidden(path, "HugePages require cpu or memory"))
    errs.extend(_validate_claim_names(requirements.get("claims"), claim_names or set(), path.child("claims")))
    return errs


def _validate_claim_names(claims: list | None, pod_claims: set[str], path: Path) -> list[FieldError]:
    """validateResourceClaimNames: each claim must name an entry of spec.resourceClaims."""
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, claim in enumerate(claims or []):
        name, request = claim.get("name", ""), claim.get("request", "")
        if not name:
            errs.append(required(path.index(i)))
            continue
        if name in seen:
            errs.append(duplicate(path.index(i), name))
        else:
            key = name
            if request:
                errs.extend(invalid(path.index(i).child("request"), request, m) for m in is_dns1123_label(request))
                key = f"{name}/{request}"
            if key in seen:
                errs.append(duplicate(path.index(i), key))
            elif not request:
                errs.extend(duplicate(path.index(i), name) for k in seen if "/" in k and k.split("/", 1)[0] == name)
            seen.add(key)
        if name not in pod_claims:
            detail = "must be one of the names in pod.spec.resourceClaims"
            detail += ": " + ", ".join(sorted(pod_claims)) if pod_claims else " which is empty"
            errs.append(not_found(path.index(i), name, detail))
    return errs
