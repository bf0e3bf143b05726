"""What the DynamicResources plugin keeps between cycles (its dra_manager.go and the claim assume cache).

* the inventory of devices (``dra.allocator.Inventory``), rebuilt when a
  ResourceSlice or a DeviceTaintRule changes (upstream's resourceslice tracker
  applies the rules' taints to the slices the plugin sees);
* the devices allocated claims hold (``InUse``), kept up to date from claim
  changes (each change adds or removes that claim's results, so a pod's
  cycle costs the same with 3 claims allocated or 3,000), plus the
  allocations of pods that passed Reserve and whose claims are not written yet (upstream's ``inFlightAllocations``): a pod waiting at
  Permit holds its devices, and another pod cannot get them.
"""
from __future__ import annotations

from .... import features
from ....dra.allocator import Inventory, InUse
from ....dra.claims import CLAIMS, SLICES, TAINT_RULES


def _results(claim: dict) -> list[dict]:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return list((allocation.get("devices") or {}).get("results") or ())


class ClaimTracker:
    def __init__(self, api):
        self.api = api
        self._inventory: Inventory | None = None
        self._allocated: dict[str, list[dict]] = {}  # claim uid -> results
        self.in_flight: dict[str, list[dict]] = {}  # claim uid -> results reserved but not yet written
        self._holding = InUse()  # what the allocated claims hold, changed in place
        self._in_use: InUse | None = None  # a copy of it handed to allocators, made again after a change
        self.taints = features.enabled("DRADeviceTaints")
        self.rules = self.taints and features.enabled("DRADeviceTaintRules")
        api.subscribe(SLICES, self._on_slice)
        if self.rules:
            api.subscribe(TAINT_RULES, self._on_slice)
        api.subscribe(CLAIMS, self._on_claim)
        for claim in api.list(CLAIMS):
            self._on_claim("ADDED", claim, None)

    def stop(self) -> None:
        self.api.unsubscribe(SLICES, self._on_slice)
        if self.rules:
            self.api.unsubscribe(TAINT_RULES, self._on_slice)
        self.api.unsubscribe(CLAIMS, self._on_claim)

    def _on_slice(self, event_type: str, obj: dict, old: dict | None) -> None:
        self._inventory = None

    def _on_claim(self, event_type: str, claim: dict, old: dict | None) -> None:
        uid = claim["metadata"].get("uid", "")
        results = [] if event_type == "DELETED" else _results(claim)
        if results:
            self.in_flight.pop(uid, None)
        previous = self._allocated.get(uid, [])
        if results != previous:
            self._holding.remove(previous)
            self._holding.add(results)
            if results:
                self._allocated[uid] = results
            else:
                self._allocated.pop(uid, None)
            self._in_use = None

    @property
    def inventory(self) -> Inventory:
        if self._inventory is None:
            rules = self.api.list(TAINT_RULES) if self.rules else ()
            self._inventory = Inventory(self.api.list(SLICES), rules, device_taints=self.taints)
        return self._inventory

    def in_use(self, excluding: set[str] = frozenset()) -> InUse:
        """Devices held by allocated and in-flight claims (not counting the claims in ``excluding``)."""
        if not self.in_flight and not excluding:
            if self._in_use is None:
                self._in_use = self._holding.copy()
            return self._in_use
        in_use = self._holding.copy()
        for uid in excluding:
            in_use.remove(self._allocated.get(uid, ()))
        for uid, results in self.in_flight.items():
            if uid not in excluding:
                in_use.add(results)
        return in_use

    def reserve(self, uid: str, results: list[dict]) -> None:
        self.in_flight[uid] = results

    def unreserve(self, uid: str) -> None:
        self.in_flight.pop(uid, None)
