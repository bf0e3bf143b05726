"""HorizontalPodAutoscalers: pkg/registry/autoscaling/horizontalpodautoscaler/strategy.go, stored as
autoscaling/v2 and also served as autoscaling/v1.

The v1 form (pkg/apis/autoscaling/v1/conversion.go) has one CPU target:
``spec.targetCPUUtilizationPercentage`` is the v2 Resource metric ``cpu``
with an Utilization target, ``status.currentCPUUtilizationPercentage`` its
current utilization, and the v2 conditions travel in the
``autoscaling.alpha.kubernetes.io/conditions`` annotation. Upstream also
carries the other v2 metrics and the scaling behavior in annotations; those
are left out here (docs/fidelity.md).
"""
from __future__ import annotations

import orjson

from ..defaults import controllers as defaults
from ..printers import Printer
from ..printers import autoscaling as printers
from ..registry import ResourceType
from ..validation import autoscaling as validation
from .strategy import Context, Strategy

CONDITIONS_ANNOTATION = "autoscaling.alpha.kubernetes.io/conditions"
_V1_STATUS_FIELDS = ("observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas")


def _is_cpu_utilization(metric: dict) -> bool:
    resource = metric.get("resource") or {}
    return metric.get("type") == "Resource" and resource.get("name") == "cpu" and \
        (resource.get("target") or {}).get("type") == "Utilization"


def v1_to_v2(obj: dict) -> dict:
    spec = dict(obj.get("spec") or {})
    target = spec.pop("targetCPUUtilizationPercentage", None)
    if target is not None:
        spec["metrics"] = [{"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": target}}}]
    meta = dict(obj.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    conditions = annotations.pop(CONDITIONS_ANNOTATION, None)
    meta["annotations"] = annotations or None
    if not annotations:
        meta.pop("annotations")
    out = {**obj, "apiVersion": "autoscaling/v2", "metadata": meta, "spec": spec}
    status = dict(obj.get("status") or {})
    current = status.pop("currentCPUUtilizationPercentage", None)
    if current is not None:
        status["currentMetrics"] = [{"type": "Resource", "resource": {
            "name": "cpu", "current": {"averageUtilization": current}}}]
    if conditions:
        status["conditions"] = orjson.loads(conditions)
    if "status" in obj:
        out["status"] = status
    return out


def v2_to_v1(obj: dict) -> dict:
    spec = {k: v for k, v in (obj.get("spec") or {}).items() if k not in ("metrics", "behavior")}
    cpu = next((m for m in (obj.get("spec") or {}).get("metrics") or [] if _is_cpu_utilization(m)), None)
    if cpu is not None:
        spec["targetCPUUtilizationPercentage"] = cpu["resource"]["target"].get("averageUtilization")
    status_v2 = obj.get("status") or {}
    status = {k: status_v2.get(k, 0) for k in _V1_STATUS_FIELDS if k in status_v2 or k.endswith("Replicas")}
    for metric in status_v2.get("currentMetrics") or []:
        resource = metric.get("resource") or {}
        if metric.get("type") == "Resource" and resource.get("name") == "cpu" and \
                (resource.get("current") or {}).get("averageUtilization") is not None:
            status["currentCPUUtilizationPercentage"] = resource["current"]["averageUtilization"]
    meta = dict(obj.get("metadata") or {})
    if status_v2.get("conditions"):
        meta["annotations"] = {**(meta.get("annotations") or {}),
                               CONDITIONS_ANNOTATION: orjson.dumps(status_v2["conditions"]).decode()}
    return {**obj, "apiVersion": "autoscaling/v1", "metadata": meta, "spec": spec, "status": status}


class HorizontalPodAutoscalerStrategy(Strategy):
    resource = ResourceType("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True,
                            short_names=("hpa",), categories=("all",), subresources=("status",))
    aliases = (ResourceType("autoscaling", "v1", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True,
                            short_names=("hpa",), categories=("all",), subresources=("status",),
                            storage_alias="horizontalpodautoscalers.autoscaling"),)
    has_generation = True
    printer = Printer(printers.hpa_columns, printers.hpa_cells)

    def to_storage_version(self, obj: dict, served: ResourceType, storage: ResourceType) -> dict:
        return v1_to_v2(obj) if served.version == "v1" else super().to_storage_version(obj, served, storage)

    def from_storage_version(self, obj: dict, served: ResourceType) -> dict:
        return v2_to_v1(obj) if served.version == "v1" else super().from_storage_version(obj, served)

    def default(self, obj: dict) -> None:
        defaults.default_hpa(self.resource, obj)

    def prepare_for_create(self, obj: dict, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        obj["status"] = {"desiredReplicas": 0}

    def validate(self, obj: dict) -> list:
        return validation.validate_hpa(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        if subresource == "status":
            return validation.validate_hpa_status_update(new, old)
        return validation.validate_hpa_update(new, old)
