"""The driver upgrade controller's state machine, pass by pass (gpulab.gpustack.upgrades; docs/fidelity.md#gpustack).

A stand-in for the reconciler (its caches, client, recorder and queue) lets each pass be run by hand and the world
(a GPU pod terminating, the driver pod replaced) move between passes, so the order of the node's states and events
can be compared with k8s-operator-libs ``pkg/upgrade`` with pod deletion on and drain off.
"""
from __future__ import annotations

import copy

from gpulab import kubeclient
from gpulab.contract import ALLOCATION_ANNOTATION
from gpulab.gpustack import driver
from gpulab.gpustack.upgrades import DriverUpgrades

NEW = "nvcr.io/nvidia/driver:595.91.07-ubuntu22.04"
OLD = "nvcr.io/nvidia/driver:580.105.08-ubuntu22.04"
UPSTREAM = ["upgrade-required", "cordon-required", "wait-for-jobs-required", "pod-deletion-required",
            "drain-required", "Deleted workload pods on the node for the driver upgrade", "pod-restart-required",
            "validation-required", "uncordon-required", "upgrade-done"]
GPU_ALLOCATION = '{"containers": {"main": {"devices": {"nvidia.com/gpu": ["GPU-1"]}}}}'


def driver_pod(image: str, ready: bool = True) -> dict:
    return {"metadata": {"name": f"nvidia-driver-daemonset-{image[-20:-15]}", "namespace": "gpu-operator",
                         "labels": {"app": driver.DRIVER_APP}},
            "spec": {"nodeName": "gpu-1", "containers": [{"name": "nvidia-driver-ctr", "image": image}]},
            "status": {"phase": "Running", "containerStatuses": [{"ready": ready}]}}


class World:
    """The reconciler as DriverUpgrades sees it: caches, client, recorder, queue; and what the kubelet does."""

    namespace = "gpu-operator"

    def __init__(self):
        self.node = {"metadata": {"name": "gpu-1", "labels": {driver.UPGRADE_STATE_LABEL: "upgrade-done"}},
                     "spec": {}}
        self.pods = [driver_pod(OLD),
                     {"metadata": {"name": "server-1", "namespace": "default",
                                   "ownerReferences": [{"kind": "ReplicaSet", "controller": True}],
                                   "annotations": {ALLOCATION_ANNOTATION: GPU_ALLOCATION}},
                      "spec": {"nodeName": "gpu-1"}, "status": {"phase": "Running"}}]
        self.ds = {"spec": {"template": {"spec": {"containers": [{"name": "nvidia-driver-ctr", "image": NEW}]}}}}
        self.daemonsets, self.kube, self.recorder, self.queue = self, self, self, self
        self.said: list[str] = []

    # the caches and the client
    def get(self, *args):
        return self.ds if args == (driver.DRIVER_APP, "gpu-operator") else copy.deepcopy(self.node)

    def pods_on(self, name: str) -> list[dict]:
        return copy.deepcopy(self.pods)

    def patch(self, resource, name: str, body: dict) -> None:
        assert resource == kubeclient.NODES
        self.node["metadata"]["labels"].update((body.get("metadata") or {}).get("labels") or {})
        self.node["spec"].update(body.get("spec") or {})

    def delete(self, resource, name: str, namespace: str) -> None:
        next(p for p in self.pods if p["metadata"]["name"] == name)["metadata"]["deletionTimestamp"] = "now"

    # the recorder and the queue
    def event(self, obj: dict, type_: str, reason: str, message: str) -> None:
        self.said.append(message.removeprefix("Successfully updated node state label to "))

    def add_after(self, key, delay: float) -> None:
        pass

    # the passes, and the kubelet between them
    def state(self) -> str:
        return self.node["metadata"]["labels"][driver.UPGRADE_STATE_LABEL]

    def run(self, upgrades: DriverUpgrades, policy: dict | None = None) -> None:
        upgrades.step(policy or {"spec": {}}, [copy.deepcopy(self.node)])

    def finish_deletions(self) -> None:
        self.pods = [p for p in self.pods if "deletionTimestamp" not in p["metadata"]]


def test_the_states_and_events_come_in_upstreams_order_and_wait_for_pods_and_the_driver():
    world = World()
    upgrades = DriverUpgrades(world)
    for _ in range(4):                                    # upgrade-required ... pod-deletion-required
        world.run(upgrades)
    assert world.state() == "pod-deletion-required" and world.node["spec"]["unschedulable"] is True
    world.run(upgrades)                                   # the GPU pod is deleted ...
    world.run(upgrades)
    assert world.state() == "pod-deletion-required"       # ... and waited for while it terminates
    assert world.pods[1]["metadata"]["deletionTimestamp"]
    world.finish_deletions()
    world.run(upgrades)
    assert world.state() == "drain-required"
    world.run(upgrades)                                   # drain is off: straight to the pod restart
    world.run(upgrades)                                   # the old driver pod is deleted
    assert world.state() == "pod-restart-required" and "deletionTimestamp" in world.pods[0]["metadata"]
    world.finish_deletions()
    world.pods.append(driver_pod(NEW, ready=False))       # the DaemonSet's new pod, starting
    world.run(upgrades)
    assert world.state() == "pod-restart-required"        # held until the new driver is ready
    world.pods[0]["status"]["containerStatuses"][0]["ready"] = True
    for _ in range(4):
        world.run(upgrades)
    assert world.state() == "upgrade-done" and world.node["spec"]["unschedulable"] is None
    assert world.said == UPSTREAM


def test_a_pod_no_controller_owns_fails_the_node_and_nothing_is_deleted():
    world = World()
    del world.pods[1]["metadata"]["ownerReferences"]
    upgrades = DriverUpgrades(world)
    for _ in range(6):
        world.run(upgrades)
    assert world.state() == "upgrade-failed" and "deletionTimestamp" not in world.pods[1]["metadata"]
    assert world.said[-2:] == ["Failed to delete GPU pods: cannot delete Pods declare no controller (use --force to "
                               "override): default/server-1", "upgrade-failed"]
