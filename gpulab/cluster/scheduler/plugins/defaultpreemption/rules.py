"""DefaultPreemption's own rules (pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go).

The candidate search and node choice live in ``evaluator``. This module
holds the plugin's own rules: who may preempt (``PodEligibleToPreemptOthers``),
which pods of a node must go (``SelectVictimsOnNode``: remove every
lower-priority pod, then reprieve the most important ones that can stay,
PodDisruptionBudget-violating ones first) and the ``preemption: `` prefix of
its messages.
"""
from __future__ import annotations

from ....selectors import label_selector_from_dict, matches_labels
from ...status import SUCCESS, UNSCHEDULABLE_AND_UNRESOLVABLE, Status, unresolvable

NAME = "DefaultPreemption"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
NEVER = "not eligible due to preemptionPolicy=Never."
TERMINATING = "not eligible due to a terminating pod on the nominated node."
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"  # v1.PodReasonPreemptionByScheduler


def wrap_message(status: Status) -> Status:
    """PostFilter: a non-empty message gets the ``preemption: `` prefix."""
    if status.message:
        return Status(status.code, ("preemption: " + status.message,), NAME)
    return status


def terminating_by_preemption(pod: dict) -> bool:
    if not pod["metadata"].get("deletionTimestamp"):
        return False
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "DisruptionTarget":
            return cond.get("status") == "True" and cond.get("reason") == REASON_PREEMPTION_BY_SCHEDULER
    return False


def eligible(cache, pod, nominated_status: Status | None) -> str:
    """PodEligibleToPreemptOthers: an empty string when the pod may preempt, else the reason it may not."""
    if (pod.spec.get("preemptionPolicy") or "") == "Never":
        return NEVER
    nominated = pod.nominated_node
    if nominated:
        if nominated_status is not None and nominated_status.code == UNSCHEDULABLE_AND_UNRESOLVABLE:
            return ""
        info = cache.nodes.get(nominated)
        if info is not None:
            for other in info.pods.values():
                if other.priority < pod.priority and terminating_by_preemption(other.pod):
                    return TERMINATING
    return ""


def more_important(now: float):
    """util.MoreImportantPod as a sort key: higher priority first, then the earlier start time."""
    return lambda pi: (-pi.priority, pi.start_time(now))


def pdb_split(victims: list, pdbs: list[dict]) -> tuple[list, list]:
    """filterPodsWithPDBViolation: (violating, non-violating), keeping the order."""
    allowed = [int((pdb.get("status") or {}).get("disruptionsAllowed") or 0) for pdb in pdbs]
    violating, non_violating = [], []
    for pi in victims:
        violated = False
        if pi.labels:
            for i, pdb in enumerate(pdbs):
                if pdb["metadata"].get("namespace") != pi.namespace:
                    continue
                selector = label_selector_from_dict((pdb.get("spec") or {}).get("selector"))
                if not selector or not matches_labels(selector, pi.labels):
                    continue
                if pi.name in ((pdb.get("status") or {}).get("disruptedPods") or {}):
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(pi)
    return violating, non_violating


def select_victims(framework, state, pod, info, pdbs: list[dict], now: float) -> tuple[list, int, Status]:
    """SelectVictimsOnNode on copies of the node and of the cycle state: (victims, PDB violations, status).

    Removing or adding a pod goes through the PreFilter extensions, so spreading and inter-pod affinity see it.
    """
    potential = [p for p in info.pods.values() if p.priority < pod.priority]
    if not potential:
        return [], 0, unresolvable(NO_VICTIMS)
    state, sim = state.clone(), info.copy()

    def remove(p) -> None:
        sim.remove_pod(p.uid)
        framework.run_remove_pod(state, pod, p, sim)

    def add(p) -> None:
        sim.add_pod(p)
        framework.run_add_pod(state, pod, p, sim)

    for p in potential:
        remove(p)
    status = framework.run_filters_with_nominated(state, pod, sim)
    if status is not None:
        return [], 0, status
    potential.sort(key=more_important(now))
    violating, non_violating = pdb_split(potential, pdbs)
    victims: list = []
    violations = 0

    def reprieve(p) -> bool:
        add(p)
        if framework.run_filters_with_nominated(state, pod, sim) is None:
            return True
        remove(p)
        victims.append(p)
        return False

    for p in violating:
        if not reprieve(p):
            violations += 1
    for p in non_violating:
        reprieve(p)
    if violating and non_violating:
        victims.sort(key=more_important(now))
    return victims, violations, Status(SUCCESS)
