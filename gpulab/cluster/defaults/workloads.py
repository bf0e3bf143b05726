"""Defaults of apps/v1 and batch/v1 workloads and of policy and scheduling objects.

Ports of pkg/apis/apps/v1/defaults.go (SetDefaults_Deployment,
SetDefaults_DaemonSet, SetDefaults_ReplicaSet), pkg/apis/batch/v1/defaults.go
(SetDefaults_Job) and pkg/apis/scheduling/v1/defaults.go
(SetDefaults_PriorityClass). Pod templates get the PodSpec defaults but not
the pod-only ones (requests from limits, enableServiceLinks).
"""
from __future__ import annotations

from ..registry import ResourceType
from .pods import default_pod_spec

# The v1 conversion keeps a DaemonSet's internal templateGeneration in this annotation
# (pkg/apis/apps/v1/conversion.go); the strategy starts it at 1 and bumps it when the template changes.
DAEMONSET_TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"


def _template_spec(rt: ResourceType, obj: dict) -> None:
    template = obj.setdefault("spec", {}).setdefault("template", {})
    default_pod_spec(rt, template.setdefault("spec", {}))


def default_deployment(rt: ResourceType, obj: dict) -> None:
    spec = obj.setdefault("spec", {})
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    strategy = spec.setdefault("strategy", {})
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        if rolling is None:
            rolling = strategy["rollingUpdate"] = {}
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    if spec.get("progressDeadlineSeconds") is None:
        spec["progressDeadlineSeconds"] = 600
    _template_spec(rt, obj)


def default_daemonset(rt: ResourceType, obj: dict) -> None:
    spec = obj.setdefault("spec", {})
    strategy = spec.setdefault("updateStrategy", {})
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        if rolling is None:
            rolling = strategy["rollingUpdate"] = {}
        rolling.setdefault("maxUnavailable", 1)
        rolling.setdefault("maxSurge", 0)
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    annotations = obj.setdefault("metadata", {}).setdefault("annotations", {})
    annotations.setdefault(DAEMONSET_TEMPLATE_GENERATION, "1")
    _template_spec(rt, obj)


def default_replicaset(rt: ResourceType, obj: dict) -> None:
    spec = obj.setdefault("spec", {})
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    _template_spec(rt, obj)


def default_job(rt: ResourceType, obj: dict) -> None:
    spec = obj.setdefault("spec", {})
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = 2 ** 31 - 1 if spec.get("backoffLimitPerIndex") is not None else 6
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
    meta = obj.setdefault("metadata", {})
    if labels is not None and not meta.get("labels"):
        # Upstream shares the map: labels the job later adds to its template show up here too.
        meta["labels"] = dict(labels)
    if spec.get("completionMode") is None:
        spec["completionMode"] = "NonIndexed"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    if spec.get("podReplacementPolicy") is None:
        spec["podReplacementPolicy"] = "Failed" if spec.get("podFailurePolicy") is not None else "TerminatingOrFailed"
    if spec.get("manualSelector") is None:
        spec["manualSelector"] = False
    for rule in (spec.get("podFailurePolicy") or {}).get("rules") or []:
        for pattern in rule.get("onPodConditions") or []:
            if not pattern.get("status"):
                pattern["status"] = "True"
    _template_spec(rt, obj)


def default_priority_class(rt: ResourceType, obj: dict) -> None:
    if obj.get("preemptionPolicy") is None:
        obj["preemptionPolicy"] = "PreemptLowerPriority"
