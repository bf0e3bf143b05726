"""Native gang scheduling (KEP-4671, scheduling.k8s.io/v1beta1 PodGroups, the GangScheduling plugin) against an
in-memory API: gated as in v1.37, all-or-nothing admission, the queue messages, the timeout, the PodGroup condition."""
from __future__ import annotations

import pytest

from gpulab.cluster import features
from gpulab.cluster.errors import ApiError

from test_scheduler import Cluster

PODGROUPS = "podgroups.scheduling.k8s.io"


@pytest.fixture
def gates(monkeypatch):
    monkeypatch.setenv(features.ENV, "GenericWorkload=true")
    features.gates.cache_clear()
    yield
    monkeypatch.delenv(features.ENV)
    features.gates.cache_clear()


class GangCluster(Cluster):
    def pod_group(self, name: str, min_count: int) -> dict:
        return self.api.create(PODGROUPS, {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                                           "metadata": {"name": name, "namespace": "default"},
                                           "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}},
                               "default")

    def member(self, name: str, group: str, gpus: int) -> dict:
        return self.pod(name, gpus, schedulingGroup={"podGroupName": group})


def test_the_api_and_the_plugin_are_off_by_default_as_in_v1_37():
    c = Cluster()
    with pytest.raises(KeyError):
        c.api.registry.by_key(PODGROUPS)


def test_a_gang_binds_all_or_nothing(gates):
    c = GangCluster()  # 8 GPUs on gpulab-worker2, 4 on gpulab-worker3
    c.pod_group("train", 3)
    c.member("train-0", "train", 4)
    c.member("train-1", "train", 4)
    c.run()
    # two of three members exist: both wait outside the queue, nothing is held
    assert c.node_of("train-0") is None and not c.scheduler.waiting and not c.events("train-0")
    c.member("train-2", "train", 4)
    c.run()
    assert {c.node_of(f"train-{i}") for i in range(3)} == {"gpulab-worker2", "gpulab-worker3"}
    condition = c.api.get(PODGROUPS, "train", "default")["status"]["conditions"][0]
    assert (condition["type"], condition["status"], condition["reason"]) == ("PodGroupInitiallyScheduled", "True",
                                                                            "Scheduled")


def test_a_gang_that_cannot_fit_holds_nothing_and_says_why(gates):
    c = GangCluster()
    c.pod_group("big", 4)
    for i in range(4):
        c.member(f"big-{i}", "big", 4)
    c.run()
    # three of four fit (12 GPUs), so the group cycle undoes their placements: nothing waits, nothing is held
    assert not c.scheduler.waiting and all(c.node_of(f"big-{i}") is None for i in range(4))
    assert not any(c.scheduler.cache.node_of(c.get(f"big-{i}")["metadata"]["uid"]) for i in range(4))
    messages = [e["message"] for i in range(4) for e in c.events(f"big-{i}", "FailedScheduling")]
    assert messages.count("pod group is unschedulable, minCount (4) cannot be satisfied: 3 scheduled, 0 remaining") \
        == 3
    assert sum(m.startswith("0/4 nodes are available:") and "Insufficient nvidia.com/gpu" in m for m in messages) == 1
    # the GPUs stay free for a pod outside the gang
    c.pod("solo", 4)
    c.run()
    assert c.node_of("solo") is not None


def test_two_gangs_that_together_overfill_the_gpus_do_not_deadlock(gates):
    c = GangCluster()  # 8 + 4 GPUs: each gang of three 3-GPU pods fits alone (2 + 1), both do not
    for gang in ("a", "b"):
        c.pod_group(gang, 3)
    for i in range(3):  # interleaved, as two jobs' pods arrive
        for gang in ("a", "b"):
            c.member(f"{gang}-{i}", gang, 3)
    c.run()
    bound = {gang: sum(c.node_of(f"{gang}-{i}") is not None for i in range(3)) for gang in ("a", "b")}
    assert sorted(bound.values()) == [0, 3] and not c.scheduler.waiting
    loser = "a" if bound["a"] == 0 else "b"
    messages = {e["message"] for i in range(3) for e in c.events(f"{loser}-{i}", "FailedScheduling")}
    # the first gang placed leaves 2 + 1 GPUs: the other's first pod fits nowhere, so its group cycle ends there
    assert "pod group is unschedulable, minCount (3) cannot be satisfied: 0 scheduled, 2 remaining" in messages
    assert any(m.startswith("0/4 nodes are available:") for m in messages)


def test_a_pod_naming_a_missing_group_waits_for_it(gates):
    c = GangCluster()
    c.member("orphan", "later", 1)
    c.run()
    qpi = c.scheduler.queue.get(c.get("orphan")["metadata"]["uid"])
    assert qpi.gated_by.message == 'waiting for pod\'s pod group "later" to appear in scheduling queue'
    c.pod_group("later", 1)
    c.run()
    assert c.node_of("orphan") in {"gpulab-worker2", "gpulab-worker3"}  # the GPU nodes; ties are random


def test_pod_group_validation(gates):
    c = GangCluster()
    with pytest.raises(ApiError) as err:
        c.pod_group("zero", 0)
    assert 'spec.schedulingPolicy.gang.minCount: Invalid value: 0: must be greater than zero' in err.value.message
    c.pod_group("fixed", 2)
    with pytest.raises(ApiError) as err:
        c.api.patch(PODGROUPS, "fixed", {"spec": {"schedulingPolicy": {"gang": {"minCount": 3}}}}, "merge",
                    "default")
    assert "field is immutable" in err.value.message
