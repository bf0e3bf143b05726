"""Node lifecycle: registration events, cordon taints, heartbeats and leases, not-ready and unreachable taints."""
from __future__ import annotations

from unittest.mock import patch

from controller_sim import SimCluster, simulated

from gpulab.cluster.controllers.node_lifecycle import NodeLifecycleController
from gpulab.cluster.objects import clone, rfc3339, rfc3339_micro


def post_ready(sim: SimCluster, node: str, status: str = "True") -> None:
    """What the kubelet does on each status update: the Ready condition with a fresh heartbeat."""
    obj = clone(sim.api.get("nodes", node))
    stamp = rfc3339(sim.now)
    old = next((c for c in obj["status"].get("conditions") or () if c["type"] == "Ready"), None)
    since = old["lastTransitionTime"] if old and old["status"] == status else stamp
    obj["status"]["conditions"] = [{"type": "Ready", "status": status, "lastHeartbeatTime": stamp,
                                    "lastTransitionTime": since, "reason": "KubeletReady",
                                    "message": "kubelet is posting ready status"}]
    sim.api.update("nodes", obj, subresource="status", manager="kubelet")


def renew_lease(sim: SimCluster, node: str) -> None:
    lease = sim.api.try_get("leases.coordination.k8s.io", node, "kube-node-lease")
    spec = {"holderIdentity": node, "leaseDurationSeconds": 40, "renewTime": rfc3339_micro(sim.now)}
    if lease is None:
        sim.api.create("leases.coordination.k8s.io", {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                                      "metadata": {"name": node}, "spec": spec}, "kube-node-lease")
    else:
        sim.api.update("leases.coordination.k8s.io", {**clone(lease), "spec": spec}, "kube-node-lease")


def taints(sim: SimCluster, node: str) -> list[tuple[str, str]]:
    return [(t["key"], t["effect"]) for t in sim.api.get("nodes", node)["spec"].get("taints") or ()]


async def start(sim: SimCluster) -> NodeLifecycleController:
    sim.api.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-node-lease"}})
    for node in ("node-a", "node-b"):
        post_ready(sim, node)
    controller = NodeLifecycleController(sim.api)
    sim.start(controller)
    await sim.settle()
    return controller


@simulated
async def test_registered_node_event(sim):
    await start(sim)
    assert sorted(sim.events(kind="Node")) == [
        ("RegisteredNode", "Node node-a event: Registered Node node-a in Controller"),
        ("RegisteredNode", "Node node-b event: Registered Node node-b in Controller")]
    assert all(e["source"]["component"] == "node-controller" for e in sim.api.list("events", "default"))


@simulated
async def test_cordon_adds_the_unschedulable_taint_and_uncordon_removes_it(sim):
    await start(sim)
    sim.api.patch("nodes", "node-a", {"spec": {"unschedulable": True}}, "merge")
    await sim.settle()
    (taint,) = sim.api.get("nodes", "node-a")["spec"]["taints"]
    assert taint == {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": rfc3339(sim.now)}
    sim.api.patch("nodes", "node-a", {"spec": {"unschedulable": None}}, "merge")
    await sim.settle()
    assert taints(sim, "node-a") == []


@simulated
async def test_silent_node_becomes_unknown_and_unreachable(sim):
    await start(sim)
    pod = sim.api.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
                                  "spec": {"nodeName": "node-a", "containers": [{"name": "c", "image": "nginx"}]}},
                         "default")
    sim.set_phase(pod, "Running", ready=True)
    sim.advance(40)
    post_ready(sim, "node-b")  # node-b keeps posting, node-a has gone silent
    sim.advance(11)
    sim.resync()
    await sim.settle()
    ready = next(c for c in sim.api.get("nodes", "node-a")["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.")
    never = next(c for c in sim.api.get("nodes", "node-a")["status"]["conditions"] if c["type"] == "MemoryPressure")
    assert (never["status"], never["reason"], never["message"]) == (
        "Unknown", "NodeStatusNeverUpdated", "Kubelet never posted node status.")
    # The pass that marks the node Unknown judged it by the Ready it had seen: NoExecute comes one pass later.
    assert taints(sim, "node-a") == [("node.kubernetes.io/unreachable", "NoSchedule")]
    sim.advance(5)
    sim.resync()
    await sim.settle()
    assert sorted(taints(sim, "node-a")) == [("node.kubernetes.io/unreachable", "NoExecute"),
                                             ("node.kubernetes.io/unreachable", "NoSchedule")]
    assert taints(sim, "node-b") == []
    assert ("NodeNotReady", "Node node-a status is now: NodeNotReady") in sim.events(kind="Node")
    assert sim.events(kind="Pod") == [("NodeNotReady", "Node is not ready")]
    web_ready = next(c for c in sim.api.get("pods", "web", "default")["status"]["conditions"] if c["type"] == "Ready")
    assert web_ready["status"] == "False"

    post_ready(sim, "node-a")
    sim.resync()  # the next monitor pass
    await sim.settle()
    assert taints(sim, "node-a") == []


@simulated
async def test_a_renewed_lease_keeps_the_node_healthy(sim):
    await start(sim)
    for _ in range(3):
        sim.advance(30)
        renew_lease(sim, "node-a")
        post_ready(sim, "node-b")
        sim.resync()
        await sim.settle()
    ready = next(c for c in sim.api.get("nodes", "node-a")["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True" and taints(sim, "node-a") == []


@simulated
async def test_kubelet_reporting_not_ready_gets_not_ready_taints(sim):
    await start(sim)
    post_ready(sim, "node-a", "False")
    await sim.settle()
    # The NoSchedule taint follows the node change; the NoExecute one waits for the next monitor pass.
    assert taints(sim, "node-a") == [("node.kubernetes.io/not-ready", "NoSchedule")]
    sim.resync()
    await sim.settle()
    assert sorted(taints(sim, "node-a")) == [("node.kubernetes.io/not-ready", "NoExecute"),
                                             ("node.kubernetes.io/not-ready", "NoSchedule")]
    assert not [e for e in sim.events(kind="Node") if e[0] == "NodeNotReady"]  # the kubelet reports that one


@simulated
async def test_a_stall_of_the_whole_process_is_not_taken_for_silent_nodes(sim):
    """The node agents live in the controller's process: while it stood still (the process's own clock moved as
    far as the cluster's) they could not renew, unlike upstream's separate kubelets. Silence after that counts."""
    from gpulab.cluster.controllers import node_lifecycle

    process_clock = [1000.0]
    with patch.object(node_lifecycle.time, "monotonic", lambda: process_clock[0]):
        await _stall_then_silence(sim, process_clock)


async def _stall_then_silence(sim, process_clock: list[float]) -> None:
    await start(sim)
    sim.advance(56)
    process_clock[0] += 56
    sim.resync()   # the first pass after the stall, before any node agent has run again
    await sim.settle()
    assert [c["status"] for c in sim.api.get("nodes", "node-a")["status"]["conditions"]] == ["True"]
    assert taints(sim, "node-a") == [] and not sim.events(kind="Pod")
    sim.advance(51)   # then the nodes do go silent, with the process running its passes on time
    process_clock[0] += 5
    sim.resync()
    await sim.settle()
    assert ("node.kubernetes.io/unreachable", "NoSchedule") in taints(sim, "node-a")
