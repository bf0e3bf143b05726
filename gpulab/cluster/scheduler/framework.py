"""One scheduling attempt's algorithm: filter every node, score the feasible ones, pick one.

The plugin order, the "first failing Filter plugin decides a node's status"
rule, weights and normalisations are those of the default v1.36 profile
(pkg/scheduler/apis/config/v1/default_plugins.go, pkg/scheduler/schedule_one.go
``findNodesThatPassFilters``/``prioritizeNodes``,
pkg/scheduler/framework/runtime/framework.go ``RunFilterPlugins``). The
plugins that only matter for volumes, ports, images, inter-pod affinity and
topology spreading are not emulated.

Two deliberate deviations keep thousands of nodes fast and results
reproducible: every node is evaluated (no ``percentageOfNodesToScore``
sampling), but through the cache's taint classes, resource buckets and label
index, so one plugin call covers all equivalent nodes; and ties between the
best-scoring nodes go to the smallest node name instead of a random one.
``filter_node`` evaluates one node on its own (nominated nodes, preemption).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .cache import Bucket, NodeInfo, SchedulerCache
from .plugins import balancedallocation, nodeaffinity, nodename, noderesourcesallocatable, noderesourcesfit
from .plugins import nodeunschedulable, tainttoleration
from .podinfo import PodInfo
from .resources import Resources
from .status import Status, fit_error_message

MAX_NODE_SCORE = 100


@dataclass(frozen=True)
class Profile:
    """A scheduler profile: the schedulerName it serves and the out-of-tree plugins it adds."""

    name: str
    coscheduling: bool = False
    allocatable_score: bool = False
    permit_waiting_seconds: float = 60.0


@dataclass
class Diagnosis:
    """Why no node fits: each rejection covers a group of nodes (framework.Diagnosis)."""

    num_nodes: int
    rejections: list[tuple[Status, frozenset | set, frozenset | None, bool]] = field(default_factory=list)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

    def add(self, status: Status, members, allowed=None, outside: bool = False) -> None:
        """Nodes ``members`` (restricted to ``allowed``, or to its complement when ``outside``) got ``status``."""
        self.rejections.append((status, members, allowed, outside))

    def freeze(self) -> None:
        """Copy the node groups out of the cache, which PostFilter plugins (preemption) may change."""
        self.rejections = [(status, frozenset(names), None, False) for status, names in self.groups()]

    def groups(self):
        for status, members, allowed, outside in self.rejections:
            if allowed is None:
                names = members
            else:
                names = members - allowed if outside else members & allowed
            if names:
                yield status, names

    def reason_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for status, names in self.groups():
            for reason in status.reasons:
                counts[reason] = counts.get(reason, 0) + len(names)
        return counts

    def nodes_with_code(self, code: int) -> list[str]:
        out: list[str] = []
        for status, names in self.groups():
            if status.code == code:
                out.extend(names)
        return sorted(out)

    def message(self) -> str:
        return fit_error_message(self.num_nodes, self.reason_counts(), self.pre_filter_msg, self.post_filter_msg)


def nominated_extra(cache: SchedulerCache, pod: PodInfo, node_name: str) -> tuple[Resources | None, int]:
    """The requests of pods nominated to the node with at least the pod's priority (addGENominatedPods)."""
    nominated = [p for p in cache.nominated.get(node_name, {}).values()
                 if p.uid != pod.uid and p.priority >= pod.priority]
    if not nominated:
        return None, 0
    extra = Resources()
    for p in nominated:
        extra.cpu += p.request.cpu
        extra.memory += p.request.memory
        extra.ephemeral += p.request.ephemeral
        for k, v in p.request.scalars.items():
            extra.scalars[k] = extra.scalars.get(k, 0) + v
    return extra, len(nominated)


def filter_node(cache: SchedulerCache, pod: PodInfo, info: NodeInfo) -> Status | None:
    """RunFilterPluginsWithNominatedPods for one node: the first failing plugin's status, or None."""
    status = (nodeunschedulable.filter_class(pod.tolerations, info.unschedulable)
              or nodename.filter_node(pod.node_name, info.name)
              or tainttoleration.filter_class(pod.tolerations, info.taints)
              or nodeaffinity.filter_node(pod, info.labels, info.name))
    if status is not None:
        return status
    extra, extra_pods = nominated_extra(cache, pod, info.name)
    return noderesourcesfit.filter_node(pod, info, extra, extra_pods)


def _static_verdict(pod: PodInfo, cls) -> Status | None:
    """NodeUnschedulable then TaintToleration: identical for every node of a taint class."""
    return (nodeunschedulable.filter_class(pod.tolerations, cls.unschedulable)
            or tainttoleration.filter_class(pod.tolerations, cls.taints))


class Search:
    """The feasible nodes of one scheduling attempt, found class by class and bucket by bucket.

    Queued pods never name a node (``spec.nodeName`` pods are not scheduled), so
    NodeName always passes here; ``filter_node`` still runs it.
    """

    def __init__(self, cache: SchedulerCache, pod: PodInfo):
        self.cache = cache
        self.pod = pod
        self.diagnosis = Diagnosis(len(cache.nodes))
        self.candidates: list[tuple[Bucket, frozenset | None]] = []
        self._static = cache.static_verdicts

    def run(self) -> None:
        pod, diagnosis = self.pod, self.diagnosis
        if len(self._static) > 100_000:
            self._static.clear()
        allowed = nodeaffinity.allowed_nodes(pod, self.cache.labels)
        for cls in self.cache.classes.values():
            if not cls.members:
                continue
            memo_key = (cls.id, pod.tolerations_signature)
            if memo_key in self._static:
                verdict = self._static[memo_key]
            else:
                verdict = self._static[memo_key] = _static_verdict(pod, cls)
            if verdict is not None:
                diagnosis.add(verdict, cls.members)
                continue
            for bucket in cls.buckets.values():
                members = bucket.members
                inside = None
                if allowed is not None:
                    inside = members & allowed
                    if len(inside) != len(members):
                        diagnosis.add(nodeaffinity.REJECTION, members, allowed, outside=True)
                    if not inside:
                        continue
                    if len(inside) == len(members):
                        inside = None
                if bucket.key[0] == "nominated":
                    status = filter_node(self.cache, pod, bucket.representative)
                else:
                    status = noderesourcesfit.filter_node(pod, bucket.representative)
                if status is not None:
                    diagnosis.add(status, members, inside)
                    continue
                self.candidates.append((bucket, inside))

    # --- scoring ----------------------------------------------------------
    def select(self, profile: Profile) -> str:
        """prioritizeNodes + selectHost over the candidate groups; ties go to the smallest node name."""
        pod = self.pod
        if len(self.candidates) == 1 and self._size(self.candidates[0]) == 1:
            return self._first(self.candidates[0])
        prefer = tainttoleration.prefer_no_schedule_tolerations(pod.tolerations)
        skip_balanced = balancedallocation.skips(pod)
        affinity_sets = nodeaffinity.score_members(pod, self.cache.labels) if pod.preferred else []
        rows = []  # (resources score, taint raw, affinity raw, allocatable raw, first name)
        for bucket, inside in self.candidates:
            info = bucket.representative
            base = noderesourcesfit.score_node(pod, info)
            if not skip_balanced:
                base += balancedallocation.score_node(pod, info)
            taint = tainttoleration.score_class(prefer, info.taints)
            alloc = noderesourcesallocatable.score_node(info.alloc) if profile.allocatable_score else 0
            if affinity_sets:
                for affinity, names in _split_by_affinity(inside if inside is not None else bucket.members,
                                                          affinity_sets):
                    rows.append((base, taint, affinity, alloc, min(names)))
            else:
                rows.append((base, taint, 0, alloc, self._first((bucket, inside))))
        totals = _weighted_totals(rows, bool(affinity_sets), profile.allocatable_score)
        best = max(totals)
        return min(row[4] for row, total in zip(rows, totals) if total == best)

    @staticmethod
    def _size(candidate) -> int:
        bucket, inside = candidate
        return len(inside) if inside is not None else len(bucket.members)

    @staticmethod
    def _first(candidate) -> str:
        bucket, inside = candidate
        return bucket.first() if inside is None else min(inside)


def _split_by_affinity(names, affinity_sets) -> list[tuple[int, list[str]]]:
    by_score: dict[int, list[str]] = {}
    for name in names:
        score = sum(weight for weight, members in affinity_sets if name in members)
        by_score.setdefault(score, []).append(name)
    return list(by_score.items())


def _weighted_totals(rows, with_affinity: bool, with_allocatable: bool) -> list[int]:
    """Normalise the scores that need it over all feasible nodes, then weight and add them."""
    max_taint = max(r[1] for r in rows)
    max_affinity = max(r[2] for r in rows)
    allocatable = noderesourcesallocatable.normalize([r[3] for r in rows]) if with_allocatable else None
    totals = []
    for i, (base, taint, affinity, _alloc, _name) in enumerate(rows):
        total = base
        total += tainttoleration.WEIGHT * (MAX_NODE_SCORE if max_taint == 0
                                           else MAX_NODE_SCORE - MAX_NODE_SCORE * taint // max_taint)
        if with_affinity and max_affinity:
            total += nodeaffinity.WEIGHT * (MAX_NODE_SCORE * affinity // max_affinity)
        if allocatable is not None:
            total += noderesourcesallocatable.WEIGHT * allocatable[i]
        totals.append(total)
    return totals


