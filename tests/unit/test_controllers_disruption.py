"""PodDisruptionBudget status, and the eviction API refusing what the budget forbids."""
from __future__ import annotations

import pytest
from controller_sim import SimCluster, simulated

from gpulab.cluster.controllers.deployment import DeploymentController
from gpulab.cluster.controllers.disruption import DisruptionController
from gpulab.cluster.controllers.replicaset import ReplicaSetController
from gpulab.cluster.errors import ApiError
from gpulab.cluster.objects import rfc3339

PDB = "poddisruptionbudgets.policy"


def pdb(name: str, **spec) -> dict:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec}}


async def start(sim: SimCluster, replicas: int = 3) -> None:
    sim.start(DeploymentController(sim.api), ReplicaSetController(sim.api), DisruptionController(sim.api))
    sim.api.create("deployments.apps", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}, "default")
    await sim.kubelet()


def summary(sim: SimCluster, name: str) -> dict:
    status = sim.api.get(PDB, name, "default")["status"]
    (cond,) = status["conditions"]
    return {**{k: v for k, v in status.items() if k != "conditions"},
            "condition": (cond["type"], cond["status"], cond["reason"], cond["message"])}


@simulated
async def test_min_available_status_and_eviction(sim):
    await start(sim)
    sim.api.create(PDB, pdb("web-pdb", minAvailable=2), "default")
    await sim.settle()
    assert summary(sim, "web-pdb") == {"observedGeneration": 1, "disruptionsAllowed": 1, "currentHealthy": 3,
                                       "desiredHealthy": 2, "expectedPods": 3,
                                       "condition": ("DisruptionAllowed", "True", "SufficientPods", "")}
    first, second, _ = sim.pods()
    sim.api.evict("default", first["metadata"]["name"])
    await sim.settle()
    assert summary(sim, "web-pdb")["disruptionsAllowed"] == 0
    assert summary(sim, "web-pdb")["condition"] == ("DisruptionAllowed", "False", "InsufficientPods", "")
    with pytest.raises(ApiError) as refused:
        sim.api.evict("default", second["metadata"]["name"])
    assert refused.value.code == 429
    assert refused.value.message == "Cannot evict pod as it would violate the pod's disruption budget."
    assert refused.value.details["causes"] == [{"reason": "DisruptionBudget",
                                                "message": "The disruption budget web-pdb needs 2 healthy pods "
                                                           "and has 2 currently"}]
    # The replacement becomes ready: the budget allows one disruption again.
    await sim.kubelet()
    assert summary(sim, "web-pdb")["disruptionsAllowed"] == 1


@simulated
async def test_max_unavailable_percentage_counts_the_deployment_scale(sim):
    await start(sim, replicas=4)
    sim.api.create(PDB, pdb("web-pdb", maxUnavailable="25%"), "default")
    await sim.settle()
    assert summary(sim, "web-pdb")["expectedPods"] == 4
    assert summary(sim, "web-pdb")["desiredHealthy"] == 3
    assert summary(sim, "web-pdb")["disruptionsAllowed"] == 1


@simulated
async def test_no_matching_pods_and_unmanaged_pods(sim):
    sim.start(DisruptionController(sim.api))
    sim.api.create(PDB, pdb("empty", minAvailable=1), "default")
    await sim.settle()
    assert sim.events(kind="PodDisruptionBudget") == [("NoPods", "No matching pods found")]
    assert summary(sim, "empty")["condition"] == ("DisruptionAllowed", "False", "InsufficientPods", "")
    sim.api.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bare", "labels": {"app": "web"}},
                            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}, "default")
    sim.api.create(PDB, pdb("pct", maxUnavailable="50%"), "default")
    await sim.settle()
    unmanaged = [m for r, m in sim.events(name="pct") if r == "UnmanagedPods"]
    assert unmanaged == ["Pods selected by this PodDisruptionBudget (selector: &LabelSelector{MatchLabels:"
                         "map[string]string{app: web,},MatchExpressions:[]LabelSelectorRequirement{},}) were found "
                         "to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which "
                         "may result in undefined behavior. To account for these pods please set "
                         "\".spec.minAvailable\" field of the PDB to an integer value."]
    assert sim.events(kind="PodDisruptionBudget")[0][0] == "NoPods"
    assert all(e["source"]["component"] == "controllermanager" for e in sim.api.list("events", "default"))


@simulated
async def test_back_to_back_evictions_spend_the_budget_before_the_controller_recounts(sim):
    await start(sim)
    sim.api.create(PDB, pdb("web-pdb", minAvailable=2), "default")
    await sim.settle()
    first, second, _ = sim.pods()
    sim.api.evict("default", first["metadata"]["name"])
    status = sim.api.get(PDB, "web-pdb", "default")["status"]
    assert status["disruptionsAllowed"] == 0
    assert status["disruptedPods"] == {first["metadata"]["name"]: rfc3339(sim.now)}
    with pytest.raises(ApiError) as refused:
        sim.api.evict("default", second["metadata"]["name"])
    assert refused.value.code == 429
    await sim.settle()
    # The evicted pod is terminating: it leaves disruptedPods and stops counting as healthy.
    assert "disruptedPods" not in sim.api.get(PDB, "web-pdb", "default")["status"]
    assert summary(sim, "web-pdb")["currentHealthy"] == 2
