"""scheduler-plugins' second scheduler: gangs placed all or nothing, PodGroup status, and the deadlock without it."""
from __future__ import annotations

import asyncio
from pathlib import Path

import yaml

from gpulab.cluster.api import Api
from gpulab.cluster.scheduler import PLUGINS_PROFILE, Scheduler
from gpulab.cluster.scheduler.plugins.coscheduling.plugin import PODGROUPS
from gpulab.cluster.scheduler.plugins.coscheduling.podgroup_status import PodGroupStatusController
from gpulab.cluster.store import Store
from test_scheduler import Cluster

CRD = Path(__file__).resolve().parents[2] / "gpulab" / "cluster" / "crds" / "scheduling.x-k8s.io_podgroups.yaml"
SECOND = "scheduler-plugins-scheduler"
LABEL = "scheduling.x-k8s.io/pod-group"
NOT_HELPFUL = "Preemption is not helpful for scheduling"


def install_crd(api: Api) -> None:
    for doc in yaml.safe_load_all(CRD.read_text()):
        if doc:
            api.create("customresourcedefinitions.apiextensions.k8s.io", doc)


def gang_cluster(**kw) -> Cluster:
    c = Cluster(PLUGINS_PROFILE, **kw)
    install_crd(c.api)
    return c


def pod_group(c: Cluster, name: str, min_member: int, **spec) -> None:
    c.api.create(PODGROUPS, {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                             "metadata": {"name": name, "namespace": "default"},
                             "spec": {"minMember": min_member, **spec}})
    c.clock.advance(1)


def test_the_second_scheduler_starts_once_the_crd_is_served():
    async def scenario():
        c = Cluster(nodes=[])  # an API with namespaces; the component brings its own profiles
        api = Api(Store())
        api.store, api.registry = c.api.store, c.api.registry
        api.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                             "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}})
        scheduler = Scheduler(api)
        task = asyncio.create_task(scheduler.run())
        api.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gang-0", "namespace": "default"},
                            "spec": {"schedulerName": SECOND, "containers": [{"name": "c", "image": "x"}]}})
        await asyncio.sleep(0.05)
        assert api.get("pods", "gang-0", "default")["spec"].get("nodeName") is None
        assert api.list("events", "default") == []
        install_crd(api)
        for _ in range(200):
            await asyncio.sleep(0.01)
            if api.get("pods", "gang-0", "default")["spec"].get("nodeName"):
                break
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        (event,) = api.list("events", "default")
        assert (event["reason"], event["source"]["component"], event["message"]) == (
            "Scheduled", SECOND, "Successfully assigned default/gang-0 to n1")
    asyncio.run(scenario())


def test_prefilter_waits_for_min_member_pods():
    c = gang_cluster()
    pod_group(c, "pg1", 3, scheduleTimeoutSeconds=10)
    for i in range(2):
        c.pod(f"pause-{i}", scheduler=SECOND, labels={LABEL: "pg1"})
    c.run()
    assert c.message("pause-0") == (
        "0/4 nodes are available: pre-filter pod pause-0 cannot find enough sibling pods, current pods number: 2, "
        f"minMember of group: 3. preemption: 0/4 nodes are available: 4 {NOT_HELPFUL}., "
        "PodGroup default/pg1 gets rejected due to Pod pause-0 is unschedulable even after PostFilter")
    assert c.events("pause-0")[0]["source"]["component"] == SECOND
    c.pod("pause-2", scheduler=SECOND, labels={LABEL: "pg1"})  # a new pod requeues the group
    c.run()
    assert all(c.node_of(f"pause-{i}") for i in range(3))


def test_gangs_are_placed_all_or_nothing():
    c = gang_cluster(gpus=(("gpulab-worker2", 8),))
    pod_group(c, "a", 4)
    pod_group(c, "b", 4)
    for i in range(4):
        for job in ("a", "b"):  # the job controllers create their pods interleaved
            c.pod(f"{job}-{i}", gpus=2, scheduler=SECOND, labels={LABEL: job})
    c.run()
    assert [c.node_of(f"a-{i}") for i in range(4)] == ["gpulab-worker2"] * 4
    assert [c.node_of(f"b-{i}") for i in range(4)] == [None] * 4
    assert c.message("b-0") == (
        "0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 Insufficient nvidia.com/gpu. "
        "preemption: 0/4 nodes are available: 1 No preemption victims found for incoming pod, "
        f"3 {NOT_HELPFUL}., PodGroup default/b gets rejected due to Pod b-0 is unschedulable even after PostFilter")


def test_the_default_scheduler_deadlocks_two_gangs():
    c = Cluster(gpus=(("gpulab-worker2", 8),))
    for i in range(4):
        for job in ("a", "b"):
            c.pod(f"{job}-{i}", gpus=2, labels={LABEL: job})
    c.run()
    placed = {job: sum(1 for i in range(4) if c.node_of(f"{job}-{i}")) for job in ("a", "b")}
    assert placed == {"a": 2, "b": 2}  # each job holds half of the GPUs and neither can start


def test_a_gang_that_cannot_complete_times_out_at_permit():
    c = gang_cluster()
    pod_group(c, "g", 3, scheduleTimeoutSeconds=5)
    c.pod("g-0", gpus=1, scheduler=SECOND, labels={LABEL: "g"})
    c.pod("g-1", gpus=1, scheduler=SECOND, labels={LABEL: "g"})
    c.pod("g-2", gpus=1, scheduler=SECOND, labels={LABEL: "g"}, schedulingGates=[{"name": "example.com/hold"}])
    c.run()
    assert set(c.scheduler.waiting) == {c.get("g-0")["metadata"]["uid"], c.get("g-1")["metadata"]["uid"]}
    assert c.node_of("g-0") is None and c.events("g-0") == []
    c.clock.advance(5)
    c.scheduler.run_timers()
    assert c.message("g-0") == "rejected due to timeout after waiting 5s at plugin Coscheduling"
    assert c.message("g-1") == "rejection in Unreserve"
    assert c.condition("g-0")["reason"] == "Unschedulable"
    assert c.scheduler.cache.node_of(c.get("g-0")["metadata"]["uid"]) is None  # the reservation is released


def test_a_missing_pod_group_is_rejected_at_permit():
    c = gang_cluster()
    c.pod("orphan", scheduler=SECOND, labels={LABEL: "missing"})
    c.run()
    assert c.message("orphan") == "0/1 nodes are available: 1 PodGroup not found."


def test_pod_group_status_follows_its_pods():
    c = gang_cluster(gpus=(("gpulab-worker2", 8),))
    controller = PodGroupStatusController(c.api)

    def reconcile() -> dict:
        asyncio.run(controller.reconcile(("default", "job")))
        return c.api.get(PODGROUPS, "job", "default").get("status", {})

    pod_group(c, "job", 2)
    assert reconcile() == {"phase": "Pending"}
    for i in range(2):
        c.pod(f"job-{i}", gpus=1, scheduler=SECOND, labels={LABEL: "job"})
    assert reconcile() == {"phase": "Scheduling"}
    c.run()
    assert reconcile() == {"phase": "Scheduling"}
    for i, phase in enumerate(("Running", "Running")):
        pod = c.get(f"job-{i}")
        c.api.update("pods", {**pod, "status": {**pod["status"], "phase": phase}}, "default", subresource="status")
    assert reconcile() == {"phase": "Running", "running": 2}
    pod = c.get("job-0")
    c.api.update("pods", {**pod, "status": {**pod["status"], "phase": "Succeeded"}}, "default", subresource="status")
    assert reconcile() == {"phase": "Running", "running": 1, "succeeded": 1}
    pod = c.get("job-1")
    c.api.update("pods", {**pod, "status": {**pod["status"], "phase": "Failed"}}, "default", subresource="status")
    assert reconcile() == {"phase": "Failed", "succeeded": 1, "failed": 1}
    pod = c.get("job-1")
    assert reconcile() == {"phase": "Failed", "succeeded": 1, "failed": 1}  # final
