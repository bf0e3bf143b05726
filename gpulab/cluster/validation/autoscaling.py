"""autoscaling/v2 HorizontalPodAutoscalers: ports of ValidateHorizontalPodAutoscaler(Update, StatusUpdate),
validateHorizontalPodAutoscalerSpec, ValidateCrossVersionObjectReference, validateMetrics, validateMetricTarget
and validateBehavior in pkg/apis/autoscaling/validation/validation.go (HPAScaleToZero off: minReplicas >= 1)."""
from __future__ import annotations

from .. import quantity
from ..errors import FieldError
from .field import forbidden, invalid, not_supported, required
from .formats import name_is_dns_subdomain, path_segment_name
from .meta import validate_object_meta, validate_object_meta_update
from .path import Path

SPEC = Path("spec")
_SOURCES = {"ContainerResource": "containerResource", "External": "external", "Object": "object", "Pods": "pods",
            "Resource": "resource"}
_TARGET_TYPES = ("AverageValue", "Utilization", "Value")
_POLICY_TYPES = ["Percent", "Pods"]
_SELECT_POLICIES = ["Disabled", "Max", "Min"]
_MAX_PERIOD, _MAX_STABILIZATION = 1800, 3600


def _reference(ref: dict, path: Path) -> list[FieldError]:
    errs = []
    for field in ("kind", "name"):
        value = ref.get(field) or ""
        if not value:
            errs.append(required(path.child(field)))
        else:
            errs.extend(invalid(path.child(field), value, m) for m in path_segment_name(value, False))
    return errs


def _positive(value, path: Path) -> list[FieldError]:
    return [invalid(path, quantity.canonical(value), "must be positive")] \
        if value is not None and quantity.parse_quantity(value) <= 0 else []


def _target(target: dict, path: Path) -> list[FieldError]:
    """validateMetricTarget."""
    errs = []
    kind = target.get("type") or ""
    if not kind:
        errs.append(required(path.child("type"), "must specify a metric target type"))
    elif kind not in _TARGET_TYPES:
        errs.append(invalid(path.child("type"), kind, "must be either Utilization, Value, or AverageValue"))
    errs.extend(_positive(target.get("value"), path.child("value")))
    errs.extend(_positive(target.get("averageValue"), path.child("averageValue")))
    if target.get("averageUtilization") is not None and target["averageUtilization"] < 1:
        errs.append(invalid(path.child("averageUtilization"), target["averageUtilization"], "must be greater than 0"))
    return errs


def _resource_source(source: dict, path: Path, container: bool) -> list[FieldError]:
    errs = [] if source.get("name") else [required(path.child("name"), "must specify a resource name")]
    if container and not source.get("container"):
        errs.append(required(path.child("container"), "must specify a container"))
    target = source.get("target") or {}
    if target.get("averageUtilization") is None and target.get("averageValue") is None:
        errs.append(required(path.child("target", "averageUtilization"),
                             "must set either a target raw value or a target utilization"))
    elif target.get("averageUtilization") is not None and target.get("averageValue") is not None:
        errs.append(forbidden(path.child("target", "averageValue"),
                              "may not set both a target raw value and a target utilization"))
    return errs + _target(target, path.child("target"))


def _metric(metric: dict, path: Path) -> list[FieldError]:
    kind = metric.get("type") or ""
    if not kind:
        return [required(path.child("type"), "must specify a metric source type")]
    if kind not in _SOURCES:
        return [not_supported(path.child("type"), kind, list(_SOURCES))]
    present = [k for k in _SOURCES.values() if metric.get(k) is not None]
    if _SOURCES[kind] not in present:
        return [required(path.child(_SOURCES[kind]), "must populate information for the given metric source")]
    errs = [forbidden(path.child(k), "must populate the given metric source only") for k in present
            if k != _SOURCES[kind]]
    source = metric[_SOURCES[kind]]
    p = path.child(_SOURCES[kind])
    if kind in ("Resource", "ContainerResource"):
        return errs + _resource_source(source, p, kind == "ContainerResource")
    if kind == "Object":
        errs.extend(_reference(source.get("describedObject") or {}, p.child("describedObject")))
    if not (source.get("metric") or {}).get("name"):
        errs.append(required(p.child("metric", "name"), "must specify a metric name"))
    return errs + _target(source.get("target") or {}, p.child("target"))


def _rules(rules: dict | None, path: Path) -> list[FieldError]:
    if rules is None:
        return []
    errs = []
    window = rules.get("stabilizationWindowSeconds")
    if window is not None and not 0 <= window <= _MAX_STABILIZATION:
        errs.append(invalid(path.child("stabilizationWindowSeconds"), window,
                            f"must be less than or equal to {_MAX_STABILIZATION}" if window > 0 else
                            "must be greater than or equal to zero"))
    select = rules.get("selectPolicy")
    if select is not None and select not in _SELECT_POLICIES:
        errs.append(not_supported(path.child("selectPolicy"), select, _SELECT_POLICIES))
    policies = rules.get("policies") or []
    if not policies:
        errs.append(required(path.child("policies"), "must specify at least one Policy"))
    for i, policy in enumerate(policies):
        p = path.child("policies").index(i)
        if policy.get("type") not in _POLICY_TYPES:
            errs.append(not_supported(p.child("type"), policy.get("type", ""), _POLICY_TYPES))
        if (policy.get("value") or 0) <= 0:
            errs.append(invalid(p.child("value"), policy.get("value", 0), "must be greater than zero"))
        period = policy.get("periodSeconds") or 0
        if period <= 0:
            errs.append(invalid(p.child("periodSeconds"), period, "must be greater than zero"))
        elif period > _MAX_PERIOD:
            errs.append(invalid(p.child("periodSeconds"), period, f"must be less than or equal to {_MAX_PERIOD}"))
    return errs


def _spec(spec: dict) -> list[FieldError]:
    errs = []
    low, high = spec.get("minReplicas"), spec.get("maxReplicas") or 0
    if low is not None and low < 1:
        errs.append(invalid(SPEC.child("minReplicas"), low, "must be greater than or equal to 1"))
    if high < 1:
        errs.append(invalid(SPEC.child("maxReplicas"), high, "must be greater than 0"))
    if low is not None and high < low:
        errs.append(invalid(SPEC.child("maxReplicas"), high, "must be greater than or equal to `minReplicas`"))
    errs.extend(_reference(spec.get("scaleTargetRef") or {}, SPEC.child("scaleTargetRef")))
    for i, metric in enumerate(spec.get("metrics") or []):
        errs.extend(_metric(metric, SPEC.child("metrics").index(i)))
    behavior = spec.get("behavior")
    if behavior is not None:
        errs.extend(_rules(behavior.get("scaleUp"), SPEC.child("behavior", "scaleUp")))
        errs.extend(_rules(behavior.get("scaleDown"), SPEC.child("behavior", "scaleDown")))
    return errs


def validate_hpa(hpa: dict) -> list[FieldError]:
    errs = validate_object_meta(hpa.get("metadata") or {}, True, name_is_dns_subdomain)
    return errs + _spec(hpa.get("spec") or {})


def validate_hpa_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    return errs + _spec(new.get("spec") or {})


def validate_hpa_status_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    status = new.get("status") or {}
    for field in ("currentReplicas", "desiredReplicas"):
        if (status.get(field) or 0) < 0:
            errs.append(invalid(Path("status").child(field), status[field], "must be greater than or equal to 0"))
    return errs
