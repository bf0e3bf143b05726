"""Namespace lifecycle: a deleted namespace empties itself, then goes away.

As pkg/controller/namespace/deletion: every namespaced resource in the
namespace is deleted; when none are left, the ``kubernetes`` finalizer is
removed (the ``finalize`` subresource) and the namespace disappears.
"""
from __future__ import annotations

from .base import Controller


class NamespaceController(Controller):
    name = "namespace-controller"
    watches = ("namespaces",)

    def keys_for(self, key: str, obj: dict):
        return [obj["metadata"]["name"]]

    async def reconcile(self, name: str) -> float | None:
        ns = self.api.try_get("namespaces", name)
        if ns is None or not ns["metadata"].get("deletionTimestamp"):
            return None
        remaining = 0
        for rt in self.api.registry.types():
            if not rt.namespaced or rt.storage_alias:
                continue
            if rt.crd is not None and not rt.crd.get("storage", True):
                continue
            for obj in self.api.store.list(rt.storage_key, name):
                remaining += 1
                if not obj["metadata"].get("deletionTimestamp"):
                    self.api.delete(rt, obj["metadata"]["name"], name, propagation_policy="Background")
        if remaining:
            return 0.2
        if (ns.get("spec") or {}).get("finalizers"):
            finalized = {**ns, "spec": {**(ns.get("spec") or {}), "finalizers": []}}
            self.api.update("namespaces", finalized, subresource="finalize")
        return None
