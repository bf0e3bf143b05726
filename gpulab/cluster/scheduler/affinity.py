"""A pod's inter-pod affinity terms, parsed once (framework.AffinityTerm, WeightedAffinityTerm, and the
``RequiredAffinityTerms`` & co. of PodInfo in pkg/scheduler/framework/types.go).

A term selects pods by label in some namespaces: the term's ``namespaces``,
or the pod's own namespace when it names neither namespaces nor a
``namespaceSelector``; and the namespaces whose labels match its
``namespaceSelector``. A missing label or namespace selector selects nothing
(``metav1.LabelSelectorAsSelector(nil)`` is ``labels.Nothing()``), an empty one
everything. ``matchLabelKeys``/``mismatchLabelKeys`` are merged into the label
selector by the API server when the pod is created, so they are not read here.
"""
from __future__ import annotations

from ..selectors import Requirement, label_selector_from_dict, matches_labels


def as_selector(selector: dict | None) -> list[Requirement] | None:
    """A metav1.LabelSelector as requirements; None for a missing selector (selects nothing)."""
    return None if selector is None else label_selector_from_dict(selector)


def selects(selector: list[Requirement] | None, labels: dict) -> bool:
    return selector is not None and matches_labels(selector, labels)


class AffinityTerm:
    __slots__ = ("namespaces", "namespace_selector", "selector", "topology_key", "weight", "_signature")

    def __init__(self, pod_namespace: str, term: dict, weight: int = 0):
        names = term.get("namespaces") or ()
        ns_selector = term.get("namespaceSelector")
        self.namespaces: frozenset[str] = frozenset(names) if names or ns_selector is not None \
            else frozenset((pod_namespace,))
        self.namespace_selector = as_selector(ns_selector)
        self.selector = as_selector(term.get("labelSelector"))
        self.topology_key: str = term.get("topologyKey") or ""
        self.weight = weight
        self._signature = None

    @property
    def signature(self) -> tuple:
        """What makes two terms alike (the replicas of one Deployment carry the same terms)."""
        if self._signature is None:
            def frozen(selector):
                return None if selector is None else tuple(selector)
            self._signature = (self.namespaces, frozen(self.namespace_selector), frozen(self.selector),
                               self.topology_key, self.weight)
        return self._signature

    def matches(self, pod, namespace_labels: dict | None) -> bool:
        """AffinityTerm.Matches: the pod (anything with ``namespace`` and ``labels``) is in one of the term's
        namespaces, or its namespace's labels (None: none) match the namespace selector, and it has the
        selected labels."""
        if pod.namespace in self.namespaces or selects(self.namespace_selector, namespace_labels or {}):
            return selects(self.selector, pod.labels)
        return False

    def all_namespaces(self) -> bool:
        """An empty namespaceSelector: the term selects pods of every namespace."""
        return self.namespace_selector == []

    def merged(self, namespaces_by_labels) -> AffinityTerm:
        """mergeAffinityTermNamespacesIfNotEmpty for an incoming pod's term: the namespaces its selector picks
        (``namespaces_by_labels(selector)``) join ``namespaces`` and the selector then selects nothing; an
        empty selector stays (it selects every namespace)."""
        if self.namespace_selector is None or self.all_namespaces():
            return self
        out = object.__new__(AffinityTerm)
        out.namespaces = self.namespaces | frozenset(namespaces_by_labels(self.namespace_selector))
        out.namespace_selector = None
        out.selector, out.topology_key, out.weight = self.selector, self.topology_key, self.weight
        out._signature = None
        return out


class PodAffinity:
    """The four term lists of a pod (getPodAffinityTerms, getPodAntiAffinityTerms, getWeightedAffinityTerms)."""

    __slots__ = ("required", "required_anti", "preferred", "preferred_anti")

    def __init__(self, pod_namespace: str, spec: dict):
        affinity = spec.get("affinity") or {}
        pod_affinity = affinity.get("podAffinity")
        anti = affinity.get("podAntiAffinity")

        def required(section) -> list[AffinityTerm]:
            return [AffinityTerm(pod_namespace, t)
                    for t in (section or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or ()]

        def preferred(section) -> list[AffinityTerm]:
            return [AffinityTerm(pod_namespace, w.get("podAffinityTerm") or {}, int(w.get("weight") or 0))
                    for w in (section or {}).get("preferredDuringSchedulingIgnoredDuringExecution") or ()]

        self.required, self.required_anti = required(pod_affinity), required(anti)
        self.preferred, self.preferred_anti = preferred(pod_affinity), preferred(anti)

    def term_lists(self) -> tuple[list[AffinityTerm], ...]:
        return self.required, self.required_anti, self.preferred, self.preferred_anti


class Labelled:
    """What a term matches of a pod object from an event: its namespace and labels."""

    __slots__ = ("namespace", "labels")

    def __init__(self, pod: dict):
        meta = pod["metadata"]
        self.namespace, self.labels = meta.get("namespace", ""), meta.get("labels") or {}


def matches_all(terms: list[AffinityTerm], pod) -> bool:
    """podMatchesAllAffinityTerms: the pod matches every term (no terms: False); incoming terms are merged, so
    no namespace labels are needed."""
    return bool(terms) and all(t.matches(pod, None) for t in terms)
