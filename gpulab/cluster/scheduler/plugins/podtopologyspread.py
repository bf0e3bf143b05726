"""PodTopologySpread (pkg/scheduler/framework/plugins/podtopologyspread: plugin.go, common.go, filtering.go,
scoring.go).

Constraints: the pod's ``topologySpreadConstraints`` (``matchLabelKeys``
values joined to the selector; ``minDomains`` 1, ``nodeAffinityPolicy`` Honor
and ``nodeTaintsPolicy`` Ignore when unset), or, for a pod without any, the
system defaults (``kubernetes.io/hostname`` maxSkew 3 and
``topology.kubernetes.io/zone`` maxSkew 5, both ScheduleAnyway) with the
selector of the Services, ReplicationController, ReplicaSet or StatefulSet that
own or select the pod (``helper.DefaultSelector``); none without such a selector.

Filter, for the DoNotSchedule constraints: a node missing a constraint's key
is UnschedulableAndUnresolvable ``node(s) didn't match pod topology spread
constraints (missing required label)``; otherwise the node's domain count plus
one (if the pod matches its own selector) minus the smallest domain count
(0 below ``minDomains`` domains) must not exceed ``maxSkew``, else Unschedulable
``node(s) didn't match pod topology spread constraints``. Counts are the
non-terminating pods of the pod's namespace that match, over the nodes that
have every key and pass the inclusion policies.

Score, for the ScheduleAnyway constraints: per node, the sum over constraints
of ``count * log(domains + 2) + maxSkew - 1`` (hostname counts per node, other
keys per domain among all nodes), rounded; then ``100 * (max + min - s) / max``.
Nodes missing a key of the pod's own constraints score 0. Weight 2.

The cache's pod label index finds the matching pods, its node label index the
domains, so a cycle costs the matching pods, not the cluster's.
"""
from __future__ import annotations

import math

from ...selectors import Requirement, label_selector_from_dict
from ..affinity import Labelled, as_selector, selects
from ..events import (ADD, ALL, DELETE, NODE, POD, UPDATE_NODE_LABEL, UPDATE_NODE_TAINT, ClusterEvent,
                      ClusterEventWithHint)
from ..interface import MAX_NODE_SCORE, SETS, EnqueueExtensions, FilterPlugin, PreFilterPlugin, PreScorePlugin, \
    ScorePlugin
from ..status import SKIP_STATUS, Status, unresolvable, unschedulable
from .tainttoleration import untolerated

NAME = "PodTopologySpread"
ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
HOSTNAME, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
DO_NOT_SCHEDULE, SCHEDULE_ANYWAY = "DoNotSchedule", "ScheduleAnyway"
SYSTEM_DEFAULT_CONSTRAINTS = ({"topologyKey": HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
                              {"topologyKey": ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5})
_REJECTION = unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH, plugin=NAME)
_MISSING_LABEL = unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH, plugin=NAME)
_IGNORED = -1  # invalidScore: a node Score leaves out; NormalizeScore gives it 0
_FILTER, _SCORE = NAME + "/filter", NAME + "/score"


class Constraint:
    """topologySpreadConstraint: the v1 constraint with its selector parsed and its defaults applied."""

    __slots__ = ("max_skew", "key", "selector", "min_domains", "affinity_honor", "taints_honor")

    def __init__(self, raw: dict, selector):
        self.max_skew = int(raw.get("maxSkew") or 0)
        self.key: str = raw.get("topologyKey") or ""
        self.selector = selector
        self.min_domains = int(raw.get("minDomains") or 1)
        self.affinity_honor = (raw.get("nodeAffinityPolicy") or "Honor") == "Honor"
        self.taints_honor = (raw.get("nodeTaintsPolicy") or "Ignore") == "Honor"

    def selects(self, labels: dict) -> bool:
        return selects(self.selector, labels)

    def includes(self, pod, node) -> bool:
        """matchNodeInclusionPolicies."""
        if self.affinity_honor and pod.required and not pod.required.matches(node.labels, node.name):
            return False
        return not (self.taints_honor and untolerated(pod.tolerations, node.taints))


def constraints_of(pod, raw_constraints, action: str, selector_override=None) -> list[Constraint]:
    """filterTopologySpreadConstraints: the constraints with ``whenUnsatisfiable == action``."""
    out = []
    for raw in raw_constraints:
        if raw.get("whenUnsatisfiable") != action:
            continue
        selector = selector_override if selector_override is not None else as_selector(raw.get("labelSelector"))
        extra = [Requirement(k, "=", (pod.labels[k],)) for k in raw.get("matchLabelKeys") or () if k in pod.labels]
        if extra:
            selector = extra + (selector or [])
        out.append(Constraint(raw, selector))
    return out


def hard_constraints(pod) -> list[Constraint]:
    """getConstraints for Filter: the pod's own DoNotSchedule constraints (the system defaults have none)."""
    return constraints_of(pod, pod.spec.get("topologySpreadConstraints") or (), DO_NOT_SCHEDULE)


class SpreadCounts:
    """preFilterState: per constraint, the matching pods per domain (``counts``), how many eligible domains hold
    none (``empty``) and how many there are (``domains``)."""

    __slots__ = ("constraints", "counts", "empty", "domains")

    def __init__(self, constraints, counts, empty, domains):
        self.constraints, self.counts, self.empty, self.domains = constraints, counts, empty, domains

    def clone(self) -> SpreadCounts:
        return SpreadCounts(self.constraints, [dict(c) for c in self.counts], list(self.empty), self.domains)

    def min_match(self, i: int) -> int:
        """minMatchNum: the smallest domain count, or 0 below minDomains domains."""
        if self.domains[i] < self.constraints[i].min_domains or self.empty[i] > 0:
            return 0
        return min(self.counts[i].values(), default=0)


_OWNERS = ("services", "replicationcontrollers", "replicasets.apps", "statefulsets.apps")


class PodTopologySpread(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions):
    NAME = NAME
    filter_scope = score_scope = SETS

    def __init__(self, handle, args: dict | None = None):
        super().__init__(handle, args)
        self._selectors: dict[tuple, tuple[tuple, list]] = {}  # DefaultSelector, until those objects change

    # --- shared ---------------------------------------------------------------
    def _matching(self, pod, selector) -> dict[str, int]:
        """countPodsMatchSelector per node: the non-terminating pods of the pod's namespace the selector picks."""
        cache = self.handle.cache
        index = cache.pod_labels.get(pod.namespace)
        if index is None or selector is None:
            return {}
        return cache.node_counts(index.selector_members(selector), skip_terminating=True)

    def default_selector(self, pod) -> list[Requirement]:
        """helper.DefaultSelector, kept per namespace, labels and owner until a Service or owner changes."""
        owner = pod.controller
        key = (pod.namespace, frozenset(pod.labels.items()), owner.get("uid") if owner else None)
        generations = tuple(self.handle.generation(k) for k in _OWNERS)
        kept = self._selectors.get(key)
        if kept is None or kept[0] != generations:
            if len(self._selectors) > 4096:
                self._selectors.clear()
            kept = self._selectors[key] = (generations, self._default_selector(pod))
        return kept[1]

    def _default_selector(self, pod) -> list[Requirement]:
        """helper.DefaultSelector: the selectors of the Services selecting the pod, and of the
        ReplicationController, ReplicaSet or StatefulSet controlling it."""
        handle = self.handle
        label_set: dict[str, str] = {}
        for service in handle.list_objects("services", pod.namespace):
            selector = (service.get("spec") or {}).get("selector")
            if selector is not None and all(pod.labels.get(k) == v for k, v in selector.items()):
                label_set.update(selector)
        requirements = [Requirement(k, "=", (v,)) for k, v in label_set.items()]
        owner = pod.controller
        kind = (owner.get("apiVersion"), owner.get("kind")) if owner else None
        if kind == ("v1", "ReplicationController"):
            rc = handle.get_object("replicationcontrollers", owner.get("name", ""), pod.namespace)
            if rc is not None:
                label_set.update((rc.get("spec") or {}).get("selector") or {})
                requirements = [Requirement(k, "=", (v,)) for k, v in label_set.items()]
        elif kind in (("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet")):
            key = "replicasets.apps" if kind[1] == "ReplicaSet" else "statefulsets.apps"
            owner_obj = handle.get_object(key, owner.get("name", ""), pod.namespace)
            if owner_obj is not None:
                requirements = requirements + label_selector_from_dict((owner_obj.get("spec") or {}).get("selector"))
        return requirements

    # --- PreFilter / Filter ----------------------------------------------------
    def pre_filter(self, state, pod) -> Status | None:
        constraints = hard_constraints(pod)
        if not constraints:
            return SKIP_STATUS
        cache = self.handle.cache
        with_all = cache.all_mask
        for c in constraints:
            with_all &= cache.label_mask(c.key)
        allowed = cache.selector_mask(pod.required) if pod.required else None
        tainted = None
        counts, empty, domains = [], [], []
        for c in constraints:
            eligible = with_all
            if c.affinity_honor and allowed is not None:
                eligible &= allowed
            if c.taints_honor:
                if tainted is None:
                    tainted = 0
                    for cls in cache.classes.values():
                        if untolerated(pod.tolerations, cls.taints):
                            tainted |= cls.mask
                eligible &= ~tainted
            if eligible == cache.label_mask(c.key):
                n_domains = len(cache.label_values(c.key))
            else:
                n_domains = sum(1 for value in cache.label_values(c.key) if cache.label_mask(c.key, value) & eligible)
            domain_counts: dict[str, int] = {}
            for name, n in self._matching(pod, c.selector).items():
                node = cache.nodes[name]
                if node.bit & eligible:
                    value = node.labels[c.key]
                    domain_counts[value] = domain_counts.get(value, 0) + n
            counts.append(domain_counts)
            empty.append(n_domains - len(domain_counts))
            domains.append(n_domains)
        state.write(_FILTER, SpreadCounts(constraints, counts, empty, domains))
        return None

    def filter(self, state, pod, node) -> Status | None:
        s: SpreadCounts = state.read(_FILTER)
        labels = node.labels
        for i, c in enumerate(s.constraints):
            value = labels.get(c.key)
            if value is None:
                return _MISSING_LABEL
            self_match = 1 if c.selects(pod.labels) else 0
            if s.counts[i].get(value, 0) + self_match - s.min_match(i) > c.max_skew:
                return _REJECTION
        return None

    def filter_sets(self, state, pod) -> list:
        s: SpreadCounts = state.read(_FILTER)
        cache = self.handle.cache
        masks = []
        for i, c in enumerate(s.constraints):
            masks.append(cache.without_label_mask(c.key))
            self_match = 1 if c.selects(pod.labels) else 0
            floor = s.min_match(i)
            rejected = 0
            for value, n in s.counts[i].items():
                if n + self_match - floor > c.max_skew:
                    rejected |= cache.label_mask(c.key, value)
            masks.append(rejected)
        return masks

    def update_with_pod(self, state, pod, other, node, delta: int) -> None:
        """updateWithPod."""
        s: SpreadCounts | None = state.read(_FILTER)
        if s is None or other.namespace != pod.namespace:
            return
        labels = node.labels
        if any(c.key not in labels for c in s.constraints):
            return
        for i, c in enumerate(s.constraints):
            if not c.selects(other.labels) or not c.includes(pod, node):
                continue
            value = labels[c.key]
            if value not in s.counts[i]:
                s.empty[i] = max(s.empty[i] - 1, 0)
            s.counts[i][value] = s.counts[i].get(value, 0) + delta

    # --- PreScore / Score ----------------------------------------------------
    def pre_score(self, state, pod, feasible) -> Status | None:
        explicit = pod.spec.get("topologySpreadConstraints") or ()
        if explicit:
            constraints = constraints_of(pod, explicit, SCHEDULE_ANYWAY)
        else:
            selector = self.default_selector(pod)
            constraints = constraints_of(pod, SYSTEM_DEFAULT_CONSTRAINTS, SCHEDULE_ANYWAY, selector) \
                if selector else []
        if not constraints:
            return SKIP_STATUS
        require_all = bool(explicit)  # system defaults spread by hostname on nodes without a zone label too
        cache = self.handle.cache
        ignored = 0  # the feasible nodes missing a key of the pod's own constraints
        if require_all:
            for c in constraints:
                ignored |= feasible.mask & cache.without_label_mask(c.key)
        kept = feasible.mask & ~ignored
        weights, domain_counts, host_counts = [], [], []
        allowed = cache.selector_mask(pod.required) if pod.required else None
        matched: dict[int, dict[str, int]] = {}
        for c in constraints:
            matching = matched.get(id(c.selector))
            if matching is None:
                matching = matched[id(c.selector)] = self._matching(pod, c.selector)
            if c.key == HOSTNAME:
                weights.append(math.log(kept.bit_count() + 2))
                domain_counts.append(None)
                host_counts.append(matching)
                continue
            domains = {value for value in cache.label_values(c.key) if cache.label_mask(c.key, value) & kept}
            if cache.without_label_mask(c.key) & kept:
                domains.add("")
            counts = dict.fromkeys(domains, 0)
            for name, n in matching.items():
                node = cache.nodes[name]
                labels = node.labels
                if require_all and any(k.key not in labels for k in constraints):
                    continue
                if c.affinity_honor and allowed is not None and not node.bit & allowed:
                    continue
                if c.taints_honor and untolerated(pod.tolerations, node.taints):
                    continue
                value = labels.get(c.key, "")
                if value in counts:
                    counts[value] += n
            weights.append(math.log(len(domains) + 2))
            domain_counts.append(counts)
            host_counts.append(None)
        state.write(_SCORE, (constraints, ignored, weights, domain_counts, host_counts))
        return None

    def score(self, state, pod, node) -> int:
        constraints, ignored, weights, domain_counts, host_counts = state.read(_SCORE)
        if node.bit & ignored:
            return _IGNORED
        labels = node.labels
        total = 0.0
        for i, c in enumerate(constraints):
            value = labels.get(c.key)
            if value is None:
                continue
            count = host_counts[i].get(node.name, 0) if c.key == HOSTNAME else domain_counts[i][value]
            total += count * weights[i] + (c.max_skew - 1)
        return math.floor(total + 0.5)  # math.Round: halves away from zero (the sum is never negative)

    def score_sets(self, state, pod) -> list:
        constraints, ignored, _, domain_counts, host_counts = state.read(_SCORE)
        cache = self.handle.cache
        masks = [ignored]
        for i, c in enumerate(constraints):
            masks.append(cache.without_label_mask(c.key))
            groups: dict[int, int] = {}
            if c.key == HOSTNAME:
                for name, n in host_counts[i].items():
                    groups[n] = groups.get(n, 0) | cache.nodes[name].bit
            else:
                for value, n in domain_counts[i].items():
                    if n:
                        groups[n] = groups.get(n, 0) | cache.label_mask(c.key, value)
            masks.extend(groups.values())
        return masks

    def normalize_score(self, state, pod, scores: list[int]) -> list[int]:
        valid = [s for s in scores if s != _IGNORED]
        if not valid:
            return [0] * len(scores)
        lowest, highest = min(valid), max(valid)
        if highest == 0:
            return [0 if s == _IGNORED else MAX_NODE_SCORE for s in scores]
        return [0 if s == _IGNORED else MAX_NODE_SCORE * (highest + lowest - s) // highest for s in scores]

    # --- events ----------------------------------------------------------------
    def events_to_register(self) -> list:
        return [ClusterEventWithHint(POD, ALL, requeue_after_pod_change),
                ClusterEventWithHint(NODE, frozenset({ADD, DELETE, UPDATE_NODE_LABEL, UPDATE_NODE_TAINT}),
                                     requeue_after_node_change)]


def _involved(other: dict, pod) -> bool:
    """involvedInTopologySpreading: the pod itself, or a placed pod of its namespace."""
    meta = other["metadata"]
    return meta.get("uid") == pod.uid or bool((other.get("spec") or {}).get("nodeName")) and \
        meta.get("namespace") == pod.namespace


def requeue_after_pod_change(pod, event: ClusterEvent) -> bool:
    """isSchedulableAfterPodChange: a placed pod of the namespace that a constraint selects came, went, or
    changed labels so that a selector now picks it differently."""
    if any(obj is not None and not _involved(obj, pod) for obj in (event.old, event.new)):
        return False
    constraints = hard_constraints(pod)
    if event.old is not None and event.new is not None:
        old, new = Labelled(event.old).labels, Labelled(event.new).labels
        if event.new["metadata"].get("uid") != pod.uid and old == new:
            return False
        return any(c.selects(old) != c.selects(new) for c in constraints)
    labels = Labelled(event.new if event.new is not None else event.old).labels
    return any(c.selects(labels) for c in constraints)


def requeue_after_node_change(pod, event: ClusterEvent) -> bool:
    """isSchedulableAfterNodeChange: the node (added, changed, or deleted) has every constraint's key."""
    node = event.new if event.new is not None else event.old
    labels = node["metadata"].get("labels") or {}
    return all(c.key in labels for c in hard_constraints(pod))

