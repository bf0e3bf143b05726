"""The scheduler's view of the cluster: nodes, the pods that use them, and indexes over both.

Like kube-scheduler's cache (pkg/scheduler/backend/cache), it holds every
node's allocatable resources and the requests of the non-terminal pods bound
or assumed there (the scheduler's pod informer ignores Succeeded/Failed pods:
pkg/scheduler/scheduler.go ``newPodInformer``), updated incrementally from
API change notifications, and "assumes" a pod onto a node before its binding
is written.

Unlike upstream, which re-evaluates every node for every pod, the cache also
keeps nodes grouped so that one evaluation serves many nodes:

* a **taint class** gathers nodes with identical taints and ``spec.unschedulable``
  (NodeUnschedulable and TaintToleration give them identical verdicts and scores);
* inside a class, a **bucket** gathers nodes with identical allocatable and
  requested resources and pod counts (NodeResourcesFit, LeastAllocated,
  BalancedAllocation and NodeResourcesAllocatable give them identical verdicts
  and scores);
* a ``LabelIndex`` answers node selectors and affinity terms with set operations;
* per namespace, a ``LabelIndex`` of the pods on nodes answers label selectors
  (topology spreading, inter-pod affinity), and the cache knows the pods with
  inter-pod affinity (NodeInfo.PodsWithAffinity / PodsWithRequiredAntiAffinity),
  the nodes using host ports (NodeInfo.UsedPorts) and the nodes holding each
  image (ImageStates).

A node with pods nominated to it by preemption sits alone in its bucket, since
its fit then depends on the priority of the pod being scheduled.
"""
from __future__ import annotations

from collections import Counter

from .nodeselectors import LabelIndex
from .podinfo import PodInfo
from .resources import Resources, node_allocatable


class NodeInfo:
    __slots__ = ("name", "node", "taints", "unschedulable", "alloc", "allowed_pods", "requested", "non_zero",
                 "pods", "taint_class", "bucket", "used_ports", "images", "labels", "bit")

    def __init__(self, name: str):
        self.name = name
        self.node: dict | None = None
        self.taints: list[dict] = []
        self.unschedulable = False
        self.alloc = Resources()
        self.allowed_pods = 0
        self.requested = Resources()
        self.non_zero = [0, 0]
        self.pods: dict[str, PodInfo] = {}
        self.taint_class: TaintClass | None = None
        self.bucket: Bucket | None = None
        self.used_ports: Counter = Counter()  # (hostIP, protocol, hostPort) -> pods using it
        self.images: dict[str, int] = {}  # image name -> size in bytes (status.images)
        self.labels: dict = {}
        self.bit = 0  # this node's bit in the cache's node masks

    def set_node(self, node: dict) -> None:
        self.node = node
        self.labels = node["metadata"].get("labels") or {}
        spec = node.get("spec") or {}
        self.taints = list(spec.get("taints") or ())
        self.unschedulable = bool(spec.get("unschedulable"))
        self.alloc, self.allowed_pods = node_allocatable(node)
        self.images = {name: int(image.get("sizeBytes") or 0)
                       for image in (node.get("status") or {}).get("images") or () for name in image.get("names") or ()}

    def add_pod(self, pi: PodInfo) -> None:
        self.pods[pi.uid] = pi
        self._account(pi, 1)

    def remove_pod(self, uid: str) -> PodInfo | None:
        pi = self.pods.pop(uid, None)
        if pi is not None:
            self._account(pi, -1)
        return pi

    def _account(self, pi: PodInfo, sign: int) -> None:
        req, have = pi.request, self.requested
        have.cpu += sign * req.cpu
        have.memory += sign * req.memory
        have.ephemeral += sign * req.ephemeral
        for name, amount in req.scalars.items():
            left = have.scalars.get(name, 0) + sign * amount
            if left:
                have.scalars[name] = left
            else:
                have.scalars.pop(name, None)
        self.non_zero[0] += sign * pi.non_zero[0]
        self.non_zero[1] += sign * pi.non_zero[1]
        for port in pi.host_ports:
            self.used_ports[port] += sign
            if not self.used_ports[port]:
                del self.used_ports[port]

    def copy(self) -> NodeInfo:
        """A copy whose pods and requests can change without touching the cache (preemption's dry run)."""
        other = NodeInfo(self.name)
        other.node, other.taints, other.unschedulable = self.node, self.taints, self.unschedulable
        other.labels, other.bit = self.labels, self.bit
        other.alloc, other.allowed_pods = self.alloc, self.allowed_pods
        req = self.requested
        other.requested = Resources(req.cpu, req.memory, req.ephemeral, dict(req.scalars))
        other.non_zero = list(self.non_zero)
        other.pods = dict(self.pods)
        other.used_ports = Counter(self.used_ports)
        other.images = self.images
        return other

    def resource_key(self) -> tuple:
        return (self.alloc.key(), self.allowed_pods, self.requested.key(), tuple(self.non_zero), len(self.pods))


class Bucket:
    """Nodes of one taint class in the same resource state; ``representative`` stands for all of them."""

    __slots__ = ("key", "mask", "representative")

    def __init__(self, key: tuple, representative: NodeInfo):
        self.key = key
        self.mask = 0  # the member nodes (cache node mask)
        self.representative = representative


TERM_KINDS = ("required", "required_anti", "preferred", "preferred_anti")


class TermHolders:
    """One inter-pod affinity term and how many counted pods on each node carry it."""

    __slots__ = ("term", "nodes")

    def __init__(self, term):
        self.term = term
        self.nodes: Counter = Counter()


class TaintClass:
    __slots__ = ("id", "taints", "unschedulable", "mask", "buckets")

    def __init__(self, class_id: int, taints: list[dict], unschedulable: bool):
        self.id = class_id
        self.taints = taints
        self.unschedulable = unschedulable
        self.mask = 0  # the member nodes (cache node mask)
        self.buckets: dict[tuple, Bucket] = {}


class SchedulerCache:
    def __init__(self) -> None:
        self.nodes: dict[str, NodeInfo] = {}
        self.labels = LabelIndex()
        self.classes: dict[tuple, TaintClass] = {}
        self._pod_node: dict[str, str] = {}
        self._assumed: set[str] = set()
        self._orphans: dict[str, dict[str, PodInfo]] = {}  # pods bound to nodes the cache has not seen
        self.nominated: dict[str, dict[str, PodInfo]] = {}  # node -> uid -> pod nominated there
        self._nominated_node: dict[str, str] = {}
        self._priorities: dict[int, int] = {}  # priority -> number of pods counted on nodes
        self.pod_labels: dict[str, LabelIndex] = {}  # namespace -> the labels of its counted pods, by uid
        self.terminating: set[str] = set()  # uids of counted pods being deleted
        # kind ("required", "required_anti", "preferred", "preferred_anti") -> the counted pods' inter-pod affinity
        # terms, alike terms of many pods (a Deployment's replicas) together
        self.affinity_terms: dict[str, dict[tuple, TermHolders]] = {kind: {} for kind in TERM_KINDS}
        self._pod_terms: dict[str, list[tuple[str, tuple, str]]] = {}
        self.port_nodes: set[str] = set()  # nodes with pods using host ports
        self.image_nodes: dict[str, dict[int, int]] = {}  # image name -> size -> mask of the nodes holding it
        self._names_by_bit: list[str] = []  # bit i of a node mask is the node _names_by_bit[i]
        self.all_mask = 0
        self._label_masks: dict[tuple, int] = {}  # node masks by label, until a node's labels change

    # --- nodes ------------------------------------------------------------
    def set_node(self, node: dict) -> NodeInfo:
        name = node["metadata"]["name"]
        info = self.nodes.get(name)
        if info is None:
            info = self.nodes[name] = NodeInfo(name)
            info.bit = 1 << len(self._names_by_bit)
            self._names_by_bit.append(name)
            self.all_mask |= info.bit
            self._label_masks.clear()
            for pi in self._orphans.pop(name, {}).values():
                info.add_pod(pi)
        self._unplace(info)
        old_images, old_labels = info.images, info.labels
        info.set_node(node)
        if info.images != old_images:
            self._index_images(info, old_images, -1)
            self._index_images(info, info.images, 1)
        if info.labels != old_labels:
            self._label_masks.clear()
        self.labels.set(name, info.labels)
        self._place(info)
        self._index_ports(info)
        return info

    def remove_node(self, name: str) -> None:
        info = self.nodes.pop(name, None)
        if info is None:
            return
        self._unplace(info)
        self.labels.remove(name)
        self._index_images(info, info.images, -1)
        self.all_mask &= ~info.bit
        self._label_masks.clear()
        self.port_nodes.discard(name)
        if info.pods:
            self._orphans[name] = dict(info.pods)

    def _index_images(self, info: NodeInfo, images: dict[str, int], sign: int) -> None:
        for image, size in images.items():
            by_size = self.image_nodes.setdefault(image, {})
            mask = by_size.get(size, 0)
            mask = mask | info.bit if sign > 0 else mask & ~info.bit
            if mask:
                by_size[size] = mask
            else:
                by_size.pop(size, None)
                if not by_size:
                    del self.image_nodes[image]

    # --- node masks: node sets as integers, one bit per node (fast to intersect) ---
    def mask_of(self, names) -> int:
        nodes, mask = self.nodes, 0
        for name in names:
            info = nodes.get(name)
            if info is not None:
                mask |= info.bit
        return mask

    def names_in(self, mask: int) -> list[str]:
        """The nodes of a mask, in the order the cache first saw them."""
        bits, names, out = bin(mask)[:1:-1], self._names_by_bit, []
        i = bits.find("1")
        while i >= 0:
            out.append(names[i])
            i = bits.find("1", i + 1)
        return out

    def nth_name(self, mask: int, k: int) -> str:
        """The k-th node of a mask in the cache's order (a binary search on the bit counts of its prefixes)."""
        lo, hi = 0, mask.bit_length()
        while lo < hi:
            mid = (lo + hi) // 2
            if (mask & ((1 << mid) - 1)).bit_count() > k:
                hi = mid
            else:
                lo = mid + 1
        return self._names_by_bit[lo - 1]

    def node_of_bit(self, mask: int) -> NodeInfo:
        """The node of the lowest bit of a non-empty mask."""
        return self.nodes[self._names_by_bit[(mask & -mask).bit_length() - 1]]

    def label_mask(self, key: str, value: str | None = None) -> int:
        """The nodes with ``key=value``, or with the label ``key`` at all when value is None."""
        cache_key = (key, value)
        mask = self._label_masks.get(cache_key)
        if mask is None:
            names = self.labels.values(key).get(value, ()) if value is not None else self.labels.with_key(key)
            mask = self._label_masks[cache_key] = self.mask_of(names)
        return mask

    def without_label_mask(self, key: str) -> int:
        return self.all_mask & ~self.label_mask(key)

    def label_values(self, key: str):
        """The values nodes have for ``key``."""
        return self.labels.values(key).keys()

    def selector_mask(self, selector) -> int:
        """The nodes a RequiredSelector admits."""
        cache_key = ("required", selector.signature)
        mask = self._label_masks.get(cache_key)
        if mask is None:
            mask = self._label_masks[cache_key] = self.mask_of(self.labels.required_members(selector))
        return mask

    def term_mask(self, term: dict) -> int:
        """The nodes a node selector term selects."""
        cache_key = ("term", repr(term))
        mask = self._label_masks.get(cache_key)
        if mask is None:
            mask = self._label_masks[cache_key] = self.mask_of(self.labels.term_members(term))
        return mask

    def _index_ports(self, info: NodeInfo) -> None:
        if info.used_ports:
            self.port_nodes.add(info.name)
        else:
            self.port_nodes.discard(info.name)

    def _index_pod(self, pi: PodInfo, node_name: str | None) -> None:
        """Keep the pod label index, the terminating pods and the affinity terms true for a pod counted on a
        node, or (``node_name`` None) gone."""
        index = self.pod_labels.get(pi.namespace)
        if node_name is not None:
            if index is None:
                index = self.pod_labels[pi.namespace] = LabelIndex()
            index.set(pi.uid, pi.labels)
        elif index is not None:
            index.remove(pi.uid)
        if node_name is not None and pi.deleting:
            self.terminating.add(pi.uid)
        else:
            self.terminating.discard(pi.uid)
        for kind, signature, node in self._pod_terms.pop(pi.uid, ()):
            by_signature = self.affinity_terms[kind]
            holders = by_signature[signature]
            holders.nodes[node] -= 1
            if not holders.nodes[node]:
                del holders.nodes[node]
                if not holders.nodes:
                    del by_signature[signature]
        if node_name is None or not pi.spec.get("affinity"):
            return
        entries = []
        for kind, terms in zip(TERM_KINDS, pi.affinity.term_lists()):
            for term in terms:
                holders = self.affinity_terms[kind].get(term.signature)
                if holders is None:
                    holders = self.affinity_terms[kind][term.signature] = TermHolders(term)
                holders.nodes[node_name] += 1
                entries.append((kind, term.signature, node_name))
        if entries:
            self._pod_terms[pi.uid] = entries

    def node_counts(self, uids, skip_terminating: bool = False) -> dict[str, int]:
        """How many of the given counted pods each known node holds."""
        if skip_terminating and self.terminating:
            uids = uids - self.terminating
        out: dict[str, int] = {}
        nodes, pod_node = self.nodes, self._pod_node
        for uid in uids:
            name = pod_node.get(uid)
            if name in nodes:
                out[name] = out.get(name, 0) + 1
        return out

    def _class_for(self, info: NodeInfo) -> TaintClass:
        key = (repr(sorted((t.get("key", ""), t.get("value", ""), t.get("effect", "")) for t in info.taints)),
               info.unschedulable)
        cls = self.classes.get(key)
        if cls is None:
            cls = self.classes[key] = TaintClass(len(self.classes), info.taints, info.unschedulable)
        return cls

    def _place(self, info: NodeInfo) -> None:
        cls = info.taint_class or self._class_for(info)
        info.taint_class = cls
        cls.mask |= info.bit
        key = ("nominated", info.name) if info.name in self.nominated else info.resource_key()
        bucket = cls.buckets.get(key)
        if bucket is None:
            bucket = cls.buckets[key] = Bucket(key, info)
        bucket.mask |= info.bit
        info.bucket = bucket

    def _unplace(self, info: NodeInfo) -> None:
        cls, bucket = info.taint_class, info.bucket
        if cls is None:
            return
        cls.mask &= ~info.bit
        if bucket is not None:
            bucket.mask &= ~info.bit
            if not bucket.mask:
                del cls.buckets[bucket.key]
            elif bucket.representative is info:
                bucket.representative = self.node_of_bit(bucket.mask)
        info.taint_class = info.bucket = None

    def _replace_resources(self, info: NodeInfo, change) -> None:
        cls = info.taint_class
        self._unplace(info)
        change()
        info.taint_class = cls
        if cls is not None:
            self._place(info)

    # --- pods -------------------------------------------------------------
    def node_of(self, uid: str) -> str | None:
        return self._pod_node.get(uid)

    def pod_info(self, uid: str) -> PodInfo | None:
        node_name = self._pod_node.get(uid)
        if node_name is None:
            return None
        info = self.nodes.get(node_name)
        return info.pods.get(uid) if info is not None else self._orphans.get(node_name, {}).get(uid)

    def is_assumed(self, uid: str) -> bool:
        return uid in self._assumed

    def add_pod(self, pi: PodInfo, node_name: str, *, assumed: bool = False) -> None:
        """Count a pod on a node (bound, or assumed by this scheduler before binding)."""
        current = self._pod_node.get(pi.uid)
        if current == node_name:
            if not assumed:
                self._assumed.discard(pi.uid)
            self._update_pod(pi, node_name)
            return
        if current is not None:
            self.remove_pod(pi.uid)
        self._pod_node[pi.uid] = node_name
        if assumed:
            self._assumed.add(pi.uid)
        self._count_priority(pi.priority, 1)
        self._index_pod(pi, node_name)
        info = self.nodes.get(node_name)
        if info is None:
            self._orphans.setdefault(node_name, {})[pi.uid] = pi
            return
        self._replace_resources(info, lambda: info.add_pod(pi))
        self._index_ports(info)

    def _count_priority(self, priority: int, delta: int) -> None:
        left = self._priorities.get(priority, 0) + delta
        if left:
            self._priorities[priority] = left
        else:
            self._priorities.pop(priority, None)

    def has_pods_below(self, priority: int) -> bool:
        """Whether any counted pod has a lower priority (else preemption finds no victims anywhere)."""
        return any(p < priority for p in self._priorities)

    def _update_pod(self, pi: PodInfo, node_name: str) -> None:
        self._index_pod(pi, node_name)
        info = self.nodes.get(node_name)
        if info is None:
            self._orphans.setdefault(node_name, {})[pi.uid] = pi
            return
        old = info.pods.get(pi.uid)
        if old is pi:
            return
        if old is not None:
            self._count_priority(old.priority, -1)
        self._count_priority(pi.priority, 1)
        if old is not None and old.request.key() == pi.request.key() and old.non_zero == pi.non_zero:
            info.pods[pi.uid] = pi
            return
        self._replace_resources(info, lambda: (info.remove_pod(pi.uid), info.add_pod(pi)))

    def remove_pod(self, uid: str) -> PodInfo | None:
        node_name = self._pod_node.pop(uid, None)
        self._assumed.discard(uid)
        if node_name is None:
            return None
        info = self.nodes.get(node_name)
        if info is None:
            removed = self._orphans.get(node_name, {}).pop(uid, None)
        else:
            holder: list[PodInfo | None] = [None]
            self._replace_resources(info, lambda: holder.__setitem__(0, info.remove_pod(uid)))
            removed = holder[0]
            self._index_ports(info)
        if removed is not None:
            self._count_priority(removed.priority, -1)
            self._index_pod(removed, None)
        return removed

    def all_pods(self):
        for info in self.nodes.values():
            yield from info.pods.values()

    # --- nominated pods (preemptors waiting for their victims to leave) ---
    def nominate(self, pi: PodInfo, node_name: str) -> None:
        self.unnominate(pi.uid)
        if not node_name:
            return
        self.nominated.setdefault(node_name, {})[pi.uid] = pi
        self._nominated_node[pi.uid] = node_name
        info = self.nodes.get(node_name)
        if info is not None and len(self.nominated[node_name]) == 1:
            self._replace_resources(info, lambda: None)

    def unnominate(self, uid: str) -> None:
        node_name = self._nominated_node.pop(uid, None)
        if node_name is None:
            return
        pods = self.nominated.get(node_name, {})
        pods.pop(uid, None)
        if not pods:
            self.nominated.pop(node_name, None)
            info = self.nodes.get(node_name)
            if info is not None:
                self._replace_resources(info, lambda: None)

    def nominated_node_of(self, uid: str) -> str:
        return self._nominated_node.get(uid, "")
