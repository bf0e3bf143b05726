"""InterPodAffinity (pkg/scheduler/framework/plugins/interpodaffinity: plugin.go, filtering.go, scoring.go).

PreFilter counts, per (topology key, value): the existing pods whose required
anti-affinity terms match the incoming pod; the existing pods matching all of
the incoming pod's required affinity terms; the existing pods matching each of
its required anti-affinity terms. The incoming pod's namespace selectors are
resolved to namespaces first (``mergeAffinityTermNamespacesIfNotEmpty``);
existing pods' terms are matched against the incoming pod's namespace labels.
Pods without any of these skip the Filter.

Filter, in this order: a node lacking one of the affinity terms' keys, or
whose domains hold no matching pod, fails UnschedulableAndUnresolvable
``node(s) didn't match pod affinity rules`` (unless no pod anywhere matches and
the pod matches its own terms: the first of a group); a node in a domain
holding a pod the anti-affinity terms match fails Unschedulable ``node(s) didn't
match pod anti-affinity rules``; a node in a domain of an existing pod whose
anti-affinity matches the incoming pod fails Unschedulable ``node(s) didn't
satisfy existing pods anti-affinity rules``.

Score: per (key, value), the preferred terms' weights of the incoming pod for
each matching existing pod (anti-affinity subtracting), plus, for each existing
pod with affinity, ``hardPodAffinityWeight`` (1) per required affinity term
and the weights of its preferred terms that match the incoming pod; a node
scores the sum over the keys it has; normalised linearly between the lowest
and highest score. Weight 2.
"""
from __future__ import annotations

from collections import Counter

from ..affinity import Labelled, PodAffinity, matches_all, selects
from ..events import (ADD, DELETE, NODE, POD, UPDATE_NODE_LABEL, UPDATE_NODE_TAINT, UPDATE_POD_LABEL, ClusterEvent,
                      ClusterEventWithHint)
from ..interface import MAX_NODE_SCORE, SETS, EnqueueExtensions, FilterPlugin, PreFilterPlugin, PreScorePlugin, \
    ScorePlugin
from ..status import SKIP_STATUS, Status, unresolvable, unschedulable

NAME = "InterPodAffinity"
ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"
HARD_POD_AFFINITY_WEIGHT = 1  # InterPodAffinityArgs default
_AFFINITY = unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH, plugin=NAME)
_ANTI_AFFINITY = unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH, plugin=NAME)
_EXISTING = unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH, plugin=NAME)
_FILTER, _SCORE = NAME + "/filter", NAME + "/score"
_NO_TERMS = PodAffinity("", {})


class AffinityCounts:
    """preFilterState: the three topology-pair counts, the incoming pod's merged terms and namespace labels."""

    __slots__ = ("existing", "affinity", "anti", "required", "required_anti", "namespace_labels")

    def __init__(self, existing, affinity, anti, required, required_anti, namespace_labels):
        self.existing, self.affinity, self.anti = existing, affinity, anti
        self.required, self.required_anti, self.namespace_labels = required, required_anti, namespace_labels

    def clone(self) -> AffinityCounts:
        return AffinityCounts(Counter(self.existing), Counter(self.affinity), Counter(self.anti), self.required,
                              self.required_anti, self.namespace_labels)


def _bump(counts: Counter, labels: dict, key: str, delta: int) -> None:
    value = labels.get(key)
    if value is None:
        return
    pair = (key, value)
    counts[pair] += delta
    if not counts[pair]:
        del counts[pair]


def _add_scores(scores: dict, key: str, domains, weight: int) -> None:
    """processTerm for every pod the term matched: ``weight`` per pod to the node's value of ``key``
    (nodes without it, or without labels, get nothing)."""
    by_value = None
    for labels, n in domains:
        value = labels.get(key)
        if value is not None:
            if by_value is None:
                by_value = scores.setdefault(key, {})
            by_value[value] = by_value.get(value, 0) + weight * n


class InterPodAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions):
    NAME = NAME
    filter_scope = score_scope = SETS

    # --- lookups ----------------------------------------------------------------
    def _namespace_labels(self, namespace: str) -> dict:
        """GetNamespaceLabelsSnapshot (no labels when the namespace is missing)."""
        ns = self.handle.get_object("namespaces", namespace)
        return dict((ns or {}).get("metadata", {}).get("labels") or {})

    def _merged(self, terms) -> list:
        if all(t.namespace_selector is None or t.all_namespaces() for t in terms):
            return list(terms)
        namespaces = self.handle.list_objects("namespaces")

        def by_labels(selector) -> list[str]:
            return [ns["metadata"]["name"] for ns in namespaces if selects(selector, ns["metadata"].get("labels") or {})]
        return [t.merged(by_labels) for t in terms]

    def _term_pods(self, term) -> set[str]:
        """The counted pods a merged incoming term selects."""
        indexes = self.handle.cache.pod_labels
        namespaces = indexes if term.all_namespaces() else term.namespaces
        out: set[str] = set()
        if term.selector is None:
            return out
        for ns in namespaces:
            index = indexes.get(ns)
            if index is not None:
                out |= index.selector_members(term.selector)
        return out

    def _domains(self, uids) -> list[tuple[dict, int]]:
        """(node labels, pods) for the nodes holding the given counted pods."""
        cache = self.handle.cache
        return [(cache.nodes[name].labels, n) for name, n in cache.node_counts(uids).items()]

    def _matching_terms(self, kind: str, pod, namespace_labels: dict):
        """The existing pods' terms of a kind that match the incoming pod, with their pods per node's labels."""
        cache = self.handle.cache
        for holders in cache.affinity_terms[kind].values():
            if holders.term.matches(pod, namespace_labels):
                yield holders.term, [(cache.nodes[name].labels, n) for name, n in holders.nodes.items()
                                     if name in cache.nodes]

    # --- PreFilter / Filter ---------------------------------------------------------
    def pre_filter(self, state, pod) -> Status | None:
        terms = pod.affinity if pod.spec.get("affinity") else _NO_TERMS
        if not terms.required and not terms.required_anti and not self.handle.cache.affinity_terms["required_anti"]:
            return SKIP_STATUS  # nothing can count (the cheap case of the Skip below)
        required, required_anti = self._merged(terms.required), self._merged(terms.required_anti)
        namespace_labels = self._namespace_labels(pod.namespace)
        existing: Counter = Counter()
        for term, domains in self._matching_terms("required_anti", pod, namespace_labels):
            for labels, n in domains:
                _bump(existing, labels, term.topology_key, n)
        affinity: Counter = Counter()
        if required:
            for labels, n in self._domains(set.intersection(*(self._term_pods(t) for t in required))):
                for term in required:
                    _bump(affinity, labels, term.topology_key, n)
        anti: Counter = Counter()
        for term in required_anti:
            for labels, n in self._domains(self._term_pods(term)):
                _bump(anti, labels, term.topology_key, n)
        if not existing and not required and not required_anti:
            return SKIP_STATUS
        state.write(_FILTER, AffinityCounts(existing, affinity, anti, required, required_anti, namespace_labels))
        return None

    def filter(self, state, pod, node) -> Status | None:
        s: AffinityCounts = state.read(_FILTER)
        labels = node.labels
        if s.required:
            pods_exist = True
            for term in s.required:
                value = labels.get(term.topology_key)
                if value is None:
                    return _AFFINITY
                if s.affinity.get((term.topology_key, value), 0) <= 0:
                    pods_exist = False
            if not pods_exist and not (not s.affinity and matches_all(s.required, pod)):
                return _AFFINITY
        for term in s.required_anti:
            value = labels.get(term.topology_key)
            if value is not None and s.anti.get((term.topology_key, value), 0) > 0:
                return _ANTI_AFFINITY
        for (key, value), count in s.existing.items():
            if count > 0 and labels.get(key) == value:
                return _EXISTING
        return None

    def filter_sets(self, state, pod) -> list:
        s: AffinityCounts = state.read(_FILTER)
        cache = self.handle.cache

        def domains(counts: Counter, key: str | None = None) -> int:
            mask = 0
            for (k, v), n in counts.items():
                if n > 0 and (key is None or k == key):
                    mask |= cache.label_mask(k, v)
            return mask

        masks = []
        for term in s.required:
            masks.append(cache.without_label_mask(term.topology_key))
            masks.append(domains(s.affinity, term.topology_key))
        masks.extend(domains(s.anti, term.topology_key) for term in s.required_anti)
        masks.append(domains(s.existing))
        return masks

    def update_with_pod(self, state, pod, other, node, delta: int) -> None:
        """updateWithPod."""
        s: AffinityCounts | None = state.read(_FILTER)
        if s is None:
            return
        labels = node.labels
        if other.spec.get("affinity"):
            for term in other.affinity.required_anti:
                if term.matches(pod, s.namespace_labels):
                    _bump(s.existing, labels, term.topology_key, delta)
        if matches_all(s.required, other):
            for term in s.required:
                _bump(s.affinity, labels, term.topology_key, delta)
        for term in s.required_anti:
            if term.matches(other, None):
                _bump(s.anti, labels, term.topology_key, delta)

    # --- PreScore / Score ---------------------------------------------------------
    def pre_score(self, state, pod, feasible) -> Status | None:
        terms = pod.affinity if pod.spec.get("affinity") else _NO_TERMS
        existing = self.handle.cache.affinity_terms
        if not (terms.preferred or terms.preferred_anti or existing["required"] or existing["preferred"]
                or existing["preferred_anti"]):
            return SKIP_STATUS  # no term anywhere to score by
        namespace_labels = self._namespace_labels(pod.namespace)
        scores: dict[str, dict[str, int]] = {}
        for sign, preferred in ((1, terms.preferred), (-1, terms.preferred_anti)):
            for term in self._merged(preferred):
                _add_scores(scores, term.topology_key, self._domains(self._term_pods(term)), sign * term.weight)
        for kind, weight in (("required", HARD_POD_AFFINITY_WEIGHT), ("preferred", 1), ("preferred_anti", -1)):
            if not weight:
                continue
            for term, domains in self._matching_terms(kind, pod, namespace_labels):
                _add_scores(scores, term.topology_key, domains, weight if kind == "required" else weight * term.weight)
        if not scores:
            return SKIP_STATUS
        state.write(_SCORE, scores)
        return None

    def score(self, state, pod, node) -> int:
        scores = state.read(_SCORE)
        labels = node.labels
        return sum(by_value.get(labels[key], 0) for key, by_value in scores.items() if key in labels)

    def score_sets(self, state, pod) -> list:
        cache = self.handle.cache
        masks = []
        for key, by_value in state.read(_SCORE).items():
            groups: dict[int, int] = {}
            for value, score in by_value.items():
                if score:
                    groups[score] = groups.get(score, 0) | cache.label_mask(key, value)
            masks.extend(groups.values())
        return masks

    def normalize_score(self, state, pod, scores: list[int]) -> list[int]:
        lowest, highest = min(scores), max(scores)
        spread = highest - lowest
        return [int(MAX_NODE_SCORE * ((s - lowest) / spread)) if spread > 0 else 0 for s in scores]

    # --- events ---------------------------------------------------------------------
    def events_to_register(self) -> list:
        return [ClusterEventWithHint(POD, frozenset({ADD, UPDATE_POD_LABEL, DELETE}), requeue_after_pod_change),
                ClusterEventWithHint(NODE, frozenset({ADD, UPDATE_NODE_LABEL, UPDATE_NODE_TAINT}),
                                     requeue_after_node_change)]


def requeue_after_pod_change(pod, event: ClusterEvent) -> bool:
    """isSchedulableAfterPodChange: a placed pod came matching the affinity terms, changed to match them or to
    stop matching the anti-affinity terms, or left while matching the anti-affinity terms."""
    if any(obj is not None and not (obj.get("spec") or {}).get("nodeName") for obj in (event.old, event.new)):
        return False
    terms = pod.affinity
    if event.old is not None and event.new is not None:
        old, new = Labelled(event.old), Labelled(event.new)
        return (not matches_all(terms.required, old) and matches_all(terms.required, new)) or \
            (matches_all(terms.required_anti, old) and not matches_all(terms.required_anti, new))
    if event.new is not None:
        return matches_all(terms.required, Labelled(event.new))
    return matches_all(terms.required_anti, Labelled(event.old))


def requeue_after_node_change(pod, event: ClusterEvent) -> bool:
    """isSchedulableAfterNodeChange: the added or changed node has a key of the (anti-)affinity terms."""
    labels = event.new["metadata"].get("labels") or {}
    terms = pod.affinity
    return any(t.topology_key in labels for t in terms.required + terms.required_anti)
