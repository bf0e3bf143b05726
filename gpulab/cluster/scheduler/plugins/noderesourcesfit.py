"""NodeResourcesFit (pkg/scheduler/framework/plugins/noderesources/fit.go, least_allocated.go,
resource_allocation.go).

Filter (``fitsRequest``): ``Too many pods`` when the node's pod count has
reached ``allocatable.pods``; otherwise, when the pod requests anything, one
``Insufficient <resource>`` per resource whose request exceeds allocatable
minus the requests already on the node (cpu, memory, ephemeral-storage, then
scalar resources such as ``example.com/gpu``). The rejection is
UnschedulableAndUnresolvable when a request exceeds the node's whole
allocatable (preemption cannot help), Unschedulable otherwise.

Score (default strategy LeastAllocated, cpu and memory with weight 1):
``(allocatable - requested) * 100 / allocatable`` per resource on the non-zero
requests (100m cpu / 200Mi memory for containers that ask for none), averaged
by weight with integer division. Plugin weight 1.
"""
from __future__ import annotations

from ..events import (ADD, DELETE, NODE, POD, UPDATE_NODE_ALLOCATABLE, UPDATE_POD_SCALE_DOWN, ClusterEvent,
                      ClusterEventWithHint)
from ..interface import MAX_NODE_SCORE, RESOURCES, EnqueueExtensions, FilterPlugin, ScorePlugin
from ..resources import Resources, node_allocatable, pod_requests
from ..status import UNSCHEDULABLE, UNSCHEDULABLE_AND_UNRESOLVABLE, Status

NAME = "NodeResourcesFit"
SCORING_RESOURCES = (("cpu", 1), ("memory", 1))  # config.DefaultResourceSpec


class NodeResourcesFit(FilterPlugin, ScorePlugin, EnqueueExtensions):
    NAME = NAME
    filter_scope = score_scope = RESOURCES

    def filter(self, state, pod, node) -> Status | None:
        return insufficient(pod.request, node.alloc, node.allowed_pods, node.requested, len(node.pods))

    def score(self, state, pod, node) -> int:
        return least_allocated(pod.non_zero, node.alloc, node.non_zero)

    def events_to_register(self) -> list:
        return [ClusterEventWithHint(POD, frozenset({DELETE, UPDATE_POD_SCALE_DOWN}), requeue),
                ClusterEventWithHint(NODE, frozenset({ADD, UPDATE_NODE_ALLOCATABLE}), requeue)]


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


def _fits_empty(pod, node: dict) -> bool:
    alloc, allowed = node_allocatable(node)
    return insufficient(pod.request, alloc, allowed, Resources(), 0) is None


def requeue(pod, event: ClusterEvent) -> bool:
    """isSchedulableAfterPodEvent / isSchedulableAfterNodeChange."""
    if event.resource == POD:
        if event.action == DELETE:
            spec, status = event.old.get("spec") or {}, event.old.get("status") or {}
            return bool(spec.get("nodeName") or status.get("nominatedNodeName"))
        if event.new["metadata"].get("uid") == pod.uid:  # UpdatePodScaleDown (in-place resize)
            return True
        if not (event.new.get("spec") or {}).get("nodeName"):
            return False
        before, after = pod_requests(event.old), pod_requests(event.new)
        want = pod.request
        return bool((want.cpu and before.cpu > after.cpu) or (want.memory and before.memory > after.memory) or
                    (want.ephemeral and before.ephemeral > after.ephemeral) or
                    any(amount and before.scalars.get(k, 0) > after.scalars.get(k, 0)
                        for k, amount in want.scalars.items()))
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
