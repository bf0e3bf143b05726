"""The resource quota controller: each ResourceQuota's ``status.hard`` and ``status.used``.

Port of pkg/controller/resourcequota/resource_quota_controller.go
(``syncResourceQuota``: hard from spec.hard, used recalculated from every
matching object of the namespace) with its replenishment: a change to an
object a quota counts (a pod finishing or going away, a claim deleted) makes
the namespace's quotas recalculate. Namespaces without quotas cost nothing:
the change handlers look the namespace up and return.
"""
from __future__ import annotations

from .. import quota
from ..objects import clone
from .base import Controller
from .workload import MANAGER

QUOTAS = "resourcequotas"
# The storage keys whose objects the evaluators count by more than their number; any other namespaced kind is
# counted through count/<resource> when a quota asks for it.
_COUNTED = ("pods", "services", "persistentvolumeclaims", "configmaps", "secrets", "replicationcontrollers")
_RECALC_DELAY = 0.05
_RESYNC = 300.0  # --resource-quota-sync-period: kinds without a watch here are recounted this often


class ResourceQuotaController(Controller):
    name = "resourcequota-controller"
    watches = (QUOTAS, *_COUNTED)

    def keys_for(self, key: str, obj: dict):
        ns = obj["metadata"].get("namespace", "")
        if key == QUOTAS:
            return [(ns, obj["metadata"]["name"])]
        return [(ns, q["metadata"]["name"]) for q in self.api.store.list(QUOTAS, ns)]

    def _on_change(self, key: str):
        def handler(event_type: str, obj: dict, old: dict | None) -> None:
            for k in self.keys_for(key, obj):
                if key == QUOTAS:
                    self.queue.add(k)
                else:  # replenishment: let a burst of object changes end before recounting
                    self.queue.add_after(k, _RECALC_DELAY)
        return handler

    def _used(self, q: dict, hard: dict) -> dict:
        ns = q["metadata"]["namespace"]
        now = self.api.clock()
        totals: quota.ResourceList = {name: 0 for name in hard}
        keys = set(_COUNTED)
        keys |= {name[len("count/"):] for name in hard if name.startswith("count/")}
        for key in keys:
            try:
                rt = self.api.registry.by_key(key)
            except KeyError:
                continue
            if not rt.namespaced or not quota.matching_resources(key, hard):
                continue
            for obj in self.api.store.list(rt.storage_key, ns):
                if quota.matches({**q, "status": {"hard": hard}}, key, obj):
                    totals = quota.add(totals, quota.mask(quota.usage(key, obj, now), hard))
        return quota.formatted(totals, hard)

    async def reconcile(self, work_key) -> float | None:
        ns, name = work_key
        q = self.api.store.get(QUOTAS, ns, name)
        if q is None or q["metadata"].get("deletionTimestamp"):
            return None
        hard = dict((q.get("spec") or {}).get("hard") or {})
        status = {"hard": hard, "used": self._used(q, hard)}
        if (q.get("status") or {}) != status:
            new = clone(q)
            new["status"] = status
            self.api.update(QUOTAS, new, ns, subresource="status", manager=MANAGER)
        return _RESYNC
