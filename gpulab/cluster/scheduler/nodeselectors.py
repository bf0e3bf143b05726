"""Node selectors and node affinity terms, matched one node at a time or against an index of all nodes.

The semantics are those of k8s.io/component-helpers/scheduling/corev1/nodeaffinity
(``GetRequiredNodeAffinity``: ``spec.nodeSelector`` AND any of the required
``nodeSelectorTerms``; a term without expressions and fields selects nothing;
``In``/``NotIn``/``Exists``/``DoesNotExist``/``Gt``/``Lt`` as
k8s.io/apimachinery/pkg/labels requirements; ``matchFields`` on
``metadata.name``). ``LabelIndex`` answers the same question for every node at
once with set operations, so a scheduling cycle costs a few set intersections
instead of one label comparison per node.
"""
from __future__ import annotations


def _int64(text: str) -> int | None:
    try:
        value = int(text, 10)
    except (TypeError, ValueError):
        return None
    return value if -(2 ** 63) <= value < 2 ** 63 else None


def expression_matches(expr: dict, labels: dict) -> bool:
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or ()
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt") and key in labels and len(values) == 1:
        have, want = _int64(labels[key]), _int64(values[0])
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want
    return False


def field_matches(expr: dict, node_name: str) -> bool:
    if expr.get("key") != "metadata.name":
        return False
    values = expr.get("values") or ()
    if expr.get("operator") == "In":
        return node_name in values
    if expr.get("operator") == "NotIn":
        return node_name not in values
    return False


def _empty(term: dict) -> bool:
    return not term.get("matchExpressions") and not term.get("matchFields")


def term_matches(term: dict, labels: dict, node_name: str) -> bool:
    if _empty(term):
        return False
    return all(expression_matches(e, labels) for e in term.get("matchExpressions") or ()) and \
        all(field_matches(f, node_name) for f in term.get("matchFields") or ())


class RequiredSelector:
    """A pod's hard node constraints: spec.nodeSelector and requiredDuringSchedulingIgnoredDuringExecution."""

    __slots__ = ("node_selector", "terms", "signature")

    def __init__(self, pod: dict):
        spec = pod.get("spec") or {}
        self.node_selector: dict = spec.get("nodeSelector") or {}
        required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                    .get("requiredDuringSchedulingIgnoredDuringExecution"))
        self.terms: list[dict] | None = None if required is None else list(required.get("nodeSelectorTerms") or ())
        self.signature = repr((sorted(self.node_selector.items()), self.terms)) if self else ""

    def __bool__(self) -> bool:
        return bool(self.node_selector) or self.terms is not None

    def matches(self, labels: dict, node_name: str) -> bool:
        for key, value in self.node_selector.items():
            if labels.get(key) != value:
                return False
        if self.terms is None:
            return True
        return any(term_matches(t, labels, node_name) for t in self.terms)


def preferred_terms(pod: dict) -> list[tuple[int, dict]]:
    """The non-empty preferredDuringSchedulingIgnoredDuringExecution terms as (weight, preference)."""
    preferred = ((((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {})
                 .get("preferredDuringSchedulingIgnoredDuringExecution") or ())
    return [(int(p.get("weight", 0)), p.get("preference") or {}) for p in preferred
            if not _empty(p.get("preference") or {})]


class LabelIndex:
    """Names (of nodes, or of pods by uid) by label key and value, to evaluate node selectors and label
    selectors for all of them at once with set operations."""

    def __init__(self) -> None:
        self.all: set[str] = set()
        self._by_key: dict[str, dict[str, set[str]]] = {}
        self._labels: dict[str, dict] = {}
        self.version = 0
        self._cache: dict[str, frozenset[str]] = {}

    def set(self, name: str, labels: dict | None) -> None:
        old = self._labels.get(name)
        labels = labels or {}
        if old is not None and old == labels:
            return
        if old is not None:
            self._remove_labels(name, old)
        self.all.add(name)
        self._labels[name] = dict(labels)
        for key, value in labels.items():
            self._by_key.setdefault(key, {}).setdefault(value, set()).add(name)
        self._changed()

    def remove(self, name: str) -> None:
        old = self._labels.pop(name, None)
        if old is None:
            return
        self._remove_labels(name, old)
        self.all.discard(name)
        self._changed()

    def _remove_labels(self, name: str, labels: dict) -> None:
        for key, value in labels.items():
            values = self._by_key.get(key, {})
            members = values.get(value)
            if members is not None:
                members.discard(name)
                if not members:
                    del values[value]
            if not values:
                self._by_key.pop(key, None)

    def _changed(self) -> None:
        self.version += 1
        self._cache.clear()

    # --- set evaluation ---------------------------------------------------
    def _with_key(self, key: str) -> set[str]:
        out: set[str] = set()
        for members in self._by_key.get(key, {}).values():
            out |= members
        return out

    def values(self, key: str) -> dict[str, set[str]]:
        """value -> names with ``key=value`` (the index's own sets: read, never change them)."""
        return self._by_key.get(key, {})

    def with_key(self, key: str) -> frozenset[str]:
        """The names that have the label ``key`` (cached until a change)."""
        cache_key = "k" + key
        cached = self._cache.get(cache_key)
        if cached is None:
            cached = self._cache[cache_key] = frozenset(self._with_key(key))
        return cached

    def selector_members(self, requirements) -> set[str]:
        """The names whose labels satisfy every ``selectors.Requirement`` of a label selector (none: all).

        The requirements that name values or a key narrow the set through the index, smallest first, so the
        cost is that of the fewest candidates; the negative ones (NotIn, DoesNotExist) are then checked on each
        remaining name."""
        candidates: list = []
        negative = []
        for r in requirements:
            if r.op in ("=", "==", "in"):
                by_value = self._by_key.get(r.key, {})
                if len(r.values) == 1:
                    found = by_value.get(r.values[0])
                else:
                    found = set().union(*(by_value.get(v, ()) for v in r.values))
                if not found:
                    return set()
                candidates.append(found)
            elif r.op == "exists":
                candidates.append(self.with_key(r.key))
            else:
                negative.append(r)
        if candidates:
            candidates.sort(key=len)
            out = set(candidates[0])
            for other in candidates[1:]:
                out &= other
                if not out:
                    return out
        else:
            out = set(self.all)
        if negative:
            labels = self._labels
            out = {name for name in out if all(r.matches(labels[name]) for r in negative)}
        return out

    def _expression(self, expr: dict) -> set[str]:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or ()
        by_value = self._by_key.get(key, {})
        if op == "In":
            out: set[str] = set()
            for v in set(values):
                out |= by_value.get(v, set())
            return out
        if op == "NotIn":
            return self.all - self._expression({**expr, "operator": "In"})
        if op == "Exists":
            return self._with_key(key)
        if op == "DoesNotExist":
            return self.all - self._with_key(key)
        out = set()
        if op in ("Gt", "Lt"):
            for value, members in by_value.items():
                if expression_matches(expr, {key: value}):
                    out |= members
        return out

    def _field(self, expr: dict) -> set[str]:
        if expr.get("key") != "metadata.name":
            return set()
        values = set(expr.get("values") or ())
        if expr.get("operator") == "In":
            return self.all & values
        if expr.get("operator") == "NotIn":
            return self.all - values
        return set()

    def _term(self, term: dict) -> set[str]:
        if _empty(term):
            return set()
        out = set(self.all)
        for expr in term.get("matchExpressions") or ():
            out &= self._expression(expr)
        for expr in term.get("matchFields") or ():
            out &= self._field(expr)
        return out

    def term_members(self, term: dict) -> frozenset[str]:
        key = "t" + repr(term)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._cache[key] = frozenset(self._term(term))
        return cached

    def required_members(self, selector: RequiredSelector) -> frozenset[str]:
        """The nodes a RequiredSelector admits (cached until a node's labels change)."""
        cached = self._cache.get(selector.signature)
        if cached is not None:
            return cached
        out = set(self.all)
        for key, value in selector.node_selector.items():
            out &= self._by_key.get(key, {}).get(value, set())
        if selector.terms is not None:
            union: set[str] = set()
            for term in selector.terms:
                union |= self._term(term)
            out &= union
        result = self._cache[selector.signature] = frozenset(out)
        return result
