"""The default scheduler against an in-memory API: placements, events, conditions, requeueing, preemption."""
from __future__ import annotations

from gpulab.cluster.api import Api
from gpulab.cluster.objects import clone
from gpulab.cluster.scheduler import DEFAULT_PROFILE, ProfileScheduler
from gpulab.cluster.scheduler.registry import REGISTRY
from gpulab.cluster.store import Store
from gpulab.cluster.topology import default_topology, node_object

GPU = "nvidia.com/gpu"
NOT_HELPFUL = "Preemption is not helpful for scheduling"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_790_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Cluster:
    """An API with the default topology (GPUs advertised as the device plugin would) and a scheduler profile."""

    def __init__(self, profile=DEFAULT_PROFILE, *, gpus=(("gpulab-worker2", 8), ("gpulab-worker3", 4)),
                 nodes=None, registry=REGISTRY):
        self.clock = FakeClock()
        self.api = Api(Store(), clock=self.clock)
        for ns in ("default", "kube-system"):
            self.api.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            self.api.create("serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount",
                                                "metadata": {"name": "default", "namespace": ns}})
        advertised = dict(gpus)
        for i, spec in enumerate(default_topology("gpulab") if nodes is None else nodes):
            node = node_object(spec, i)
            if spec.name in advertised:
                for field in ("capacity", "allocatable"):
                    node["status"][field][GPU] = str(advertised[spec.name])
            self.api.create("nodes", node)
        self.scheduler = ProfileScheduler(self.api, profile, registry)
        self.scheduler.start()

    def pod(self, name: str, gpus: int = 0, *, cpu: str | None = None, labels=None, scheduler=None, **spec) -> dict:
        container = {"name": "main", "image": "nvcr.io/nvidia/cuda:12.4.1-base"}
        resources = {}
        if gpus:
            resources["limits"] = {GPU: str(gpus)}
        if cpu:
            resources["requests"] = {"cpu": cpu}
        if resources:
            container["resources"] = resources
        body = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
                "spec": {"containers": [container], **spec}}
        if scheduler:
            body["spec"]["schedulerName"] = scheduler
        return self.api.create("pods", body)

    def run(self) -> int:
        cycles = 0
        while self.scheduler.schedule_next():
            cycles += 1
        return cycles

    def get(self, name: str) -> dict:
        return self.api.get("pods", name, "default")

    def node_of(self, name: str) -> str | None:
        return self.get(name)["spec"].get("nodeName")

    def events(self, name: str, reason: str | None = None) -> list[dict]:
        uid = self.get(name)["metadata"]["uid"] if self.api.try_get("pods", name, "default") else None
        return [e for e in self.api.list("events", "default")
                if e["involvedObject"]["name"] == name and (uid is None or e["involvedObject"]["uid"] == uid)
                and (reason is None or e["reason"] == reason)]

    def message(self, name: str) -> str:
        events = self.events(name, "FailedScheduling")
        assert len(events) == 1, events
        return events[0]["message"]

    def condition(self, name: str) -> dict:
        return next(c for c in self.get(name)["status"].get("conditions", []) if c["type"] == "PodScheduled")

    def priority_class(self, name: str, value: int) -> None:
        self.api.create("priorityclasses.scheduling.k8s.io", {
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value})

    def finish(self, name: str) -> None:
        """What the node agent does at the end of a graceful deletion."""
        self.api.delete("pods", name, "default", grace_period_seconds=0)


def test_binding_and_the_scheduled_event():
    c = Cluster()
    c.pod("infer-worker", gpus=1)
    c.run()
    assert c.node_of("infer-worker") == "gpulab-worker2"  # ties between equally good nodes go to the first name
    (event,) = c.events("infer-worker")
    assert (event["type"], event["reason"], event["source"]["component"], event["message"]) == (
        "Normal", "Scheduled", "default-scheduler", "Successfully assigned default/infer-worker to gpulab-worker2")
    assert c.condition("infer-worker")["status"] == "True"


def test_affinity_and_taint_failures_are_counted_per_node():
    c = Cluster()
    for node in ("gpulab-worker2", "gpulab-worker3"):
        c.api.patch("nodes", node, {"spec": {"taints": [{"key": GPU, "value": "present", "effect": "NoSchedule"}]}},
                    "strategic")
    c.pod("infer-worker", gpus=1, nodeSelector={"gpulab.dev/gpu": "true"})
    c.run()
    expected = ("0/4 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 3 node(s) had "
                "untolerated taint(s). preemption: 0/4 nodes are available: "
                f"4 {NOT_HELPFUL}.")
    assert c.message("infer-worker") == expected
    (event,) = c.events("infer-worker")
    assert (event["type"], event["source"]["component"]) == ("Warning", "default-scheduler")
    cond = c.condition("infer-worker")
    assert (cond["status"], cond["reason"], cond["message"], cond["observedGeneration"]) == (
        "False", "Unschedulable", expected, 1)
    assert cond["lastProbeTime"] is None


def test_full_gpus_have_no_victims_and_the_rest_cannot_help():
    c = Cluster()
    c.pod("trainer-a", gpus=8)
    c.pod("trainer-b", gpus=4)
    c.pod("late", gpus=1)
    c.run()
    assert (c.node_of("trainer-a"), c.node_of("trainer-b")) == ("gpulab-worker2", "gpulab-worker3")
    assert c.message("late") == (
        "0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 Insufficient nvidia.com/gpu. "
        "preemption: 0/4 nodes are available: 2 No preemption victims found for incoming pod, "
        f"2 {NOT_HELPFUL}.")


def test_a_deleted_pod_frees_its_node_for_the_waiting_pod():
    c = Cluster()
    c.pod("trainer-a", gpus=8)
    c.pod("late", gpus=8)
    c.run()
    assert c.node_of("late") is None
    c.api.delete("pods", "trainer-a", "default")  # graceful: still holds its GPUs
    assert c.run() == 0
    c.finish("trainer-a")
    c.run()
    assert c.node_of("late") == "gpulab-worker2"


def test_a_pod_that_completes_frees_its_resources():
    c = Cluster()
    c.pod("job", gpus=8)
    c.pod("next", gpus=8)
    c.run()
    job = c.get("job")
    c.api.update("pods", {**job, "status": {**job["status"], "phase": "Succeeded"}}, "default", subresource="status")
    c.run()
    assert c.node_of("next") == "gpulab-worker2"


def test_an_unschedulable_pod_waits_five_minutes_for_its_next_attempt_and_the_event_is_aggregated():
    c = Cluster()
    c.pod("huge", gpus=16)
    c.run()
    assert c.run() == 0
    c.clock.advance(299)
    assert c.run() == 0
    c.clock.advance(31)  # flushUnschedulablePodsLeftover runs every 30 s for pods waiting over 5 minutes
    assert c.run() == 1
    (event,) = c.events("huge", "FailedScheduling")
    assert event["count"] == 2


def test_label_taint_and_cordon_changes_requeue_pods():
    c = Cluster()
    c.pod("picky", nodeSelector={"disktype": "nvme"})
    c.run()
    c.api.patch("nodes", "gpulab-worker", {"metadata": {"labels": {"disktype": "nvme"}}}, "merge")
    c.run()
    assert c.node_of("picky") == "gpulab-worker"

    c.api.patch("nodes", "gpulab-worker3", {"spec": {"unschedulable": True}}, "merge")
    c.pod("cordoned", gpus=1, nodeSelector={"kubernetes.io/hostname": "gpulab-worker3"})
    c.run()
    # Filters stop at the first failure: the control plane's taint, then the cordon, then the selector.
    assert c.message("cordoned") == (
        "0/4 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, 2 node(s) "
        f"didn't match Pod's node affinity/selector. preemption: 0/4 nodes are "
        f"available: 4 {NOT_HELPFUL}.")
    c.api.patch("nodes", "gpulab-worker3", {"spec": {"unschedulable": None}}, "merge")
    c.run()
    assert c.node_of("cordoned") == "gpulab-worker3"


def test_scheduling_gates_hold_a_pod_without_events():
    c = Cluster()
    c.pod("gated", schedulingGates=[{"name": "example.com/quota"}])
    assert c.run() == 0
    assert c.events("gated") == []
    gated = clone(c.get("gated"))
    gated["spec"]["schedulingGates"] = []
    c.api.update("pods", gated, "default")
    c.run()
    assert c.node_of("gated") is not None


def test_pods_for_other_schedulers_or_with_a_node_are_left_alone():
    c = Cluster()
    c.pod("mine-not", scheduler="my-scheduler")
    c.pod("pinned", nodeName="gpulab-worker3")
    c.run()
    assert c.node_of("mine-not") is None and c.events("mine-not") == []
    assert c.events("pinned") == []


def test_no_nodes_is_a_scheduler_error():
    c = Cluster(nodes=[])
    c.pod("lonely")
    c.run()
    cond = c.condition("lonely")
    assert (cond["reason"], cond["message"]) == ("SchedulerError", "no nodes available to schedule pods")


def test_preemption_evicts_lower_priority_pods_and_nominates_the_node():
    c = Cluster()
    c.priority_class("batch", 100)
    c.priority_class("serving", 1000)
    c.pod("batch-a", gpus=8, priorityClassName="batch")
    c.pod("batch-b", gpus=4, priorityClassName="batch")
    c.run()
    c.pod("serving", gpus=8, priorityClassName="serving")
    c.run()
    serving = c.get("serving")
    assert serving["status"]["nominatedNodeName"] == "gpulab-worker2"
    # Preemption succeeded, so the message has no PostFilter part.
    assert c.message("serving") == ("0/4 nodes are available: 1 node(s) had untolerated taint(s), "
                                    "3 Insufficient nvidia.com/gpu.")
    victim = c.get("batch-a")
    assert victim["metadata"].get("deletionTimestamp")
    target = next(x for x in victim["status"]["conditions"] if x["type"] == "DisruptionTarget")
    assert (target["status"], target["reason"], target["message"]) == (
        "True", "PreemptionByScheduler", "default-scheduler: preempting to accommodate a higher priority pod")
    (event,) = c.events("batch-a", "Preempted")
    assert (event["type"], event["message"], event["source"]["component"]) == (
        "Normal", f"Preempted by pod {serving['metadata']['uid']} on node gpulab-worker2", "default-scheduler")
    assert c.get("batch-b")["metadata"].get("deletionTimestamp") is None

    # While the victim terminates, another attempt does not preempt again.
    c.clock.advance(331)
    c.run()
    assert c.condition("serving")["message"] == (
        "0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 Insufficient nvidia.com/gpu. "
        "preemption: not eligible due to a terminating pod on the nominated node.")
    assert len(c.events("serving", "FailedScheduling")) == 2 and len(c.events("batch-a", "Preempted")) == 1
    c.finish("batch-a")
    c.run()
    assert c.node_of("serving") == "gpulab-worker2"


def test_preemption_policy_never():
    c = Cluster(gpus=(("gpulab-worker2", 8),))
    c.api.create("priorityclasses.scheduling.k8s.io", {
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "polite"},
        "value": 1000, "preemptionPolicy": "Never"})
    c.pod("hog", gpus=8)
    c.run()
    c.pod("polite", gpus=1, priorityClassName="polite")
    c.run()
    assert c.message("polite") == ("0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 Insufficient "
                                   "nvidia.com/gpu. preemption: not eligible due to "
                                   "preemptionPolicy=Never.")
    assert c.get("hog")["metadata"].get("deletionTimestamp") is None


def test_preemption_spares_pods_protected_by_a_disruption_budget():
    for protected, expected_victim in ((None, "young"), ("young", "old")):
        c = Cluster(gpus=(("gpulab-worker2", 8),))
        c.priority_class("batch", 100)
        c.priority_class("serving", 1000)
        c.pod("old", gpus=4, priorityClassName="batch", labels={"app": "old"})
        c.pod("young", gpus=4, priorityClassName="batch", labels={"app": "young"})
        c.run()
        for name, started in (("old", "2026-01-01T00:00:00Z"), ("young", "2026-01-02T00:00:00Z")):
            pod = c.get(name)
            c.api.update("pods", {**pod, "status": {**pod["status"], "phase": "Running", "startTime": started}},
                         "default", subresource="status")
        if protected:
            pdb = c.api.create("poddisruptionbudgets.policy", {
                "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": "keep", "namespace": "default"},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": protected}}}})
            c.api.update("poddisruptionbudgets.policy", {**pdb, "status": {
                "disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1,
                "observedGeneration": 1}}, "default", subresource="status")
        c.pod("serving", gpus=4, priorityClassName="serving")
        c.run()
        deleting = {n for n in ("old", "young") if c.get(n)["metadata"].get("deletionTimestamp")}
        assert deleting == {expected_victim}
