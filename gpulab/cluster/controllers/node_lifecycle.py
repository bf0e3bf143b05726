"""Node lifecycle: node health from heartbeats and leases, and the taints that follow from it.

Port of pkg/controller/nodelifecycle/node_lifecycle_controller.go (v1.36) without
zones and eviction rate limits:

- ``RegisteredNode`` / ``RemovingNode`` events when a node appears or goes.
- ``tryUpdateNodeHealth``: a node whose Ready condition heartbeat and
  ``kube-node-lease`` Lease have not moved for ``--node-monitor-grace-period``
  (50 s since v1.32; ``--node-startup-grace-period`` 60 s before its first
  Ready condition) gets Ready, MemoryPressure, DiskPressure and PIDPressure
  ``Unknown`` ("Kubelet stopped posting node status."), a ``NodeNotReady``
  event and its pods marked not ready.
- ``doNoScheduleTaintingPass``: ``NoSchedule`` taints mirroring the conditions
  (``node.kubernetes.io/not-ready``, ``unreachable``, ``memory-pressure``,
  ``disk-pressure``, ``pid-pressure``, ``network-unavailable``) and
  ``spec.unschedulable`` (``node.kubernetes.io/unschedulable``, kubectl cordon).
- ``processTaintBaseEviction``: ``NoExecute`` ``not-ready``/``unreachable``
  taints from the observed Ready condition, removed when the node is Ready;
  the taint eviction controller then evicts the pods.

As upstream, health and NoExecute taints are judged by a pass over every node
each ``--node-monitor-period`` (5 s), so a node that is NotReady for a moment
while its kubelet starts gets the NoSchedule taint (applied on every node
change) but rarely the NoExecute one.

One difference follows from running in one process with the node agents: when
that process stands still (a starved machine), the node agents cannot renew
their Leases either, and the first pass after it would find every node silent.
Upstream's kubelets are separate processes that keep renewing while the
controller manager is stalled, so a pass that comes late by more than a period
of the process's own time (``time.monotonic``) moves every node's last probe
forward by the delay: silence is counted only while the controller itself ran.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from ..errors import ApiError
from ..objects import clone, parse_time, rfc3339
from .base import Controller
from .workload import MANAGER

COMPONENT = "node-controller"
LEASES = "leases.coordination.k8s.io"
NODE_LEASE_NAMESPACE = "kube-node-lease"
NODE_MONITOR_GRACE_PERIOD = 50.0
NODE_STARTUP_GRACE_PERIOD = 60.0
NODE_MONITOR_PERIOD = 5.0
MONITOR = "<monitor>"  # the work key of the periodic pass (not a valid node name)

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
# nodeConditionToTaintKeyStatusMap
_CONDITION_TAINTS = {
    "Ready": {"False": NOT_READY, "Unknown": UNREACHABLE},
    "MemoryPressure": {"True": "node.kubernetes.io/memory-pressure"},
    "DiskPressure": {"True": "node.kubernetes.io/disk-pressure"},
    "NetworkUnavailable": {"True": "node.kubernetes.io/network-unavailable"},
    "PIDPressure": {"True": "node.kubernetes.io/pid-pressure"},
}
_CONDITION_TAINT_KEYS = {key for by_status in _CONDITION_TAINTS.values() for key in by_status.values()}
_UNKNOWN_ON_SILENCE = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")


@dataclass
class _Health:
    """nodeHealthData: when the controller last saw the node alive, and what it saw."""
    probe: float
    ready_transition: float
    heartbeat: str | None  # the Ready condition's lastHeartbeatTime as last seen
    transition: str | None
    lease_renew: float | None = None


def _condition(node: dict, type_: str) -> dict | None:
    return next((c for c in (node.get("status") or {}).get("conditions") or () if c.get("type") == type_), None)


class NodeLifecycleController(Controller):
    """Work keys: a node's name (its NoSchedule taints, on every change of the node) and MONITOR (the periodic
    health pass over all nodes, ``monitorNodeHealth``)."""

    name = COMPONENT
    watches = ("nodes",)

    def __init__(self, api, *, monitor_grace_period: float = NODE_MONITOR_GRACE_PERIOD,
                 startup_grace_period: float = NODE_STARTUP_GRACE_PERIOD,
                 monitor_period: float = NODE_MONITOR_PERIOD):
        super().__init__(api)
        self.monitor_grace_period = monitor_grace_period
        self.startup_grace_period = startup_grace_period
        self.monitor_period = monitor_period
        self._known: dict[str, str] = {}  # name -> uid
        self._health: dict[str, _Health] = {}
        self._last_pass: float | None = None  # time.monotonic() of the previous health pass

    def keys_for(self, key: str, obj: dict):
        return [obj["metadata"]["name"]]

    def initial_keys(self):
        return [MONITOR] + super().initial_keys()

    async def reconcile(self, key) -> float | None:
        if key == MONITOR:
            self._monitor()
            return self.monitor_period
        node = self.api.store.get("nodes", "", key)
        if node is not None:
            self._taint_by_conditions(node)
        return None

    def _forgive_stall(self) -> None:
        """Move every probe forward by how late this pass is: the node agents were stopped as long."""
        now = time.monotonic()
        late = 0.0 if self._last_pass is None else now - self._last_pass - self.monitor_period
        self._last_pass = now
        if late > self.monitor_period:
            for health in self._health.values():
                health.probe += late

    def _monitor(self) -> None:
        """monitorNodeHealth: registration events, health, NoExecute taints and NodeNotReady."""
        self._forgive_stall()
        nodes = self.api.store.list("nodes")
        present = {n["metadata"]["name"] for n in nodes}
        for name in [n for n in self._known if n not in present]:
            self._node_event(name, self._known.pop(name), "RemovingNode", f"Removing Node {name} from Controller")
            self._health.pop(name, None)
        for node in nodes:
            name = node["metadata"]["name"]
            if name not in self._known:
                self._known[name] = node["metadata"]["uid"]
                self._node_event(name, node["metadata"]["uid"], "RegisteredNode",
                                 f"Registered Node {name} in Controller")
                node = self._swap(node, add=[], remove=[NOT_READY, UNREACHABLE], effect="NoExecute")
            observed, node = self._update_health(node)
            current = _condition(node, "Ready")
            if current is None:
                continue
            self._taint_for_eviction(node, observed)
            if current.get("status") != "True" and observed.get("status") == "True":
                self.api.record_event({"apiVersion": "v1", "kind": "Node", "metadata": node["metadata"]}, "Normal",
                                      "NodeNotReady", f"Node {name} status is now: NodeNotReady", COMPONENT)
                self._mark_pods_not_ready(name)

    def _node_event(self, name: str, uid: str, reason: str, event: str) -> None:
        """RecordNodeEvent: "Node <name> event: <event>"."""
        ref = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": uid}}
        self.api.record_event(ref, "Normal", reason, f"Node {name} event: {event}", COMPONENT)

    # --- tryUpdateNodeHealth ------------------------------------------------------------
    def _update_health(self, node: dict) -> tuple[dict, dict]:
        """The Ready condition as observed, and the node after any update."""
        name = node["metadata"]["name"]
        now = self.api.clock()
        created = parse_time(node["metadata"].get("creationTimestamp")) or now
        ready = _condition(node, "Ready")
        health = self._health.get(name)
        if ready is None:
            observed = {"type": "Ready", "status": "Unknown", "lastHeartbeatTime": node["metadata"].get(
                "creationTimestamp"), "lastTransitionTime": node["metadata"].get("creationTimestamp")}
            grace = self.startup_grace_period
            if health is None:
                health = _Health(created, created, None, None)
        else:
            observed = dict(ready)
            grace = self.monitor_grace_period
        if health is None or (health.heartbeat is None and ready is not None):
            health = _Health(now, now, ready.get("lastHeartbeatTime") if ready else None,
                             ready.get("lastTransitionTime") if ready else None,
                             health.lease_renew if health else None)
        elif ready is not None and health.heartbeat != ready.get("lastHeartbeatTime"):
            transition = now if health.transition != ready.get("lastTransitionTime") else health.ready_transition
            health = _Health(now, transition, ready.get("lastHeartbeatTime"), ready.get("lastTransitionTime"),
                             health.lease_renew)
        lease = self.api.store.get(LEASES, NODE_LEASE_NAMESPACE, name)
        renew = parse_time(((lease or {}).get("spec") or {}).get("renewTime")) if lease else None
        if renew is not None and (health.lease_renew is None or health.lease_renew < renew):
            health.lease_renew = renew
            health.probe = now
        self._health[name] = health
        if now <= health.probe + grace:
            return observed, node
        updated = clone(node)
        conditions = updated.setdefault("status", {}).setdefault("conditions", [])
        stamp = rfc3339(now)
        for type_ in _UNKNOWN_ON_SILENCE:
            cond = next((c for c in conditions if c.get("type") == type_), None)
            if cond is None:
                conditions.append({"type": type_, "status": "Unknown",
                                   "lastHeartbeatTime": node["metadata"].get("creationTimestamp"),
                                   "lastTransitionTime": stamp, "reason": "NodeStatusNeverUpdated",
                                   "message": "Kubelet never posted node status."})
            elif cond.get("status") != "Unknown":
                cond.update(status="Unknown", reason="NodeStatusUnknown",
                            message="Kubelet stopped posting node status.", lastTransitionTime=stamp)
        if _condition(updated, "Ready") != ready:
            node = self.api.update("nodes", updated, subresource="status", manager=MANAGER)
            health.ready_transition = now
            health.heartbeat = (_condition(node, "Ready") or {}).get("lastHeartbeatTime")
            health.transition = (_condition(node, "Ready") or {}).get("lastTransitionTime")
        return observed, node

    def _mark_pods_not_ready(self, node_name: str) -> None:
        """MarkPodsNotReady: Ready=False on the node's pods, with a NodeNotReady event on each."""
        stamp = rfc3339(self.api.clock())
        for pod in self.api.store.by_index("pods", "spec.nodeName", node_name):
            ready = next((c for c in (pod.get("status") or {}).get("conditions") or () if c.get("type") == "Ready"),
                         None)
            if ready is None or ready.get("status") == "False":
                continue
            updated = clone(pod)
            for c in updated["status"]["conditions"]:
                if c.get("type") == "Ready":
                    c.update(status="False", lastTransitionTime=stamp)
            try:
                self.api.update("pods", updated, pod["metadata"]["namespace"], subresource="status", manager=MANAGER)
            except ApiError as exc:
                if exc.code == 404:
                    continue
                raise
            self.api.record_event(pod, "Warning", "NodeNotReady", "Node is not ready", COMPONENT)

    # --- taints ------------------------------------------------------------------------------
    def _taint_for_eviction(self, node: dict, observed: dict) -> dict:
        """processTaintBaseEviction: the NoExecute taint that matches the observed Ready status."""
        status = observed.get("status")
        if status == "False":
            return self._swap(node, add=[NOT_READY], remove=[UNREACHABLE], effect="NoExecute")
        if status == "Unknown":
            return self._swap(node, add=[UNREACHABLE], remove=[NOT_READY], effect="NoExecute")
        if status == "True":
            return self._swap(node, add=[], remove=[NOT_READY, UNREACHABLE], effect="NoExecute")
        return node

    def _taint_by_conditions(self, node: dict) -> dict:
        """doNoScheduleTaintingPass: NoSchedule taints for the conditions and for spec.unschedulable."""
        wanted = []
        for cond in (node.get("status") or {}).get("conditions") or ():
            key = _CONDITION_TAINTS.get(cond.get("type"), {}).get(cond.get("status"))
            if key is not None:
                wanted.append(key)
        if (node.get("spec") or {}).get("unschedulable"):
            wanted.append(UNSCHEDULABLE)
        have = [t["key"] for t in (node.get("spec") or {}).get("taints") or ()
                if t.get("effect") == "NoSchedule" and (t.get("key") == UNSCHEDULABLE or t.get("key") in
                                                        _CONDITION_TAINT_KEYS)]
        add = [k for k in wanted if k not in have]
        remove = [k for k in have if k not in wanted]
        if not add and not remove:
            return node
        return self._swap(node, add=add, remove=remove, effect="NoSchedule")

    def _swap(self, node: dict, *, add: list[str], remove: list[str], effect: str) -> dict:
        """SwapNodeControllerTaint: add taints (stamped with timeAdded) and remove others, in one update."""
        taints = list((node.get("spec") or {}).get("taints") or [])
        kept = [t for t in taints if not (t.get("effect") == effect and t.get("key") in remove)]
        present = {(t.get("key"), t.get("effect")) for t in kept}
        stamp = rfc3339(self.api.clock())
        added = [{"key": k, "effect": effect, "timeAdded": stamp} for k in add if (k, effect) not in present]
        if len(kept) == len(taints) and not added:
            return node
        updated = clone(node)
        updated.setdefault("spec", {})["taints"] = kept + added
        if not updated["spec"]["taints"]:
            del updated["spec"]["taints"]
        return self.api.update("nodes", updated, manager=MANAGER)
