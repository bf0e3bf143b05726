"""What an object uses of a ResourceQuota: kube-apiserver's and kube-controller-manager's quota evaluators.

Ports of pkg/quota/v1/evaluator/core (pods.go: PodUsageFunc,
podComputeUsageHelper, the pod scopes and Constraints; services.go;
persistent_volume_claims.go) and of the generic object-count evaluator
(staging/src/k8s.io/apiserver/pkg/quota/v1/generic: ``count/<resource>.<group>``),
with the ResourceList arithmetic of staging/src/k8s.io/apiserver/pkg/quota/v1/resources.go.
The evaluators are generic over extended resources: a pod requesting
``example.com/accelerator: 2`` uses ``requests.example.com/accelerator: 2``,
which is how teams share accelerators with a quota.

Both the ResourceQuota admission plugin (a request's delta) and the quota
controller (a namespace's ``status.used``) read usage from here.
"""
from __future__ import annotations

from fractions import Fraction

from .defaults.pods import compute_qos
from .objects import parse_time
from .quantity import format_quantity, parse_quantity
from .validation.resources import is_extended_resource

ResourceList = dict[str, Fraction]

# pods.go: the resources the pod evaluator knows, beyond the prefixed ones
_POD_RESOURCES = {"pods", "count/pods", "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
                  "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage"}
_POD_PREFIXES = ("hugepages-", "requests.hugepages-")
# The pod resources a quota makes every container state (the "validationSet" of pods.go).
_MUST_SPECIFY = {"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"}
_LEGACY_COUNTS = {"services": "services", "configmaps": "configmaps", "secrets": "secrets",
                  "replicationcontrollers": "replicationcontrollers", "resourcequotas": "resourcequotas",
                  "persistentvolumeclaims": "persistentvolumeclaims"}
_CLASS_SUFFIX = ".storageclass.storage.k8s.io/"
BEST_EFFORT, NOT_BEST_EFFORT = "BestEffort", "NotBestEffort"


def to_list(raw: dict | None) -> ResourceList:
    return {name: parse_quantity(value) for name, value in (raw or {}).items()}


def formatted(values: ResourceList, like: dict | None = None) -> dict[str, str]:
    """A ResourceList as the API stores it; each value keeps the format of the same key in ``like``."""
    like = like or {}
    return {name: format_quantity(amount, like.get(name, "DecimalSI")) for name, amount in values.items()}


def add(a: ResourceList, b: ResourceList) -> ResourceList:
    out = dict(a)
    for name, amount in b.items():
        out[name] = out.get(name, 0) + amount
    return out


def mask(values: ResourceList, names) -> ResourceList:
    return {name: amount for name, amount in values.items() if name in set(names)}


# --- pods ---------------------------------------------------------------------------------------
def _with_requests_from(pod: dict, field: str) -> dict:
    """The pod with each container's ``field`` (limits) in place of its requests, no overhead or pod level."""
    spec = pod.get("spec") or {}
    swapped = {key: [{**c, "resources": {"requests": (c.get("resources") or {}).get(field) or {}}}
                     for c in spec.get(key) or ()] for key in ("containers", "initContainers")}
    return {"spec": swapped}


def pod_request_list(pod: dict) -> ResourceList:
    """resource.PodRequests (the scheduler's port; imported when first needed, as the scheduler package pulls
    in the whole scheduler)."""
    from .scheduler.resources import pod_request_list as requests

    return requests(pod)


def pod_limit_list(pod: dict) -> ResourceList:
    """resource.PodLimits: the containers' limits aggregated as requests are, overhead added to those set."""
    limits = pod_request_list(_with_requests_from(pod, "limits"))
    for name, amount in to_list((pod.get("spec") or {}).get("overhead")).items():
        if name in limits:
            limits[name] += amount
    return limits


def _compute_usage(requests: ResourceList, limits: ResourceList) -> ResourceList:
    """podComputeUsageHelper."""
    out: ResourceList = {"pods": Fraction(1)}
    for name in ("cpu", "memory", "ephemeral-storage"):
        if name in requests:
            out[name] = out["requests." + name] = requests[name]
        if name in limits:
            out["limits." + name] = limits[name]
    for name, amount in requests.items():
        if name.startswith("hugepages-"):
            out[name] = out["requests." + name] = amount
        if is_extended_resource(name):
            out["requests." + name] = amount
    return out


def counts_compute(pod: dict, now: float) -> bool:
    """QuotaV1Pod: terminal pods and pods past their deletion grace use no compute resources."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    deleting = parse_time(pod["metadata"].get("deletionTimestamp"))
    grace = pod["metadata"].get("deletionGracePeriodSeconds")
    return not (deleting is not None and grace is not None and now > deleting + grace)


def pod_usage(pod: dict, now: float) -> ResourceList:
    """PodUsageFunc: count/pods always; pods and compute resources while the pod is not finished."""
    usage: ResourceList = {"count/pods": Fraction(1)}
    if counts_compute(pod, now):
        usage = add(usage, _compute_usage(pod_request_list(pod), pod_limit_list(pod)))
    return usage


def _container_usage_names(container: dict) -> set[str]:
    resources = container.get("resources") or {}
    return set(_compute_usage(to_list(resources.get("requests")), to_list(resources.get("limits"))))


def pod_constraints(required: set[str], pod: dict) -> str | None:
    """The pod evaluator's Constraints: with cpu or memory quota'd, every container must state it."""
    wanted = required & _MUST_SPECIFY
    missing: dict[str, set[str]] = {}
    spec = pod.get("spec") or {}
    for container in list(spec.get("containers") or ()) + list(spec.get("initContainers") or ()):
        for name in wanted - _container_usage_names(container):
            missing.setdefault(name, set()).add(container.get("name", ""))
    if not missing:
        return None
    return "must specify " + "; ".join(f"{name} for: {','.join(sorted(missing[name]))}" for name in sorted(missing))


def _qos(pod: dict) -> str:
    return (pod.get("status") or {}).get("qosClass") or compute_qos(pod.get("spec") or {})


def _pod_matches_scope(scope: dict, pod: dict) -> bool:
    """podMatchesScopeFunc for one scope selector requirement."""
    name, spec = scope.get("scopeName"), pod.get("spec") or {}
    if name == "Terminating":
        return spec.get("activeDeadlineSeconds") is not None and spec["activeDeadlineSeconds"] >= 0
    if name == "NotTerminating":
        return spec.get("activeDeadlineSeconds") is None or spec["activeDeadlineSeconds"] < 0
    if name == BEST_EFFORT:
        return _qos(pod) == "BestEffort"
    if name == NOT_BEST_EFFORT:
        return _qos(pod) != "BestEffort"
    if name == "PriorityClass":
        return _matches_expression(scope, spec.get("priorityClassName"))
    if name == "CrossNamespacePodAffinity":
        return _uses_cross_namespace_affinity(spec)
    return False


def _matches_expression(scope: dict, value: str | None) -> bool:
    operator, values = scope.get("operator"), scope.get("values") or []
    if operator == "Exists":
        return value is not None and value != ""
    if operator == "DoesNotExist":
        return not value
    if operator == "In":
        return value in values
    if operator == "NotIn":
        return value not in values
    return False


def _uses_cross_namespace_affinity(spec: dict) -> bool:
    affinity = spec.get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        rules = affinity.get(kind) or {}
        terms = list(rules.get("requiredDuringSchedulingIgnoredDuringExecution") or [])
        terms += [w.get("podAffinityTerm") or {} for w in rules.get("preferredDuringSchedulingIgnoredDuringExecution")
                  or []]
        if any(t.get("namespaces") or t.get("namespaceSelector") is not None for t in terms):
            return True
    return False


# --- the evaluators --------------------------------------------------------------------------------
def scope_selectors(quota: dict) -> list[dict]:
    """getScopeSelectorsFromQuota: spec.scopes as Exists requirements, then spec.scopeSelector's."""
    spec = quota.get("spec") or {}
    out = [{"scopeName": s, "operator": "Exists"} for s in spec.get("scopes") or []]
    return out + list((spec.get("scopeSelector") or {}).get("matchExpressions") or [])


def matching_resources(kind: str, names) -> list[str]:
    """An evaluator's MatchingResources: which of a quota's resource names it computes usage for."""
    out = []
    for name in names:
        if kind == "pods":
            if name in _POD_RESOURCES or name.startswith(_POD_PREFIXES) or (
                    name.startswith("requests.") and is_extended_resource(name[len("requests."):])):
                out.append(name)
        elif kind == "services":
            if name in ("services", "count/services", "services.loadbalancers", "services.nodeports"):
                out.append(name)
        elif kind == "persistentvolumeclaims":
            if name in ("persistentvolumeclaims", "count/persistentvolumeclaims", "requests.storage") or \
                    _CLASS_SUFFIX in name:
                out.append(name)
        elif name == count_name(kind) or name == _LEGACY_COUNTS.get(kind):
            out.append(name)
    return out


def count_name(key: str) -> str:
    """The object-count resource of a storage key: ``count/pods``, ``count/deployments.apps``."""
    return f"count/{key}"


def matches(quota: dict, kind: str, obj: dict) -> bool:
    """Matches: the quota limits something this evaluator counts, and every scope holds for the object."""
    if not matching_resources(kind, ((quota.get("status") or {}).get("hard") or {})):
        return False
    scopes = scope_selectors(quota)
    if scopes and kind != "pods":
        return False
    return all(_pod_matches_scope(scope, obj) for scope in scopes)


def _claim_class(pvc: dict) -> str:
    annotations = (pvc.get("metadata") or {}).get("annotations") or {}
    return annotations.get("volume.beta.kubernetes.io/storage-class") or \
        (pvc.get("spec") or {}).get("storageClassName") or ""


def usage(kind: str, obj: dict, now: float) -> ResourceList:
    """Evaluator.Usage of one object of storage key ``kind``."""
    if kind == "pods":
        return pod_usage(obj, now)
    one = Fraction(1)
    out: ResourceList = {count_name(kind): one}
    if kind in _LEGACY_COUNTS:
        out[_LEGACY_COUNTS[kind]] = one
    if kind == "services":
        spec = obj.get("spec") or {}
        if spec.get("type") == "LoadBalancer":
            out["services.loadbalancers"] = one
        if spec.get("type") in ("NodePort", "LoadBalancer"):
            out["services.nodeports"] = Fraction(len(spec.get("ports") or []))
    elif kind == "persistentvolumeclaims":
        storage = ((((obj.get("spec") or {}).get("resources") or {}).get("requests")) or {}).get("storage")
        cls = _claim_class(obj)
        if storage is not None:
            out["requests.storage"] = parse_quantity(storage)
            if cls:
                out[f"{cls}{_CLASS_SUFFIX}requests.storage"] = parse_quantity(storage)
        if cls:
            out[f"{cls}{_CLASS_SUFFIX}persistentvolumeclaims"] = one
    return out


def constraints(kind: str, required: list[str], obj: dict) -> str | None:
    return pod_constraints(set(required), obj) if kind == "pods" else None


def pretty(values: ResourceList, like: dict | None = None) -> str:
    """prettyPrint: ``name=quantity`` sorted by name, comma separated."""
    shown = formatted(values, like)
    return ",".join(f"{name}={shown[name]}" for name in sorted(shown))
