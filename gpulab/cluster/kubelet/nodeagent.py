"""One node's side of the node agent: its status, its Lease, its pod IPs and its images.

Node status follows pkg/kubelet/kubelet_node_status.go: the status is recomputed every
``nodeStatusUpdateFrequency`` (10 s) and written only when something changed or
``nodeStatusReportFrequency`` (5 min) passed, so ``lastHeartbeatTime`` moves every five minutes while
the Lease in ``kube-node-lease`` (pkg/kubelet/nodelease, 40 s duration, renewed every 10 s) is the
frequent heartbeat. Conditions and their events come from data/lifecycle.yaml (setters.go). The node
agent never touches capacity or allocatable: extended resources a device plugin emulation patched in
stay as they are. Pod IPs come from ``spec.podCIDR`` like the host-local IPAM of kind's CNI (.1 is the
gateway; addresses are handed out in turn and reused after the range wraps).
"""
from __future__ import annotations

import ipaddress

from ..api import Api
from ..errors import ApiError
from ..objects import clone, rfc3339, rfc3339_micro
from .events import Recorder
from .imagestore import ImageStore
from .images import Catalog
from .settings import Lifecycle

LEASE_NAMESPACE = "kube-node-lease"


class PodAddresses:
    """host-local IPAM over one node's podCIDR."""

    def __init__(self, cidr: str | None):
        self._net = ipaddress.ip_network(cidr, strict=False) if cidr else None
        self._used: set[str] = set()
        self._last = 1

    def allocate(self) -> str | None:
        if self._net is None:
            return None
        size = self._net.num_addresses
        for step in range(1, size - 2):
            index = (self._last - 2 + step) % (size - 3) + 2
            ip = str(self._net.network_address + index)
            if ip not in self._used:
                self._used.add(ip)
                self._last = index
                return ip
        return None

    def reserve(self, ip: str) -> None:
        self._used.add(ip)

    def release(self, ip: str | None) -> None:
        self._used.discard(ip)


class NodeAgent:
    def __init__(self, api: Api, recorder: Recorder, lifecycle: Lifecycle, catalog: Catalog, node: dict):
        self.api = api
        self.recorder = recorder
        self.lifecycle = lifecycle
        self.name = node["metadata"]["name"]
        status = node.get("status") or {}
        self.host_ip = next((a["address"] for a in status.get("addresses") or () if a.get("type") == "InternalIP"), "")
        self.addresses = PodAddresses((node.get("spec") or {}).get("podCIDR"))
        self.images = ImageStore(catalog, status.get("images"))
        # A node that never reported Ready is new: its pod network comes up shortly after the kubelet starts.
        self._fresh = not any(c.get("type") == "Ready" for c in status.get("conditions") or ())
        self.network_ready_at = 0.0
        self.started = False
        self._last_report = float("-inf")

    # --- start -----------------------------------------------------------
    def start(self) -> None:
        """What a starting kubelet does: announce itself, then post its status."""
        now = self.api.clock()
        self.network_ready_at = now + self.lifecycle.timings.network_ready if self._fresh else now
        self.started = True
        self.recorder.node(self.name, "Normal", "Starting", "Starting kubelet.")
        self.recorder.node(self.name, "Normal", "NodeAllocatableEnforced", "Updated Node Allocatable limit across pods")
        self.sync_status(force=True)
        self.renew_lease()

    # --- status ----------------------------------------------------------
    def _conditions(self, old: list[dict], now: float) -> tuple[list[dict], list[str]]:
        stamp = rfc3339(now)
        by_type = {c.get("type"): c for c in old}
        wanted = list(self.lifecycle.node_conditions)
        ready = self.lifecycle.ready if now >= self.network_ready_at else self.lifecycle.network_not_ready
        wanted.append({**ready, "type": "Ready"})
        out, events = [], []
        for spec in wanted:
            before = by_type.get(spec["type"])
            changed = before is None or before.get("status") != spec["status"]
            cond = {"type": spec["type"], "status": spec["status"], "lastHeartbeatTime": stamp,
                    "lastTransitionTime": stamp if changed else before.get("lastTransitionTime", stamp),
                    "reason": spec["reason"], "message": spec["message"]}
            out.append(cond)
            if spec["type"] != "Ready" and changed and spec.get("event"):
                events.append(spec["event"])
            elif spec["type"] == "Ready" and changed and before is not None:
                events.append("NodeReady" if spec["status"] == "True" else "NodeNotReady")
        others = [c for c in old if c.get("type") not in {w["type"] for w in wanted}]
        return others + out, events

    def sync_status(self, force: bool = False) -> None:
        """Recompute the node status; write it when it differs from the node's status in the API or the report
        interval passed (kubelet_node_status.go tryUpdateNodeStatus compares with the node it read, so a Ready
        condition another component set to Unknown is put right at the next update)."""
        node = self.api.store.get("nodes", "", self.name)
        if node is None:
            return
        now = self.api.clock()
        status = clone(node.get("status") or {})
        conditions, events = self._conditions(status.get("conditions") or [], now)
        images = self.images.status()
        due = now - self._last_report >= self.lifecycle.timings.node_status_report
        if not force and not due and _signature(conditions, images) == _signature(status.get("conditions") or [],
                                                                                  status.get("images")):
            return
        status["conditions"] = conditions
        status["images"] = images
        try:
            self.api.update("nodes", {**node, "status": status}, subresource="status", manager="kubelet")
        except ApiError:
            return
        self._last_report = now
        for event in events:
            self.recorder.node(self.name, "Normal", event, f"Node {self.name} status is now: {event}")

    def next_network_check(self, now: float) -> float | None:
        """When the pod network comes up (the Ready condition flips), if still ahead."""
        return self.network_ready_at if self.network_ready_at > now else None

    # --- lease -----------------------------------------------------------
    def renew_lease(self) -> None:
        node = self.api.store.get("nodes", "", self.name)
        if node is None:
            return
        renew = rfc3339_micro(self.api.clock())
        lease = self.api.store.get("leases.coordination.k8s.io", LEASE_NAMESPACE, self.name)
        try:
            if lease is None:
                self.api.create("leases.coordination.k8s.io", {
                    "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": LEASE_NAMESPACE,
                                 "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": self.name,
                                                      "uid": node["metadata"]["uid"]}]},
                    "spec": {"holderIdentity": self.name, "leaseDurationSeconds": self.lifecycle.timings.lease_duration,
                             "renewTime": renew}}, LEASE_NAMESPACE, manager="kubelet")
            else:
                updated = clone(lease)
                updated["spec"] = {**(updated.get("spec") or {}), "holderIdentity": self.name,
                                   "leaseDurationSeconds": self.lifecycle.timings.lease_duration, "renewTime": renew}
                self.api.update("leases.coordination.k8s.io", updated, LEASE_NAMESPACE, manager="kubelet")
        except ApiError:
            pass


def _signature(conditions: list[dict], images) -> tuple:
    """What a status update would change, heartbeat times left out (nodeStatusHasChanged)."""
    return sorted((c.get("type"), c.get("status"), c.get("reason")) for c in conditions), images
