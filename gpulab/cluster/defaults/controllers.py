"""Defaults of the kinds kube-controller-manager drives beyond deployments, replica sets, daemon sets and jobs:
StatefulSets, ReplicationControllers, CronJobs, HorizontalPodAutoscalers, and of PodTemplates.

Ports of pkg/apis/apps/v1/defaults.go (SetDefaults_StatefulSet, with the
MaxUnavailableStatefulSet feature on, as it is by default in v1.37),
pkg/apis/core/v1/defaults.go (SetDefaults_ReplicationController),
pkg/apis/batch/v1/defaults.go (SetDefaults_CronJob) and
pkg/apis/autoscaling/v2/defaults.go (SetDefaults_HorizontalPodAutoscaler and
the behavior rules of GenerateHPAScaleUpRules / GenerateHPAScaleDownRules).
The generated defaulters also default the pod templates and a StatefulSet's
claim templates; a CronJob's job template gets only the pod defaults, as
SetDefaults_Job runs for Job objects alone.
"""
from __future__ import annotations

from ..registry import ResourceType
from .pods import default_pod_spec
from .storage import default_claim


def _pod_template(rt: ResourceType, template: dict | None) -> None:
    if template is not None:
        default_pod_spec(rt, template.setdefault("spec", {}))


def default_statefulset(rt: ResourceType, obj: dict) -> None:
    spec = obj.setdefault("spec", {})
    if not spec.get("podManagementPolicy"):
        spec["podManagementPolicy"] = "OrderedReady"
    strategy = spec.setdefault("updateStrategy", {})
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
        if strategy.get("rollingUpdate") is None:
            strategy["rollingUpdate"] = {}
    rolling = strategy.get("rollingUpdate")
    if strategy["type"] == "RollingUpdate" and rolling is not None:
        if rolling.get("partition") is None:
            rolling["partition"] = 0
        if rolling.get("maxUnavailable") is None:
            rolling["maxUnavailable"] = 1
    retention = spec.get("persistentVolumeClaimRetentionPolicy")
    if retention is None:
        retention = spec["persistentVolumeClaimRetentionPolicy"] = {}
    for field in ("whenDeleted", "whenScaled"):
        if not retention.get(field):
            retention[field] = "Retain"
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    _pod_template(rt, spec.setdefault("template", {}))
    for claim in spec.get("volumeClaimTemplates") or []:
        default_claim(rt, claim)


def default_replication_controller(rt: ResourceType, obj: dict) -> None:
    spec = obj.setdefault("spec", {})
    template = spec.get("template")
    labels = ((template or {}).get("metadata") or {}).get("labels") or {}
    if template is not None and labels:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        meta = obj.setdefault("metadata", {})
        if not meta.get("labels"):
            meta["labels"] = dict(labels)
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    _pod_template(rt, template)


def default_pod_template(rt: ResourceType, obj: dict) -> None:
    _pod_template(rt, obj.setdefault("template", {}))


def default_cronjob(rt: ResourceType, obj: dict) -> None:
    spec = obj.setdefault("spec", {})
    if not spec.get("concurrencyPolicy"):
        spec["concurrencyPolicy"] = "Allow"
    for field, value in (("suspend", False), ("successfulJobsHistoryLimit", 3), ("failedJobsHistoryLimit", 1)):
        if spec.get(field) is None:
            spec[field] = value
    # Both templates' ObjectMeta are structs, which encoding/json writes even when empty: `metadata: {}`.
    job_template = spec.setdefault("jobTemplate", {})
    job_template.setdefault("metadata", {})
    job_spec = job_template.setdefault("spec", {})
    job_spec.setdefault("template", {}).setdefault("metadata", {})
    _pod_template(rt, job_spec["template"])
    for rule in (job_spec.get("podFailurePolicy") or {}).get("rules") or []:
        for pattern in rule.get("onPodConditions") or []:
            if not pattern.get("status"):
                pattern["status"] = "True"


# autoscaling.DefaultCPUUtilization and the behavior defaults of pkg/apis/autoscaling/v2/defaults.go
DEFAULT_CPU_UTILIZATION = 80
_SCALE_UP = {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
             "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                          {"type": "Percent", "value": 100, "periodSeconds": 15}]}
_SCALE_DOWN = {"stabilizationWindowSeconds": 300, "selectPolicy": "Max",
               "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


def _scaling_rules(rules: dict | None, defaults: dict) -> dict:
    """GenerateHPAScale{Up,Down}Rules: the default rules, with what the user set kept."""
    if rules is None:
        return {k: (list(v) if isinstance(v, list) else v) for k, v in defaults.items()}
    out = dict(rules)
    for key in ("stabilizationWindowSeconds", "selectPolicy"):
        if out.get(key) is None:
            out[key] = defaults[key]
    if out.get("policies") is None:
        out["policies"] = [dict(p) for p in defaults["policies"]]
    return out


def default_hpa(rt: ResourceType, obj: dict) -> None:
    spec = obj.setdefault("spec", {})
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    if not spec.get("metrics"):
        spec["metrics"] = [{"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}]
    behavior = spec.get("behavior")
    if behavior is not None:
        behavior["scaleUp"] = _scaling_rules(behavior.get("scaleUp"), _SCALE_UP)
        behavior["scaleDown"] = _scaling_rules(behavior.get("scaleDown"), _SCALE_DOWN)
