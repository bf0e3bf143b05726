"""The DaemonSet controller: eligible nodes, daemon tolerations, node affinity, status, rolling update."""
from __future__ import annotations

from controller_sim import SimCluster, simulated

from gpulab.cluster.controllers.daemonset import DaemonSetController
from gpulab.cluster.objects import clone

DS = "daemonsets.apps"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}


def daemonset(**template_spec) -> dict:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                     "template": {"metadata": {"labels": {"app": "agent"}},
                                  "spec": {"containers": [{"name": "c", "image": "agent:1"}], **template_spec}}}}


def edit(sim: SimCluster, change) -> None:
    ds = clone(sim.api.get(DS, "agent", "default"))
    change(ds)
    sim.api.update(DS, ds, "default")


def placement(sim: SimCluster) -> dict[str, str]:
    return {p["spec"]["nodeName"]: p["metadata"]["labels"]["controller-revision-hash"]
            for p in sim.pods() if not p["metadata"].get("deletionTimestamp")}


def counts(sim: SimCluster) -> dict:
    status = sim.api.get(DS, "agent", "default")["status"]
    return {k: v for k, v in status.items() if k != "observedGeneration"}


@simulated
async def test_skips_a_gpu_tainted_node_until_the_daemonset_tolerates_it(sim):
    sim.add_node("gpu-1", 2, taints=[GPU_TAINT])
    sim.start(DaemonSetController(sim.api))
    sim.api.create(DS, daemonset(), "default")
    await sim.kubelet()
    assert sorted(placement(sim)) == ["node-a", "node-b"]
    assert counts(sim) == {"currentNumberScheduled": 2, "numberMisscheduled": 0, "desiredNumberScheduled": 2,
                           "numberReady": 2, "updatedNumberScheduled": 2, "numberAvailable": 2}
    pod = sim.pods()[0]
    assert pod["spec"]["tolerations"] == [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]
    assert pod["spec"]["affinity"] == {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                "values": [pod["spec"]["nodeName"]]}]}]}}}
    assert pod["metadata"]["labels"]["pod-template-generation"] == "1"

    edit(sim, lambda ds: ds["spec"]["template"]["spec"].update(
        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]))
    await sim.kubelet(rounds=12)
    assert sorted(placement(sim)) == ["gpu-1", "node-a", "node-b"]
    assert len(set(placement(sim).values())) == 1
    assert counts(sim)["desiredNumberScheduled"] == counts(sim)["updatedNumberScheduled"] == 3
    pod = next(p for p in sim.pods() if p["spec"]["nodeName"] == "gpu-1")
    assert pod["spec"]["tolerations"][0] == {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    assert pod["metadata"]["labels"]["pod-template-generation"] == "2"
    revisions = sorted(sim.api.list("controllerrevisions.apps"), key=lambda r: r["revision"])
    assert [r["revision"] for r in revisions] == [1, 2]
    for r in revisions:
        assert r["metadata"]["name"] == f'agent-{r["metadata"]["labels"]["controller-revision-hash"]}'
        assert r["data"]["spec"]["template"]["$patch"] == "replace"
    assert revisions[1]["metadata"]["labels"]["controller-revision-hash"] == next(iter(placement(sim).values()))
    creates = [m for r, m in sim.events(kind="DaemonSet") if r == "SuccessfulCreate"]
    deletes = [m for r, m in sim.events(kind="DaemonSet") if r == "SuccessfulDelete"]
    assert len(creates) == 5 and len(deletes) == 2
    assert all(m.startswith("Created pod: agent-") for m in creates)


@simulated
async def test_node_selector_and_host_network_toleration(sim):
    sim.start(DaemonSetController(sim.api))
    sim.api.patch("nodes", "node-b", {"metadata": {"labels": {"gpu": "yes"}}}, "merge")
    sim.api.create(DS, daemonset(nodeSelector={"gpu": "yes"}, hostNetwork=True), "default")
    await sim.kubelet()
    assert list(placement(sim)) == ["node-b"]
    assert sim.pods()[0]["spec"]["tolerations"][-1] == {
        "key": "node.kubernetes.io/network-unavailable", "operator": "Exists", "effect": "NoSchedule"}
    # The node loses the label: its pod is misplaced and deleted.
    sim.api.patch("nodes", "node-b", {"metadata": {"labels": {"gpu": None}}}, "merge")
    await sim.kubelet()
    assert placement(sim) == {}
    assert counts(sim) == {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
                           "numberReady": 0}


@simulated
async def test_no_execute_taint_untolerated_removes_the_pod_but_unschedulable_does_not(sim):
    sim.start(DaemonSetController(sim.api))
    sim.api.create(DS, daemonset(), "default")
    await sim.kubelet()
    sim.api.patch("nodes", "node-a", {"spec": {"unschedulable": True, "taints": [
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]}}, "merge")
    sim.api.patch("nodes", "node-b", {"spec": {"taints": [{"key": "maintenance", "effect": "NoExecute"}]}}, "merge")
    await sim.kubelet()
    assert list(placement(sim)) == ["node-a"]


@simulated
async def test_on_delete_strategy_waits_for_pods_to_be_deleted(sim):
    sim.start(DaemonSetController(sim.api))
    sim.api.create(DS, {**daemonset(), "spec": {**daemonset()["spec"], "updateStrategy": {"type": "OnDelete"}}},
                   "default")
    await sim.kubelet()
    before = placement(sim)
    edit(sim, lambda ds: ds["spec"]["template"]["spec"]["containers"][0].update(image="agent:2"))
    await sim.kubelet()
    assert placement(sim) == before
    assert "updatedNumberScheduled" not in counts(sim)
    victim = next(p for p in sim.pods() if p["spec"]["nodeName"] == "node-a")
    sim.api.delete("pods", victim["metadata"]["name"], "default")
    await sim.kubelet()
    after = placement(sim)
    assert after["node-b"] == before["node-b"] and after["node-a"] != before["node-a"]
    assert counts(sim)["updatedNumberScheduled"] == 1
