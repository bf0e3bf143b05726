"""DynamicResources (pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go), structured parameters.

* PreEnqueue: a pod waits outside the queue while one of its claims is missing
  (``ResourceClaim not created yet`` for a template's claim the controller has
  not made), being deleted (``resourceclaim "x" is being deleted``) or not
  made for it;
* PreFilter: a request naming a missing class fails the pod on every node
  (``request gpu: device class x does not exist``); a pod without claims skips
  the plugin;
* Filter: an allocated claim must be usable on the node (``resourceclaim not
  available on the node``), the others must be allocatable there from the
  node's devices (``cannot allocate all claims``); both are
  UnschedulableAndUnresolvable, so preemption does not try those nodes; an
  allocator error (a CEL runtime error, a missing class) is an Error:
  ``running "DynamicResources" filter plugin: claim default/c: selector #0:
  CEL runtime error: no such key: model``;
* PostFilter: a claim this scheduler allocated and nobody uses is deallocated
  so another node may be tried (``deallocation of ResourceClaim completed``),
  otherwise it adds no text, as for a pod without claims (v1.37's
  ``deallocateOrDeletePodClaims`` ends with a bare Unschedulable;
  kubernetes/kubernetes#140222 dropped v1.36's ``no new claims to
  deallocate``);
* Filter's scope is ``SETS``: ``filter_sets`` gives every node its verdict in
  one pass (the nodes of one verdict form one set), so the framework asks
  Filter once per verdict instead of once per node, and only the node Reserve
  gets has its allocation built;
* Reserve holds the chosen devices (in flight) so a pod waiting at Permit keeps
  them; PreBind adds the ``resource.kubernetes.io/delete-protection``
  finalizer, then writes the allocation (with ``allocationTimestamp``) and the
  pod's ``reservedFor`` entry through ``resourceclaims/status``.
"""
from __future__ import annotations

from itertools import zip_longest

from .... import features
from ....dra.allocator import AllocationError, Allocator
from ....dra.claims import (CLAIMS, CLASSES, DELETE_PROTECTION_FINALIZER, SLICES, TAINT_RULES, ClaimNameError,
                            claim_name, is_for_pod, is_reserved_for, pod_claims, pod_reference)
from ....errors import ApiError
from ....objects import clone, rfc3339
from ....scheduler.nodeselectors import term_matches
from ...events import ADD, DELETE, NODE, UPDATE, UPDATE_NODE_LABEL, ClusterEventWithHint
from ...interface import (SETS, EnqueueExtensions, FilterPlugin, PostFilterPlugin, PostFilterResult, PreBindPlugin,
                          PreEnqueuePlugin, PreFilterPlugin, ReservePlugin)
from ...status import ERROR, SKIP_STATUS, UNSCHEDULABLE, Status, unresolvable, unschedulable
from .tracker import ClaimTracker

NAME = "DynamicResources"
MANAGER = "kube-scheduler"
MAX_RESERVED_FOR = 256
NOT_ON_NODE = "resourceclaim not available on the node"
CANNOT_ALLOCATE = "cannot allocate all claims"
_CANNOT_ALLOCATE = unresolvable(CANNOT_ALLOCATE, plugin=NAME)


class _State:
    """The cycle's data (stateData): the pod's claims, which need allocating, the devices found on each node
    (turned into AllocationResults only for the node Reserve gets: the other nodes' results are never read)."""

    __slots__ = ("claims", "to_allocate", "classes", "allocator", "placements", "node_allocations", "passing")

    def __init__(self, claims: list[dict], to_allocate: list[int], classes: dict[str, dict]):
        self.claims, self.to_allocate, self.classes = claims, to_allocate, classes
        self.allocator: Allocator | None = None
        self.placements: dict[str, dict] = {}  # node name -> the node object Filter passed
        self.node_allocations: dict[str, list[dict]] = {}
        self.passing: dict[int, dict] = {}  # filter_sets: node bit -> node object, of the nodes that pass

    def allocations(self, node_name: str, cache) -> list[dict] | None:
        """The AllocationResults of the claims on a node Filter passed (made once), or None."""
        allocations = self.node_allocations.get(node_name)
        if allocations is None:
            node = self.placements.get(node_name)
            info = cache.nodes.get(node_name)
            if node is None and info is not None:
                node = self.passing.get(info.bit)
            if node is None:
                return None
            placement = self.allocator.placement(node)
            allocations = self.node_allocations[node_name] = self.allocator.results(node, placement)
        return allocations


def _requests(claim: dict):
    for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ():
        if request.get("exactly") is not None:
            yield request.get("name", ""), request["exactly"].get("deviceClassName", "")
        for sub in request.get("firstAvailable") or ():
            yield request.get("name", ""), sub.get("deviceClassName", "")


def _node_selector_matches(selector: dict | None, node: dict) -> bool:
    if not selector:
        return True
    labels = (node.get("metadata") or {}).get("labels") or {}
    return any(term_matches(t, labels, node["metadata"]["name"]) for t in selector.get("nodeSelectorTerms") or ())


class DynamicResources(PreEnqueuePlugin, PreFilterPlugin, FilterPlugin, PostFilterPlugin, ReservePlugin,
                       PreBindPlugin, EnqueueExtensions):
    NAME = NAME
    filter_scope = SETS

    def __init__(self, handle, args: dict | None = None):
        super().__init__(handle, args)
        self._tracker: ClaimTracker | None = None

    @property
    def tracker(self) -> ClaimTracker:
        if self._tracker is None:
            self._tracker = ClaimTracker(self.handle.api)
        return self._tracker

    def events_to_register(self) -> list:
        events = [ClusterEventWithHint(CLAIMS, frozenset({ADD, UPDATE})),
                  ClusterEventWithHint(SLICES, frozenset({ADD, UPDATE})),
                  ClusterEventWithHint(CLASSES, frozenset({ADD, UPDATE})),
                  ClusterEventWithHint(NODE, frozenset({ADD, UPDATE_NODE_LABEL}))]
        if features.enabled("DRADeviceTaints") and features.enabled("DRADeviceTaintRules"):
            # upstream's tracker turns any change of a rule into an update of the slices it taints
            events.append(ClusterEventWithHint(TAINT_RULES, frozenset({ADD, UPDATE, DELETE})))
        return events

    # --- claims of a pod ------------------------------------------------------
    def _pod_claims(self, pod) -> list[dict] | str:
        """foreachPodResourceClaim: the pod's claims, or why the pod cannot be scheduled yet."""
        api, out = self.handle.api, []
        for pod_claim in pod_claims(pod.pod):
            try:
                name, must_own = claim_name(pod.pod, pod_claim)
            except ClaimNameError as exc:
                return str(exc)
            if name is None:
                continue
            claim = api.try_get(CLAIMS, name, pod.namespace)
            if claim is None:
                return f'resourceclaim.resource.k8s.io "{name}" not found'
            if claim["metadata"].get("deletionTimestamp"):
                return f'resourceclaim "{name}" is being deleted'
            if must_own and (problem := is_for_pod(pod.pod, claim)):
                return problem
            out.append(claim)
        return out

    def pre_enqueue(self, pod) -> Status | None:
        if not pod.spec.get("resourceClaims"):
            return None
        claims = self._pod_claims(pod)
        return unresolvable(claims, plugin=NAME) if isinstance(claims, str) else None

    def pre_filter(self, state, pod) -> Status | None:
        if not pod.spec.get("resourceClaims"):
            return SKIP_STATUS
        claims = self._pod_claims(pod)
        if isinstance(claims, str):
            return unresolvable(claims, plugin=NAME)
        if not claims:
            return SKIP_STATUS
        classes: dict[str, dict] = {}
        to_allocate: list[int] = []
        data = _State(claims, to_allocate, classes)
        state.write(NAME, data)  # first, as upstream: PostFilter sees the claims even when PreFilter rejects
        for index, claim in enumerate(claims):
            status = claim.get("status") or {}
            if status.get("allocation"):
                if not is_reserved_for(pod.pod, claim) and len(status.get("reservedFor") or ()) >= MAX_RESERVED_FOR:
                    return unresolvable("resourceclaim in use", plugin=NAME)
                continue
            for request, class_name in _requests(claim):
                if class_name not in classes:
                    device_class = self.handle.api.try_get(CLASSES, class_name)
                    if device_class is None:
                        return unresolvable(f"request {request}: device class {class_name} does not exist",
                                            plugin=NAME)
                    classes[class_name] = device_class
            to_allocate.append(index)
        if to_allocate:
            tracker = self.tracker
            data.allocator = Allocator(tracker.inventory, classes, tracker.in_use(),
                                       [claims[i] for i in to_allocate])
        return None

    def filter(self, state, pod, node) -> Status | None:
        data: _State = state.read(NAME)
        node_obj = node.node
        for claim in data.claims:
            allocation = (claim.get("status") or {}).get("allocation")
            if allocation and not _node_selector_matches(allocation.get("nodeSelector"), node_obj):
                return unresolvable(NOT_ON_NODE, plugin=NAME)
        if data.allocator is None:
            return None
        try:
            fits = data.allocator.fits(node_obj)
        except AllocationError as exc:
            return Status(ERROR, (str(exc),), NAME)
        if not fits:
            return unresolvable(CANNOT_ALLOCATE, plugin=NAME)
        data.placements[node.name] = node_obj
        return None

    def filter_sets(self, state, pod) -> list:
        """Every node's Filter verdict, as one node mask per rejecting verdict (the passing nodes are in none).
        For a pod whose one unallocated claim asks for one plain device, the allocator answers in one tight
        loop; anything else goes through :meth:`filter` node by node."""
        data: _State = state.read(NAME)
        allocator = data.allocator
        quick = allocator is not None and not any((c.get("status") or {}).get("allocation") for c in data.claims)
        rejected: dict[Status, int] = {}
        passing = data.passing
        infos = list(self.handle.cache.nodes.values())
        try:
            verdicts = allocator.free_device_on_each([info.node for info in infos]) if quick else ()
        except AllocationError:
            verdicts = ()  # Filter words the error, node by node
        for info, free in zip_longest(infos, verdicts):
            if free:
                passing[info.bit] = info.node
                continue
            status = _CANNOT_ALLOCATE if free is False else self.filter(state, pod, info)
            if status is None:
                passing[info.bit] = info.node
            else:
                rejected[status] = rejected.get(status, 0) | info.bit
        return list(rejected.values())

    def post_filter(self, state, pod, diagnosis) -> PostFilterResult:
        data: _State | None = state.read(NAME)
        if data is None:  # no claims: nothing this plugin could change (no text since v1.37)
            return PostFilterResult(Status(UNSCHEDULABLE, (), NAME))
        for claim in data.claims:
            status = claim.get("status") or {}
            if status.get("allocation") and not status.get("reservedFor"):
                latest = clone(claim)
                latest["status"].pop("allocation", None)
                try:
                    self.handle.api.update(CLAIMS, latest, claim["metadata"].get("namespace"), subresource="status",
                                           manager=MANAGER)
                except ApiError as exc:
                    return PostFilterResult(Status(ERROR, (str(exc),), NAME))
                return PostFilterResult(unschedulable("deallocation of ResourceClaim completed", plugin=NAME))
        return PostFilterResult(Status(UNSCHEDULABLE, (), NAME))

    def reserve(self, state, pod, node_name: str) -> Status | None:
        data: _State | None = state.read(NAME)
        if data is None or not data.to_allocate:
            return None
        allocations = data.allocations(node_name, self.handle.cache)
        if allocations is None:
            return Status(ERROR, (f"internal error: no allocation for node {node_name}",), NAME)
        for index, allocation in zip(data.to_allocate, allocations):
            claim = data.claims[index]
            self.tracker.reserve(claim["metadata"].get("uid", ""), allocation["devices"]["results"])
        return None

    def unreserve(self, state, pod, node_name: str) -> None:
        data: _State | None = state.read(NAME)
        if data is None:
            return
        for index in data.to_allocate:
            self.tracker.unreserve(data.claims[index]["metadata"].get("uid", ""))

    def pre_bind(self, state, pod, node_name: str) -> Status | None:
        data: _State | None = state.read(NAME)
        if data is None:
            return None
        allocations = dict(zip(data.to_allocate, data.allocations(node_name, self.handle.cache) or ()))
        for index, claim in enumerate(data.claims):
            try:
                self._bind_claim(pod, claim, allocations.get(index))
            except ApiError as exc:
                return Status(ERROR, (f"binding claim {claim['metadata']['name']}: {exc}",), NAME)
        return None

    def _bind_claim(self, pod, claim: dict, allocation: dict | None) -> None:
        """bindClaim: the finalizer first, then allocation and reservedFor in one status update (typed writes: the
        claim as read, changed here, needs no decoding)."""
        api, namespace = self.handle.api, claim["metadata"].get("namespace")
        latest = api.get(CLAIMS, claim["metadata"]["name"], namespace)
        if allocation is not None and DELETE_PROTECTION_FINALIZER not in (latest["metadata"].get("finalizers") or ()):
            latest = clone(latest)
            latest["metadata"]["finalizers"] = [*(latest["metadata"].get("finalizers") or ()),
                                                DELETE_PROTECTION_FINALIZER]
            latest = api.update(CLAIMS, latest, namespace, manager=MANAGER, typed=True)
        if is_reserved_for(pod.pod, latest) and allocation is None:
            return
        latest = clone(latest)
        status = latest.setdefault("status", {})
        if allocation is not None:
            status["allocation"] = {**allocation, "allocationTimestamp": rfc3339(self.handle.clock())}
        if not is_reserved_for(pod.pod, latest):
            status["reservedFor"] = [*(status.get("reservedFor") or ()), pod_reference(pod.pod)]
        api.update(CLAIMS, latest, namespace, subresource="status", manager=MANAGER, typed=True)
