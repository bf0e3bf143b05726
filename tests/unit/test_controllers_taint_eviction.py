"""NoExecute taint eviction: immediate, after tolerationSeconds, and cancelled."""
from __future__ import annotations

from controller_sim import SimCluster, simulated

from gpulab.cluster.controllers.taint_eviction import TaintEvictionController

NO_EXECUTE = {"key": "maintenance", "value": "now", "effect": "NoExecute"}


def pod(name: str, tolerations: list | None = None) -> dict:
    spec = {"containers": [{"name": "c", "image": "busybox"}], "nodeName": "node-a"}
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def taint(sim: SimCluster, *taints: dict) -> None:
    sim.api.patch("nodes", "node-a", {"spec": {"taints": list(taints) or None}}, "merge")


async def start(sim: SimCluster, *pods: dict) -> None:
    sim.start(TaintEvictionController(sim.api))
    for p in pods:
        sim.set_phase(sim.api.create("pods", p, "default"), "Running", ready=True)
    await sim.settle()


@simulated
async def test_untolerated_no_execute_taint_evicts_at_once(sim):
    await start(sim, pod("victim"), pod("survivor", [{"key": "maintenance", "operator": "Exists",
                                                      "effect": "NoExecute"}]))
    taint(sim, NO_EXECUTE)
    await sim.settle()
    victim = sim.api.get("pods", "victim", "default")
    assert victim["metadata"].get("deletionTimestamp")
    cond = next(c for c in victim["status"]["conditions"] if c["type"] == "DisruptionTarget")
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "True", "DeletionByTaintManager", "Taint manager: deleting due to NoExecute taint")
    assert not sim.api.get("pods", "survivor", "default")["metadata"].get("deletionTimestamp")
    (event,) = [e for e in sim.api.list("events", "default") if e["reason"] == "TaintManagerEviction"]
    assert event["message"] == "Marking for deletion Pod default/victim"
    assert event["source"]["component"] == "taint-eviction-controller"
    assert (event["involvedObject"]["kind"], event["involvedObject"]["name"]) == ("Pod", "victim")
    assert not event["involvedObject"].get("uid")
    sim.confirm_deletions()
    await sim.settle()
    assert [m for r, m in sim.events() if r == "TaintManagerEviction"] == ["Marking for deletion Pod default/victim"]


@simulated
async def test_toleration_seconds_delays_the_eviction(sim):
    tolerations = [{"key": "maintenance", "operator": "Equal", "value": "now", "effect": "NoExecute",
                    "tolerationSeconds": 60}]
    await start(sim, pod("patient", tolerations))
    taint(sim, NO_EXECUTE)
    await sim.settle()
    sim.advance(59)
    sim.resync()
    await sim.settle()
    assert not sim.api.get("pods", "patient", "default")["metadata"].get("deletionTimestamp")
    sim.advance(1)
    sim.resync()
    await sim.settle()
    assert sim.api.get("pods", "patient", "default")["metadata"].get("deletionTimestamp")
    assert sim.events(name="patient") == [("TaintManagerEviction", "Marking for deletion Pod default/patient")]


@simulated
async def test_removing_the_taint_cancels_a_pending_eviction(sim):
    tolerations = [{"key": "maintenance", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]
    await start(sim, pod("lucky", tolerations))
    taint(sim, NO_EXECUTE)
    await sim.settle()
    sim.advance(100)
    taint(sim)
    await sim.settle()
    sim.advance(300)
    sim.resync()
    await sim.settle()
    assert not sim.api.get("pods", "lucky", "default")["metadata"].get("deletionTimestamp")
    assert sim.events(name="lucky") == [("TaintManagerEviction", "Cancelling deletion of Pod default/lucky")]


@simulated
async def test_a_second_taint_keeps_the_earlier_deadline(sim):
    tolerations = [{"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}]
    await start(sim, pod("p", tolerations))
    taint(sim, NO_EXECUTE)
    await sim.settle()
    sim.advance(30)
    taint(sim, NO_EXECUTE, {"key": "other", "effect": "NoExecute"})
    await sim.settle()
    sim.advance(30)
    sim.resync()
    await sim.settle()
    assert sim.api.get("pods", "p", "default")["metadata"].get("deletionTimestamp")
