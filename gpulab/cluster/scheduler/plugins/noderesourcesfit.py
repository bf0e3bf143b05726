"""NodeResourcesFit (pkg/scheduler/framework/plugins/noderesources/fit.go, least_allocated.go,
resource_allocation.go).

Filter (``fitsRequest``): ``Too many pods`` when the node's pod count has
reached ``allocatable.pods``; otherwise, when the pod requests anything, one
``Insufficient <resource>`` per resource whose request exceeds allocatable
minus the requests already on the node (cpu, memory, ephemeral-storage, then
scalar resources such as ``nvidia.com/gpu``). The rejection is
UnschedulableAndUnresolvable when a request exceeds the node's whole
allocatable (preemption cannot help), Unschedulable otherwise.

Score (default strategy LeastAllocated, cpu and memory with weight 1):
``(allocatable - requested) * 100 / allocatable`` per resource on the non-zero
requests (100m cpu / 200Mi memory for containers that ask for none), averaged
by weight with integer division. Plugin weight 1.
"""
from __future__ import annotations

from ..resources import Resources, node_allocatable, pod_requests
from ..status import UNSCHEDULABLE, UNSCHEDULABLE_AND_UNRESOLVABLE, Status
from .events import ADD, DELETE, NODE, POD, UPDATE, ClusterEvent

NAME = "NodeResourcesFit"
WEIGHT = 1
MAX_NODE_SCORE = 100
SCORING_RESOURCES = (("cpu", 1), ("memory", 1))  # config.DefaultResourceSpec


def insufficient(req: Resources, alloc: Resources, allowed_pods: int, requested: Resources,
                 pod_count: int) -> Status | None:
    """fitsRequest: the reasons a pod with requests ``req`` does not fit, or None."""
    reasons: list[str] = []
    unresolvable = False
    if pod_count + 1 > allowed_pods:
        reasons.append("Too many pods")
    if not req.cpu and not req.memory and not req.ephemeral and not req.scalars:
        return Status(UNSCHEDULABLE, tuple(reasons), NAME) if reasons else None
    if req.cpu > 0 and req.cpu > alloc.cpu - requested.cpu:
        reasons.append("Insufficient cpu")
        unresolvable |= req.cpu > alloc.cpu
    if req.memory > 0 and req.memory > alloc.memory - requested.memory:
        reasons.append("Insufficient memory")
        unresolvable |= req.memory > alloc.memory
    if req.ephemeral > 0 and req.ephemeral > alloc.ephemeral - requested.ephemeral:
        reasons.append("Insufficient ephemeral-storage")
        unresolvable |= req.ephemeral > alloc.ephemeral
    for name, amount in req.scalars.items():
        if amount == 0:
            continue
        have = alloc.scalars.get(name, 0)
        if amount > have - requested.scalars.get(name, 0):
            reasons.append(f"Insufficient {name}")
            unresolvable |= amount > have
    if not reasons:
        return None
    return Status(UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else UNSCHEDULABLE, tuple(reasons), NAME)


def filter_node(pod, info, extra: Resources | None = None, extra_pods: int = 0) -> Status | None:
    """Filter against a NodeInfo, optionally with nominated pods' requests added (RunFilterPluginsWithNominatedPods)."""
    requested = info.requested
    if extra is not None:
        requested = Resources(requested.cpu + extra.cpu, requested.memory + extra.memory,
                              requested.ephemeral + extra.ephemeral,
                              {k: requested.scalars.get(k, 0) + extra.scalars.get(k, 0)
                               for k in set(requested.scalars) | set(extra.scalars)})
    return insufficient(pod.request, info.alloc, info.allowed_pods, requested, len(info.pods) + extra_pods)


def least_allocated(non_zero_request: tuple[int, int], alloc: Resources, non_zero_requested) -> int:
    """leastResourceScorer over cpu and memory (resources whose allocatable is 0 are left out)."""
    node_score = weight_sum = 0
    for (_, weight), capacity, used, want in zip(SCORING_RESOURCES, (alloc.cpu, alloc.memory), non_zero_requested,
                                                 non_zero_request):
        if capacity == 0:
            continue
        requested = used + want
        score = 0 if requested > capacity else (capacity - requested) * MAX_NODE_SCORE // capacity
        node_score += score * weight
        weight_sum += weight
    return node_score // weight_sum if weight_sum else 0


def score_node(pod, info) -> int:
    return least_allocated(pod.non_zero, info.alloc, info.non_zero)


def _fits_empty(pod, node: dict) -> bool:
    alloc, allowed = node_allocatable(node)
    return insufficient(pod.request, alloc, allowed, Resources(), 0) is None


def requeue(pod, event: ClusterEvent) -> bool:
    """isSchedulableAfterPodEvent / isSchedulableAfterNodeChange."""
    if event.resource == POD:
        if event.action == DELETE:
            spec, status = event.old.get("spec") or {}, event.old.get("status") or {}
            return bool(spec.get("nodeName") or status.get("nominatedNodeName"))
        if event.action == UPDATE and event.new is not None:  # UpdatePodScaleDown (in-place resize)
            if event.new["metadata"].get("uid") == pod.uid:
                return True
            if not (event.new.get("spec") or {}).get("nodeName"):
                return False
            before, after = pod_requests(event.old), pod_requests(event.new)
            want = pod.request
            return (want.cpu and before.cpu > after.cpu) or (want.memory and before.memory > after.memory) or \
                (want.ephemeral and before.ephemeral > after.ephemeral) or \
                any(amount and before.scalars.get(k, 0) > after.scalars.get(k, 0) for k, amount in want.scalars.items())
        return False
    if event.resource != NODE or event.action not in (ADD, UPDATE):
        return False
    if event.action == UPDATE and "allocatable" not in event.changes:
        return False
    if not _fits_empty(pod, event.new):
        return False
    if event.old is None:
        return True
    (old, old_pods), (new, new_pods) = node_allocatable(event.old), node_allocatable(event.new)
    if new_pods > old_pods:
        return True
    want = pod.request
    if want.is_zero():
        return False
    return (want.cpu > 0 and new.cpu > old.cpu) or (want.memory > 0 and new.memory > old.memory) or \
        (want.ephemeral > 0 and new.ephemeral > old.ephemeral) or \
        any(amount and new.scalars.get(k, 0) > old.scalars.get(k, 0) for k, amount in want.scalars.items())
