"""The resource types the embedded API server serves, described as data.

Everything else in the server (routing, discovery, OpenAPI, storage, printers,
validation) looks a resource up here instead of hard-coding it, the way
kube-apiserver builds its handlers from a table of REST storages. The built-in
resources are declared by their kinds' strategies and a registry serving them
comes from :func:`gpulab.cluster.kinds.builtin_registry` (their metadata as a
v1.37 kube-apiserver's discovery reports it, so ``kubectl api-resources``
prints the same table); custom resources defined by a CustomResourceDefinition
are added at run time with :meth:`Registry.add_crd` and leave again with
:meth:`Registry.remove_crd`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ResourceType:
    """One REST resource (``pods``, ``deployments.apps``, ``podgroups.scheduling.x-k8s.io``)."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: tuple[str, ...] = ()
    # For custom resources: the CRD version entry (schema, printer columns, subresources).
    crd: dict | None = field(default=None, compare=False, hash=False, repr=False)
    # Another resource whose objects this one serves under a different group
    # (events.k8s.io/v1 events are core/v1 events stored once).
    storage_alias: str | None = None

    @property
    def key(self) -> str:
        """Storage key: ``pods`` for the core group, ``deployments.apps`` otherwise."""
        return self.plural if not self.group else f"{self.plural}.{self.group}"

    @property
    def storage_key(self) -> str:
        return self.storage_alias or self.key

    @property
    def group_version(self) -> str:
        return self.version if not self.group else f"{self.group}/{self.version}"

    @property
    def api_version(self) -> str:
        return self.group_version

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def singular_name(self) -> str:
        return self.singular or self.kind.lower()

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """The REST path of a collection or object, as kube-apiserver routes it."""
        prefix = "/api/" + self.version if not self.group else f"/apis/{self.group}/{self.version}"
        parts = [prefix]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{namespace}")
        parts.append(self.plural)
        if name:
            parts.append(name)
        return "/".join(parts)


class Registry:
    """Looks resource types up by storage key, by (group, version, plural) and by kind."""

    def __init__(self, types: tuple[ResourceType, ...]):
        self._by_gvr: dict[tuple[str, str, str], ResourceType] = {}
        self._crd_names: dict[str, list[ResourceType]] = {}
        # Bumped whenever the served types change, so discovery and OpenAPI
        # documents (and their hashes) can be cached per generation.
        self.generation = 0
        for rt in types:
            self._add(rt)

    def _add(self, rt: ResourceType) -> None:
        self._by_gvr[(rt.group, rt.version, rt.plural)] = rt

    def types(self) -> list[ResourceType]:
        return list(self._by_gvr.values())

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_gvr.get((group, version, plural))

    def by_key(self, key: str) -> ResourceType:
        """The preferred (storage) version of ``pods`` / ``deployments.apps``; KeyError if unknown."""
        plural, _, group = key.partition(".")
        for rt in self._by_gvr.values():
            if rt.plural == plural and rt.group == group and rt.storage_alias is None:
                if rt.crd is None or rt.crd.get("storage", True):
                    return rt
        raise KeyError(key)

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [rt for rt in self._by_gvr.values() if rt.group == group and rt.version == version]

    # --- custom resources -------------------------------------------------
    def add_crd(self, crd: dict) -> list[ResourceType]:
        """Serve every version of an established CRD; replaces what an earlier revision served."""
        self.remove_crd(crd["metadata"]["name"])
        spec = crd["spec"]
        names = spec["names"]
        added = []
        for ver in spec.get("versions", []):
            if not ver.get("served", True):
                continue
            subs = tuple(sorted((ver.get("subresources") or {}).keys()))
            rt = ResourceType(
                group=spec["group"], version=ver["name"], plural=names["plural"], kind=names["kind"],
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                singular=names.get("singular", ""),
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                subresources=subs,
                crd=ver,
            )
            self._add(rt)
            added.append(rt)
        self._crd_names[crd["metadata"]["name"]] = added
        self.generation += 1
        return added

    def remove_crd(self, crd_name: str) -> None:
        removed = self._crd_names.pop(crd_name, [])
        for rt in removed:
            self._by_gvr.pop((rt.group, rt.version, rt.plural), None)
        if removed:
            self.generation += 1
