"""The scheduler's plugins and messages as pure functions: exact upstream strings and scores."""
from __future__ import annotations

import random

from gpulab.cluster.scheduler import status
from gpulab.cluster.scheduler.cache import NodeInfo
from gpulab.cluster.scheduler.nodeselectors import LabelIndex, RequiredSelector, term_matches
from gpulab.cluster.scheduler.plugins import (balancedallocation, noderesourcesallocatable, noderesourcesfit,
                                              tainttoleration)
from gpulab.cluster.scheduler.plugins.defaultpreemption import evaluator, rules
from gpulab.cluster.scheduler.plugins.nodeunschedulable import NodeUnschedulable
from gpulab.cluster.scheduler.plugins.schedulinggates import SchedulingGates
from gpulab.cluster.scheduler.plugins.tainttoleration import TaintToleration
from gpulab.cluster.scheduler.podinfo import PodInfo
from gpulab.cluster.scheduler.resources import Resources, pod_non_zero_requests, pod_requests


def pod(containers=(), init=(), **spec) -> dict:
    return {"metadata": {"name": "p", "namespace": "default", "uid": "u"},
            "spec": {"containers": list(containers), "initContainers": list(init), **spec}}


def node(taints=(), unschedulable=False) -> NodeInfo:
    info = NodeInfo("n")
    info.set_node({"metadata": {"name": "n"}, "spec": {"taints": list(taints), "unschedulable": unschedulable}})
    return info


def tolerating(*tolerations) -> PodInfo:
    return PodInfo(pod(tolerations=list(tolerations)))


def container(name="c", restart=None, **requests) -> dict:
    c = {"name": name, "resources": {"requests": {k.replace("_", "-"): v for k, v in requests.items()}}}
    if restart:
        c["restartPolicy"] = restart
    return c


# --- messages ----------------------------------------------------------------
def test_fit_error_counts_reasons_and_sorts_them_as_strings():
    msg = status.fit_error_message(12, {"Insufficient cpu": 10, "Insufficient memory": 2},
                                   post_filter_msg="preemption: 0/12 nodes are available: 12 Preemption is not "
                                                   "helpful for scheduling.")
    # "10 ..." sorts before "2 ..." because upstream sorts the formatted strings.
    assert msg == ("0/12 nodes are available: 10 Insufficient cpu, 2 Insufficient memory. preemption: 0/12 nodes "
                   "are available: 12 Preemption is not helpful for scheduling.")


def test_fit_error_with_a_prefilter_message_has_no_histogram():
    assert status.fit_error_message(3, {"x": 3}, pre_filter_msg="pod has unbound immediate PersistentVolumeClaims") \
        == "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims."


def test_event_messages_are_truncated_to_the_note_length_limit():
    long = "x" * 1100
    out = status.truncate_message(long)
    assert len(out) == 1024 and out.endswith("x ...")
    assert status.truncate_message("short") == "short"


# --- requests ------------------------------------------------------------------
def test_pod_requests_take_the_max_of_init_containers_and_the_sum_of_containers():
    # The example in the comment of computePodResourceRequest (noderesources/fit.go).
    p = pod([container(cpu="2", memory="1G"), container(cpu="1", memory="1G")],
            [container(cpu="2", memory="1G"), container(cpu="2", memory="3G")])
    req = pod_requests(p)
    assert (req.cpu, req.memory) == (3000, 3_000_000_000)


def test_sidecars_add_up_and_overhead_is_added():
    p = pod([container(cpu="1")], [container("sidecar", restart="Always", cpu="1"), container("init", cpu="2")],
            overhead={"cpu": "250m"})
    assert pod_requests(p).cpu == 3250  # max(1 + 1, 1 + 2) + 250m


def test_pod_level_requests_override_cpu_and_memory():
    p = pod([container(cpu="1", memory="1Gi")], resources={"requests": {"cpu": "4"}})
    req = pod_requests(p)
    assert (req.cpu, req.memory) == (4000, 1024 ** 3)


def test_extended_resources_are_scalar_and_rounded_up():
    p = pod([container(**{"nvidia.com/gpu": "2", "hugepages-2Mi": "4Mi", "cpu": "100m"})])
    req = pod_requests(p)
    assert req.scalars == {"nvidia.com/gpu": 2, "hugepages-2Mi": 4 * 1024 ** 2} and req.cpu == 100


def test_non_zero_requests_default_each_container_without_requests():
    p = pod([container(), container(cpu="1")])
    assert pod_non_zero_requests(p) == (1100, 2 * 200 * 1024 * 1024)


# --- NodeResourcesFit -----------------------------------------------------------
def test_fit_reasons_in_upstream_order_and_unresolvable_when_larger_than_the_node():
    alloc = Resources(4000, 8 * 1024 ** 3, 0, {"nvidia.com/gpu": 8})
    used = Resources(3500, 0, 0, {"nvidia.com/gpu": 8})
    st = noderesourcesfit.insufficient(Resources(1000, 0, 0, {"nvidia.com/gpu": 1}), alloc, 2, used, 2)
    assert st.reasons == ("Too many pods", "Insufficient cpu", "Insufficient nvidia.com/gpu")
    assert st.code == status.UNSCHEDULABLE
    st = noderesourcesfit.insufficient(Resources(0, 0, 0, {"nvidia.com/gpu": 16}), alloc, 110, Resources(), 0)
    assert st.reasons == ("Insufficient nvidia.com/gpu",) and st.code == status.UNSCHEDULABLE_AND_UNRESOLVABLE
    # A node that does not advertise the resource at all.
    st = noderesourcesfit.insufficient(Resources(0, 0, 0, {"nvidia.com/gpu": 1}), Resources(4000), 110,
                                       Resources(), 0)
    assert st.reasons == ("Insufficient nvidia.com/gpu",) and st.code == status.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_a_pod_requesting_nothing_only_checks_the_pod_count():
    assert noderesourcesfit.insufficient(Resources(), Resources(), 1, Resources(), 0) is None
    assert noderesourcesfit.insufficient(Resources(), Resources(), 1, Resources(), 1).reasons == ("Too many pods",)


def test_least_allocated_scores_match_upstream_table():
    # least_allocated_test.go "nothing scheduled, resources requested, differently sized nodes".
    request = (3000, 5000)
    assert noderesourcesfit.least_allocated(request, Resources(4000, 10000), (0, 0)) == 37
    assert noderesourcesfit.least_allocated(request, Resources(6000, 10000), (0, 0)) == 50


def test_balanced_allocation_scores_match_upstream_table():
    # balanced_allocation_test.go "nothing scheduled, resources requested, differently sized nodes".
    assert balancedallocation.balanced((3000, 5000), Resources(4000, 10000), Resources()) == 87
    assert balancedallocation.balanced((3000, 5000), Resources(6000, 10000), Resources()) == 100


def test_allocatable_prefers_smaller_nodes():
    small, big = noderesourcesallocatable.score_node(Resources(4000, 8 << 30)), \
        noderesourcesallocatable.score_node(Resources(96000, 1 << 40))
    assert noderesourcesallocatable.normalize([small, big]) == [100, 0]


# --- taints, cordons, gates -------------------------------------------------------
def test_untolerated_taints_and_what_tolerates_them():
    taints = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    plugin = TaintToleration(None)
    assert plugin.filter(None, tolerating(), node(taints)).reasons == ("node(s) had untolerated taint(s)",)
    for toleration in ({"key": "nvidia.com/gpu", "operator": "Exists"},
                       {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                       {"operator": "Exists"}):
        assert plugin.filter(None, tolerating(toleration), node(taints)) is None
    for toleration in ({"key": "nvidia.com/gpu", "value": "other"},
                       {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}):
        assert plugin.filter(None, tolerating(toleration), node(taints)) is not None
    assert plugin.filter(None, tolerating(), node([{"key": "k", "effect": "PreferNoSchedule"}])) is None


def test_prefer_no_schedule_taints_are_counted_for_scoring():
    taints = [{"key": "a", "effect": "PreferNoSchedule"}, {"key": "b", "effect": "PreferNoSchedule"},
              {"key": "c", "effect": "NoSchedule"}]
    prefer = tainttoleration.prefer_no_schedule_tolerations(
        [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists", "effect": "NoSchedule"}])
    assert tainttoleration.intolerable_prefer_no_schedule(prefer, taints) == 1
    assert tainttoleration.TaintToleration(None).normalize_score(None, None, [0, 1, 2]) == [100, 50, 0]


def test_cordoned_nodes_unless_the_pod_tolerates_the_unschedulable_taint():
    plugin = NodeUnschedulable(None)
    assert plugin.filter(None, tolerating(), node(unschedulable=True)).reasons == ("node(s) were unschedulable",)
    tolerate = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
    assert plugin.filter(None, tolerating(tolerate), node(unschedulable=True)) is None


def test_scheduling_gates_hold_the_pod():
    gated = pod(schedulingGates=[{"name": "example.com/a"}, {"name": "example.com/b"}])
    assert SchedulingGates(None).pre_enqueue(PodInfo(gated)).reasons == (
        "waiting for scheduling gates: [example.com/a example.com/b]",)
    assert SchedulingGates(None).pre_enqueue(PodInfo(pod())) is None


# --- node selectors ---------------------------------------------------------------
def test_label_index_agrees_with_matching_node_by_node():
    rng = random.Random(7)
    keys, values = ["zone", "gpu", "tier", "cores"], ["a", "b", "c", "10", "20"]
    index = LabelIndex()
    labels = {}
    for i in range(60):
        name = f"n{i}"
        labels[name] = {k: rng.choice(values) for k in keys if rng.random() < 0.7}
        index.set(name, labels[name])
    ops = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    for _ in range(300):
        terms = []
        for _ in range(rng.randint(0, 3)):
            exprs = []
            for _ in range(rng.randint(0, 2)):
                op = rng.choice(ops)
                vals = [] if op in ("Exists", "DoesNotExist") else (
                    [str(rng.choice([5, 15, 25]))] if op in ("Gt", "Lt") else rng.sample(values, 2))
                exprs.append({"key": rng.choice(keys), "operator": op, "values": vals})
            fields = [{"key": "metadata.name", "operator": rng.choice(["In", "NotIn"]),
                       "values": [f"n{rng.randrange(60)}"]}] if rng.random() < 0.2 else []
            terms.append({"matchExpressions": exprs, "matchFields": fields})
        spec = {"nodeSelector": {rng.choice(keys): rng.choice(values)}} if rng.random() < 0.3 else {}
        if rng.random() < 0.7:
            spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                                                 {"nodeSelectorTerms": terms}}}
        selector = RequiredSelector({"spec": spec})
        expected = {n for n, lab in labels.items() if selector.matches(lab, n)}
        assert (set(index.required_members(selector)) if selector else set(labels)) == expected
        for term in terms:
            assert set(index.term_members(term)) == {n for n, lab in labels.items() if term_matches(term, lab, n)}


def test_an_empty_term_selects_nothing():
    selector = RequiredSelector({"spec": {"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]}}}}})
    assert not selector.matches({"a": "b"}, "n")


# --- preemption ---------------------------------------------------------------------
def victim(name, priority, labels=None, start=None) -> PodInfo:
    p = {"metadata": {"name": name, "namespace": "default", "uid": name, "labels": labels or {}},
         "spec": {"containers": [], "priority": priority}, "status": {"startTime": start} if start else {}}
    return PodInfo(p)


def test_pdb_split_counts_down_disruptions_allowed():
    pdb = {"metadata": {"namespace": "default"}, "spec": {"selector": {"matchLabels": {"app": "a"}}},
           "status": {"disruptionsAllowed": 1}}
    pods = [victim("a1", 0, {"app": "a"}), victim("a2", 0, {"app": "a"}), victim("b", 0, {"app": "b"})]
    violating, non_violating = rules.pdb_split(pods, [pdb])
    assert [p.name for p in violating] == ["a2"] and [p.name for p in non_violating] == ["a1", "b"]
    empty = {**pdb, "spec": {"selector": {}}}
    assert rules.pdb_split(pods, [empty])[0] == []


def test_pick_one_node_for_preemption_criteria():
    c = evaluator.Candidate
    low, mid = victim("l", 1), victim("m", 5)
    assert evaluator.pick_one([c("n1", [low], 1), c("n2", [mid], 0)], 0).node == "n2"  # fewer PDB violations
    assert evaluator.pick_one([c("n1", [mid], 0), c("n2", [low], 0)], 0).node == "n2"  # lower top priority
    assert evaluator.pick_one([c("n1", [low, low], 0), c("n2", [low], 0)], 0).node == "n2"  # lower sum
    early, late = victim("e", 1, start="2026-01-01T00:00:00Z"), victim("t", 1, start="2026-01-02T00:00:00Z")
    assert evaluator.pick_one([c("n1", [early], 0), c("n2", [late], 0)], 0).node == "n2"  # latest start
    assert evaluator.pick_one([c("n2", [low], 0), c("n1", [low], 0)], 0).node == "n1"  # first name


def test_preemption_messages_are_prefixed():
    st = rules.wrap_message(status.Status(status.UNSCHEDULABLE, (rules.NEVER,)))
    assert st.message == "preemption: not eligible due to preemptionPolicy=Never."
