"""Node IPAM: a Node without pod CIDRs gets the next free /24 of the cluster CIDR, as kind's controller-manager
gives it (``--allocate-node-cidrs=true --cluster-cidr=10.244.0.0/16``, the default ``--node-cidr-mask-size`` 24).

Port of pkg/controller/nodeipam/ipam/range_allocator.go and cidrset/cidr_set.go (v1.37), single stack: the CIDRs
of every node already there are taken first; ``AllocateNext`` searches from the block after the last one it gave,
wrapping round; the CIDRs go on with the strategic merge patch ``{"spec": {"podCIDR": c, "podCIDRs": [c]}}`` of
component-helpers' ``PatchNodeCIDRs``; a deleted node's block is free again; a full range is the node's
``CIDRNotAvailable`` event. A node that already has CIDRs keeps them (the course's topology nodes get theirs at
registration, :func:`gpulab.cluster.topology.node_object`); blocks outside the range are not tracked.
"""
from __future__ import annotations

import ipaddress

from .base import Controller
from .workload import MANAGER

COMPONENT = "cidrAllocator"
CLUSTER_CIDR = ipaddress.ip_network("10.244.0.0/16")
MASK = 24


class NodeIpamController(Controller):
    name = "node-ipam-controller"
    watches = ("nodes",)

    def __init__(self, api):
        super().__init__(api)
        self._blocks = 1 << (MASK - CLUSTER_CIDR.prefixlen)
        self._used: dict[int, str] = {}     # block index -> node name
        self._next = 0
        self._loaded = False

    def _index(self, cidr: str) -> int | None:
        try:
            net = ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            return None
        if net.version != 4 or net.prefixlen != MASK or not net.subnet_of(CLUSTER_CIDR):
            return None
        return (int(net.network_address) - int(CLUSTER_CIDR.network_address)) >> (32 - MASK)

    def _occupy(self, node: dict) -> None:
        for cidr in (node.get("spec") or {}).get("podCIDRs") or ():
            index = self._index(cidr)
            if index is not None:
                self._used[index] = node["metadata"]["name"]

    def _allocate_next(self, name: str) -> str | None:
        candidate = self._next
        for _ in range(self._blocks):
            if candidate not in self._used:
                self._used[candidate] = name
                self._next = (candidate + 1) % self._blocks
                base = int(CLUSTER_CIDR.network_address) + (candidate << (32 - MASK))
                return f"{ipaddress.IPv4Address(base)}/{MASK}"
            candidate = (candidate + 1) % self._blocks
        return None

    async def reconcile(self, work_key) -> float | None:
        _, name = work_key
        if not self._loaded:    # the allocator marks every existing node's CIDRs before it serves any
            for node in self.api.store.list("nodes"):
                self._occupy(node)
            self._loaded = True
        node = self.api.store.get("nodes", "", name)
        if node is None or node["metadata"].get("deletionTimestamp"):
            for index in [i for i, owner in self._used.items() if owner == name]:
                del self._used[index]
            return None
        if (node.get("spec") or {}).get("podCIDRs"):
            self._occupy(node)
            return None
        cidr = self._allocate_next(name)
        if cidr is None:
            ref = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": node["metadata"]["uid"]}}
            self.api.record_event(ref, "Normal", "CIDRNotAvailable", f"Node {name} status is now: CIDRNotAvailable",
                                  COMPONENT)
            return None
        try:
            self.api.patch("nodes", name, {"spec": {"podCIDR": cidr, "podCIDRs": [cidr]}}, "strategic",
                           manager=MANAGER)
        except Exception:
            del self._used[self._index(cidr)]
            raise
        return None
