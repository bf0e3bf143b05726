"""The preemption evaluator: find nodes where evicting lower-priority pods lets a pod in, and pick one.

Port of pkg/scheduler/framework/preemption/preemption.go (``Preempt``,
``findCandidates``, ``DryRunPreemption``, ``SelectCandidate``,
``pickOneNodeForPreemption``) for the DefaultPreemption plugin. Only nodes whose
Filter status was Unschedulable are tried (UnschedulableAndUnresolvable ones
are "Preemption is not helpful for scheduling"); the dry run stops once it has
``max(10% of those nodes, 100)`` candidates. Upstream starts the dry run at a
random offset and breaks the final tie at random; here the dry run goes by
node name and the tie goes to the first name, so results are reproducible.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...diagnosis import Diagnosis
from ...podinfo import PodInfo
from ...status import SUCCESS, UNSCHEDULABLE, Status, fit_error_message
from . import rules

MIN_CANDIDATE_NODES_PERCENTAGE = 10  # DefaultPreemptionArgs defaults
MIN_CANDIDATE_NODES_ABSOLUTE = 100
_INT32_OFFSET = 2 ** 31


@dataclass
class Candidate:
    node: str
    victims: list[PodInfo]
    pdb_violations: int


@dataclass
class Outcome:
    """The PostFilter result: a status and, when preemption ran, the node to nominate ('' clears it)."""

    status: Status
    nominated_node: str | None = None
    victims: list[PodInfo] = field(default_factory=list)


def preempt(framework, state, pod: PodInfo, diagnosis: Diagnosis, pdbs: list[dict], now: float) -> Outcome:
    cache = framework.cache
    nominated_status = diagnosis.status_of(pod.nominated_node) if pod.nominated_node else None
    reason = rules.eligible(cache, pod, nominated_status)
    if reason:
        return Outcome(Status(UNSCHEDULABLE, (reason,)))
    statuses: dict[str, Status] = {}
    candidates: list[Candidate] = []
    without_victims = 0  # potential nodes known to hold no lower-priority pod, not evaluated one by one
    if cache.has_pods_below(pod.priority):
        potential = diagnosis.nodes_with_code(UNSCHEDULABLE)
    else:
        potential = []
        without_victims = sum(len(names) for status, names in diagnosis.groups() if status.code == UNSCHEDULABLE)
    if potential:
        wanted = max(len(potential) * MIN_CANDIDATE_NODES_PERCENTAGE // 100, MIN_CANDIDATE_NODES_ABSOLUTE)
        wanted = min(wanted, len(potential))
        non_violating = 0
        for name in potential:
            info = cache.nodes.get(name)
            if info is None:
                continue
            victims, violations, status = rules.select_victims(framework, state, pod, info, pdbs, now)
            if status.code == SUCCESS and victims:
                candidates.append(Candidate(name, victims, violations))
                non_violating += violations == 0
                if non_violating and len(candidates) >= wanted:
                    break
                continue
            statuses[name] = status
    if not candidates:
        counts: dict[str, int] = {rules.NO_VICTIMS: without_victims} if without_victims else {}
        for status in statuses.values():
            for r in status.reasons:
                counts[r] = counts.get(r, 0) + 1
        absent = diagnosis.num_nodes - len(statuses) - without_victims
        if absent > 0:
            counts[rules.NOT_HELPFUL] = counts.get(rules.NOT_HELPFUL, 0) + absent
        return Outcome(Status(UNSCHEDULABLE, (fit_error_message(diagnosis.num_nodes, counts),)), nominated_node="")
    best = pick_one(candidates, now)
    return Outcome(Status(SUCCESS), nominated_node=best.node, victims=best.victims)


def pick_one(candidates: list[Candidate], now: float) -> Candidate:
    """pickOneNodeForPreemption: fewest PDB violations, lowest highest victim priority, lowest priority sum,
    fewest victims, latest earliest start time among the highest-priority victims; then the first."""
    if len(candidates) == 1:
        return candidates[0]

    def earliest_top_start(c: Candidate) -> float:
        top = max(v.priority for v in c.victims)
        return min(v.start_time(now) for v in c.victims if v.priority == top)

    score_funcs = (
        lambda c: -c.pdb_violations,
        lambda c: -c.victims[0].priority,
        lambda c: -sum(v.priority + _INT32_OFFSET for v in c.victims),
        lambda c: -len(c.victims),
        earliest_top_start,
    )
    remaining = sorted(candidates, key=lambda c: c.node)
    for score in score_funcs:
        best = max(score(c) for c in remaining)
        remaining = [c for c in remaining if score(c) == best]
        if len(remaining) == 1:
            break
    return remaining[0]

