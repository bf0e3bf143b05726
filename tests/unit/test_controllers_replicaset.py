"""The ReplicaSet controller: pods from the template, adoption, deletion order, status."""
from __future__ import annotations

import re

from controller_sim import simulated

from gpulab.cluster.controllers.replicaset import ReplicaSetController
from gpulab.cluster.objects import clone

RS = "replicasets.apps"
SUFFIX = "[bcdfghjklmnpqrstvwxz2456789]{5}"


def replicaset(replicas: int, **spec) -> dict:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "api"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "api"}},
                     "template": {"metadata": {"labels": {"app": "api", "tier": "be"},
                                               "annotations": {"team": "ml"}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}, **spec}}


def bare_pod(name: str, labels: dict) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def scale(sim, replicas: int) -> None:
    rs = clone(sim.api.get(RS, "api", "default"))
    rs["spec"]["replicas"] = replicas
    sim.api.update(RS, rs, "default")


@simulated
async def test_creates_named_owned_pods_from_the_template(sim):
    sim.start(ReplicaSetController(sim.api))
    rs = sim.api.create(RS, replicaset(2), "default")
    await sim.kubelet()
    pods = sim.pods()
    assert len(pods) == 2
    for pod in pods:
        assert re.fullmatch(f"api-{SUFFIX}", pod["metadata"]["name"])
        assert pod["metadata"]["generateName"] == "api-"
        assert pod["metadata"]["labels"] == {"app": "api", "tier": "be"}
        assert pod["metadata"]["annotations"] == {"team": "ml"}
        assert pod["metadata"]["ownerReferences"] == [{
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "api", "uid": rs["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}]
    assert sorted(sim.events(kind="ReplicaSet")) == sorted(
        ("SuccessfulCreate", f"Created pod: {p['metadata']['name']}") for p in pods)
    assert all(e["source"]["component"] == "replicaset-controller" for e in sim.api.list("events", "default"))
    status = sim.api.get(RS, "api", "default")["status"]
    assert status == {"replicas": 2, "fullyLabeledReplicas": 2, "readyReplicas": 2, "availableReplicas": 2,
                      "terminatingReplicas": 0, "observedGeneration": 1}


@simulated
async def test_adopts_matching_orphans_and_releases_pods_that_stop_matching(sim):
    sim.start(ReplicaSetController(sim.api))
    sim.api.create("pods", bare_pod("stray", {"app": "api"}), "default")
    rs = sim.api.create(RS, replicaset(2), "default")
    await sim.settle()
    stray = sim.api.get("pods", "stray", "default")
    assert stray["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]
    assert len(sim.pods()) == 2  # the orphan counts: only one pod was created
    # The stray pod lacks the tier label: matched by the selector but not fully labeled.
    assert sim.api.get(RS, "api", "default")["status"]["fullyLabeledReplicas"] == 1

    sim.api.patch("pods", "stray", {"metadata": {"labels": {"app": "other"}}}, "merge", "default")
    await sim.settle()
    assert "ownerReferences" not in sim.api.get("pods", "stray", "default")["metadata"]
    assert len(sim.pods(app="api")) == 2


@simulated
async def test_scale_down_deletes_unscheduled_then_pending_then_not_ready_first(sim):
    sim.start(ReplicaSetController(sim.api))
    sim.api.create(RS, replicaset(4), "default")
    await sim.settle()
    a, b, c, d = sim.pods()
    for pod in (b, c, d):
        sim.api.bind("default", pod["metadata"]["name"], "node-a")
    sim.set_phase(c, "Running", ready=False)
    sim.set_phase(d, "Running", ready=True)
    names = [p["metadata"]["name"] for p in (a, b, c, d)]
    remaining = []
    for replicas in (3, 2, 1):
        scale(sim, replicas)
        await sim.settle()
        sim.confirm_deletions()
        remaining.append(sorted(p["metadata"]["name"] for p in sim.pods()))
    assert remaining == [sorted(names[1:]), sorted(names[2:]), [names[3]]]


@simulated
async def test_available_waits_for_min_ready_seconds(sim):
    sim.start(ReplicaSetController(sim.api))
    sim.api.create(RS, replicaset(1, minReadySeconds=10), "default")
    await sim.kubelet()
    status = sim.api.get(RS, "api", "default")["status"]
    assert status["readyReplicas"] == 1 and "availableReplicas" not in status
    sim.advance(11)
    sim.resync()
    await sim.settle()
    assert sim.api.get(RS, "api", "default")["status"]["availableReplicas"] == 1


@simulated
async def test_failed_creation_is_an_event_and_a_replica_failure_condition(sim):
    sim.api.delete("serviceaccounts", "default", "default")
    sim.start(ReplicaSetController(sim.api))
    sim.api.create(RS, replicaset(1), "default")
    await sim.settle()
    (reason, message), *_ = sim.events(kind="ReplicaSet")
    assert reason == "FailedCreate"
    assert re.fullmatch(r'Error creating: pods "api-\w*" is forbidden: error looking up service account '
                        r'default/default: serviceaccount "default" not found', message)
    (cond,) = sim.api.get(RS, "api", "default")["status"]["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("ReplicaFailure", "True", "FailedCreate")
    assert cond["message"] == message.removeprefix("Error creating: ")
