"""Garbage collection of owned objects: background, foreground and orphan deletion.

As pkg/controller/garbagecollector: when every owner an object names in its
``ownerReferences`` is gone, the object is deleted (background); an owner
deleted with ``propagationPolicy=Foreground`` carries the
``foregroundDeletion`` finalizer until its blocking dependents are gone; one
deleted with ``Orphan`` carries ``orphan`` until the references to it are
removed from its dependents. Owner references whose owner is missing but where
another owner remains are simply removed.
"""
from __future__ import annotations

from ..errors import ApiError
from ..store import Change
from .base import Controller


class GarbageCollector(Controller):
    name = "garbage-collector"

    def __init__(self, api):
        super().__init__(api)
        self._by_uid: dict[str, tuple[str, str, str]] = {}
        self._dependents: dict[str, set[tuple[str, str, str]]] = {}

    async def run(self) -> None:
        store = self.api.store
        for key in list(store.keys()):
            for obj in store.list(key):
                self._index(key, obj, None)
        store.listen(self._on_store_change)
        for ident in list(self._by_uid.values()):
            self.queue.add(("check", ident))
        await super().run()

    def initial_keys(self):
        return []

    # --- indexes ----------------------------------------------------------
    def _index(self, key: str, obj: dict, old: dict | None) -> None:
        m = obj["metadata"]
        ident = (key, m.get("namespace", ""), m["name"])
        if old is not None:
            for ref in old["metadata"].get("ownerReferences") or ():
                self._dependents.get(ref.get("uid"), set()).discard(ident)
        self._by_uid[m["uid"]] = ident
        for ref in m.get("ownerReferences") or ():
            self._dependents.setdefault(ref.get("uid"), set()).add(ident)

    def _on_store_change(self, change: Change) -> None:
        obj, m = change.obj, change.obj["metadata"]
        ident = (change.key, m.get("namespace", ""), m["name"])
        if change.type == "DELETED":
            self._by_uid.pop(m.get("uid"), None)
            for ref in m.get("ownerReferences") or ():
                self._dependents.get(ref.get("uid"), set()).discard(ident)
            for dep in list(self._dependents.get(m.get("uid"), ())):
                self.queue.add(("check", dep))
            # an owner waiting for this dependent to go (foreground) may now finish
            for ref in m.get("ownerReferences") or ():
                owner = self._by_uid.get(ref.get("uid"))
                if owner is not None:
                    self.queue.add(("owner", owner))
            return
        self._index(change.key, obj, change.old)
        finalizers = m.get("finalizers") or ()
        if m.get("deletionTimestamp") and ("foregroundDeletion" in finalizers or "orphan" in finalizers):
            self.queue.add(("owner", ident))
        if m.get("ownerReferences"):
            self.queue.add(("check", ident))

    # --- reconcile --------------------------------------------------------
    async def reconcile(self, work_key) -> float | None:
        kind, (key, ns, name) = work_key
        obj = self.api.store.get(key, ns, name)
        if obj is None:
            return None
        if kind == "owner":
            return self._process_owner(key, obj)
        return self._process_dependent(key, obj)

    def _process_dependent(self, key: str, obj: dict) -> float | None:
        m = obj["metadata"]
        refs = m.get("ownerReferences") or []
        if not refs or m.get("deletionTimestamp"):
            return None
        alive = [r for r in refs if r.get("uid") in self._by_uid]
        if len(alive) == len(refs):
            # An owner being deleted in the foreground takes its blocking dependents with it.
            for r in refs:
                owner_ident = self._by_uid.get(r.get("uid"))
                owner = self.api.store.get(*owner_ident) if owner_ident else None
                if owner and owner["metadata"].get("deletionTimestamp") and \
                        "foregroundDeletion" in (owner["metadata"].get("finalizers") or ()):
                    self._delete(key, obj, "Foreground")
                    return None
            return None
        if alive:
            patched = {**obj, "metadata": {**m, "ownerReferences": alive}}
            self.api.update(self.api.rt(key), patched, m.get("namespace") or None, manager="garbage-collector")
            return None
        self._delete(key, obj, "Background")
        return None

    def _delete(self, key: str, obj: dict, policy: str) -> None:
        m = obj["metadata"]
        try:
            self.api.delete(self.api.rt(key), m["name"], m.get("namespace") or None, propagation_policy=policy,
                            preconditions={"uid": m["uid"]})
        except ApiError as exc:
            if exc.code not in (404, 409):
                raise

    def _process_owner(self, key: str, owner: dict) -> float | None:
        m = owner["metadata"]
        finalizers = list(m.get("finalizers") or [])
        idents = list(self._dependents.get(m["uid"], ()))
        deps = [(dep, ident) for dep, ident in ((self.api.store.get(*i), i) for i in idents) if dep is not None]
        if "orphan" in finalizers:
            for dep, (dkey, _, _) in deps:
                dm = dep["metadata"]
                refs = [r for r in dm.get("ownerReferences") or [] if r.get("uid") != m["uid"]]
                self.api.update(self.api.rt(dkey), {**dep, "metadata": {**dm, "ownerReferences": refs}},
                                dm.get("namespace") or None, manager="garbage-collector")
            finalizers.remove("orphan")
            self._set_finalizers(key, owner, finalizers)
            return None
        if "foregroundDeletion" in finalizers:
            blocking = [(d, dk) for d, dk in deps if any(r.get("uid") == m["uid"] and r.get("blockOwnerDeletion")
                                                         for r in d["metadata"].get("ownerReferences") or ())]
            for dep, (dkey, _, _) in blocking:
                if not dep["metadata"].get("deletionTimestamp"):
                    self._delete(dkey, dep, "Foreground")
            if blocking:
                return 0.2
            finalizers.remove("foregroundDeletion")
            self._set_finalizers(key, owner, finalizers)
        return None

    def _set_finalizers(self, key: str, owner: dict, finalizers: list[str]) -> None:
        m = owner["metadata"]
        new_meta = {**m, "finalizers": finalizers} if finalizers else {k: v for k, v in m.items() if k != "finalizers"}
        self.api.update(self.api.rt(key), {**owner, "metadata": new_meta}, m.get("namespace") or None,
                        manager="garbage-collector")
