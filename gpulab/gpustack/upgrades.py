"""The operator's driver upgrade controller: new driver versions rolled out node by node.

NVIDIA/gpu-operator ``controllers/upgrade_controller.go`` drives NVIDIA/k8s-operator-libs
``pkg/upgrade``: each node's ``nvidia.com/gpu-driver-upgrade-state`` label walks the states of
:mod:`.driver`, one step per pass, at most ``maxParallelUpgrades`` nodes at a time, with a
``GPUDriverUpgrade`` event on the node for every state it enters.

As upstream, a pass moves a node on by what it reads then: the controller runs again when a node's state label
changes, every two minutes (``plannedRequeueInterval``), and here also when an operand DaemonSet's status changes
(a driver pod becoming ready); pods being deleted are waited for as the drain helper does, polling each second,
before the node leaves ``pod-deletion-required`` (or ``drain-required``).
"""
from __future__ import annotations

import time

from .. import kubeclient
from . import driver
from .allocation import allocated_ids
from .pods import active, containers_ready, meta, operand_app, running

PLANNED_REQUEUE_SECONDS = 120.0   # gpu-operator controllers/upgrade_controller.go plannedRequeueInterval
DELETION_POLL_SECONDS = 1.0       # k8s.io/kubectl/pkg/drain: how often the helper looks for the deleted pods
DRAIN_SKIP_LABEL = "nvidia.com/gpu-driver-upgrade-drain.skip"   # upgrade_controller.go UpgradeSkipDrainLabelSelector


class DriverUpgrades:
    """The upgrade controller, driven by the reconciler ``stack`` (its client, caches, recorder, queue)."""

    def __init__(self, stack):
        self.stack = stack
        self._started: set[str] = set()      # nodes sent to cordon-required that the cache still shows waiting
        self._deleting: set[str] = set()     # nodes whose pods this controller deleted and waits to see gone
        self._planned = 0.0                  # when the planned requeue is due

    def step(self, policy: dict, nodes: list[dict]) -> None:
        spec = policy.get("spec") or {}
        if not (spec.get("driver") or {}).get("enabled", True):
            return
        ds = self.stack.daemonsets.get(driver.DRIVER_APP, self.stack.namespace)
        if ds is None:
            return
        upgrade = driver.UpgradePolicy.from_spec(spec)

        def state_of(n: dict) -> str:
            return (meta(n).get("labels") or {}).get(driver.UPGRADE_STATE_LABEL, "")

        # The state machine must not step twice on a stale cache: nodes mid-upgrade are read afresh, and
        # nodes this process started but the cache still shows waiting count as in flight.
        nodes = [self.stack.kube.get(kubeclient.NODES, meta(n)["name"]) if state_of(n) in driver.IN_PROGRESS else n
                 for n in nodes]
        for n in nodes:
            if state_of(n) != driver.UPGRADE_REQUIRED:
                self._started.discard(meta(n)["name"])
        in_flight = sum(1 for n in nodes if state_of(n) in driver.IN_PROGRESS) + len(self._started)
        for node in sorted(nodes, key=lambda n: meta(n)["name"]):
            name = meta(node)["name"]
            pods_here = self.stack.pods_on(name)
            driver_pods = [p for p in pods_here if meta(p).get("namespace") == self.stack.namespace
                           and operand_app(p) == driver.DRIVER_APP]
            if not driver_pods:
                continue
            state = (meta(node).get("labels") or {}).get(driver.UPGRADE_STATE_LABEL, "")
            if not upgrade.auto_upgrade:
                continue
            current = all(driver.pod_is_current(p, ds) for p in driver_pods)
            if state in ("", driver.UPGRADE_DONE, driver.UPGRADE_FAILED) and current:
                if state != driver.UPGRADE_DONE and running(driver_pods[0]) and containers_ready(driver_pods[0]):
                    self._set_state(node, driver.UPGRADE_DONE)
                continue
            if state in ("", driver.UPGRADE_DONE):
                self._set_state(node, driver.UPGRADE_REQUIRED)
                continue
            if state == driver.UPGRADE_REQUIRED:
                if name in self._started or (upgrade.max_parallel and in_flight >= upgrade.max_parallel):
                    continue
                in_flight += 1
                self._started.add(name)
                self._set_state(node, driver.CORDON_REQUIRED)
            elif state == driver.CORDON_REQUIRED:
                self.stack.kube.patch(kubeclient.NODES, name, {"spec": {"unschedulable": True}})
                self._set_state(node, driver.WAIT_FOR_JOBS_REQUIRED)
            elif state == driver.WAIT_FOR_JOBS_REQUIRED:
                self._set_state(node, driver.POD_DELETION_REQUIRED)
            elif state == driver.POD_DELETION_REQUIRED:
                gpu_pods = [p for p in pods_here if meta(p).get("namespace") != self.stack.namespace
                            and (active(p) or meta(p).get("deletionTimestamp")) and allocated_ids(p)]
                if self._delete_and_wait(node, gpu_pods, upgrade.force_gpu_pod_deletion):
                    deleted = name in self._deleting
                    self._deleting.discard(name)
                    self._set_state(node, driver.DRAIN_REQUIRED)
                    if deleted:   # pod_manager.go SchedulePodEviction, after the state change
                        self.stack.recorder.event({**node, "kind": "Node", "apiVersion": "v1"}, "Normal",
                                                  driver.UPGRADE_EVENT_REASON,
                                                  "Deleted workload pods on the node for the driver upgrade")
            elif state == driver.DRAIN_REQUIRED:
                others = [p for p in pods_here if (active(p) or meta(p).get("deletionTimestamp"))
                          and not _owned_by_daemonset(p)
                          and (meta(p).get("labels") or {}).get(DRAIN_SKIP_LABEL) != "true"]
                # common_manager.go ProcessDrainNodes: with drain disabled by policy, straight to the pod restart
                if not upgrade.drain or self._delete_and_wait(node, others, upgrade.drain_force):
                    self._deleting.discard(name)
                    self._set_state(node, driver.POD_RESTART_REQUIRED)
            elif state == driver.POD_RESTART_REQUIRED:
                for pod in driver_pods:
                    if not driver.pod_is_current(pod, ds) and not meta(pod).get("deletionTimestamp"):
                        self.stack.kube.delete(kubeclient.PODS, meta(pod)["name"], self.stack.namespace)
                # common_manager.go ProcessPodRestartNodes: on once the new driver pod is in sync and ready
                if current and all(running(p) and containers_ready(p) for p in driver_pods):
                    self._set_state(node, driver.VALIDATION_REQUIRED)
            elif state == driver.VALIDATION_REQUIRED:
                if current and all(running(p) and containers_ready(p) for p in driver_pods):
                    self._set_state(node, driver.UNCORDON_REQUIRED)
            elif state == driver.UNCORDON_REQUIRED:
                self.stack.kube.patch(kubeclient.NODES, name, {"spec": {"unschedulable": None}})
                self._set_state(node, driver.UPGRADE_DONE)
            if (state in driver.IN_PROGRESS or state == driver.UPGRADE_REQUIRED) and time.monotonic() >= self._planned:
                self._planned = time.monotonic() + PLANNED_REQUEUE_SECONDS
                self.stack.queue.add_after(("policy",), PLANNED_REQUEUE_SECONDS)

    def _delete_and_wait(self, node: dict, pods: list[dict], force: bool) -> bool:
        """The drain helper's ``DeleteOrEvictPods`` for ``pods`` on ``node``: refuse pods no controller owns (the
        node then fails its upgrade), delete the others, and True once none of them is left."""
        name = meta(node)["name"]
        if not pods:
            return True
        if name not in self._deleting:
            refusal = None if force else driver.unmanaged_refusal(
                [p for p in pods if not meta(p).get("deletionTimestamp")])
            if refusal:
                self.stack.recorder.event({**node, "kind": "Node", "apiVersion": "v1"}, "Warning",
                                          driver.UPGRADE_EVENT_REASON, f"Failed to delete GPU pods: {refusal}")
                self._set_state(node, driver.UPGRADE_FAILED)
                return False
            self._deleting.add(name)
        for pod in pods:
            if not meta(pod).get("deletionTimestamp"):
                self.stack.kube.delete(kubeclient.PODS, meta(pod)["name"], meta(pod)["namespace"])
        self.stack.queue.add_after(("policy",), DELETION_POLL_SECONDS)
        return False

    def _set_state(self, node: dict, state: str) -> None:
        self.stack.kube.patch(kubeclient.NODES, meta(node)["name"], {"metadata": {"labels": {driver.UPGRADE_STATE_LABEL: state}}})
        self.stack.recorder.event({**node, "kind": "Node", "apiVersion": "v1"}, "Normal", driver.UPGRADE_EVENT_REASON,
                            driver.event_message(state))
        self.stack.queue.add_after(("policy",), 0.2)


def _owned_by_daemonset(pod: dict) -> bool:
    return any(ref.get("kind") == "DaemonSet" and ref.get("controller")
               for ref in meta(pod).get("ownerReferences") or [])
