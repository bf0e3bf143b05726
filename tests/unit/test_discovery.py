"""Discovery documents: the exact shapes kubectl and client-go read (see gpulab/cluster/discovery.py)."""
from __future__ import annotations

import functools

import pytest

from gpulab.cluster import discovery
from gpulab.cluster.kinds import builtin_registry

ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def _crd(group="nvidia.com", kind="ClusterPolicy", plural="clusterpolicies", scope="Cluster",
         versions=(("v1", True),), subresources=None, short_names=None):
    return {
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group, "scope": scope,
            "names": {"kind": kind, "listKind": kind + "List", "plural": plural, "singular": kind.lower(),
                      **({"shortNames": short_names} if short_names else {})},
            "versions": [{"name": name, "served": True, "storage": storage,
                          "subresources": subresources or {},
                          "schema": {"openAPIV3Schema": {"type": "object"}}} for name, storage in versions],
        },
    }


@pytest.fixture
def registry():
    return builtin_registry()


def test_version_info_reports_v1_37():
    info = discovery.version_info()
    assert (info["major"], info["minor"], info["gitVersion"]) == ("1", "37", "v1.37.1")
    assert (info["emulationMajor"], info["emulationMinor"]) == ("1", "37")
    assert (info["minCompatibilityMajor"], info["minCompatibilityMinor"]) == ("1", "36")
    assert list(info) == ["major", "minor", "emulationMajor", "emulationMinor", "minCompatibilityMajor",
                          "minCompatibilityMinor", "gitVersion", "gitCommit", "gitTreeState", "buildDate",
                          "goVersion", "compiler", "platform"]


def test_api_versions_is_legacy_apiversions():
    assert discovery.api_versions("10.0.0.1:6443") == {
        "kind": "APIVersions", "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "10.0.0.1:6443"}]}


def test_api_group_list_orders_groups_by_apiservice_priority(registry):
    doc = discovery.api_group_list(registry)
    assert (doc["kind"], doc["apiVersion"]) == ("APIGroupList", "v1")
    assert [g["name"] for g in doc["groups"]] == [
        "apiregistration.k8s.io", "apps", "events.k8s.io", "authentication.k8s.io", "authorization.k8s.io",
        "autoscaling", "batch", "certificates.k8s.io", "networking.k8s.io", "policy", "rbac.authorization.k8s.io",
        "storage.k8s.io", "admissionregistration.k8s.io", "apiextensions.k8s.io", "scheduling.k8s.io",
        "coordination.k8s.io", "node.k8s.io", "discovery.k8s.io", "resource.k8s.io", "flowcontrol.apiserver.k8s.io",
        "storagemigration.k8s.io"]
    assert doc["groups"][1] == {"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
                                "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}}
    autoscaling = next(g for g in doc["groups"] if g["name"] == "autoscaling")
    assert [v["version"] for v in autoscaling["versions"]] == ["v2", "v1"]


def test_crd_groups_come_last_and_prefer_the_highest_kube_version(registry):
    registry.add_crd(_crd(group="example.com", kind="Widget", plural="widgets",
                          versions=(("v1alpha1", False), ("v1", True), ("v1beta1", False))))
    registry.add_crd(_crd())
    groups = discovery.api_group_list(registry)["groups"]
    # Both at groupPriorityMinimum 1000: ordered by APIService name "v1.example.com" < "v1.nvidia.com".
    assert [g["name"] for g in groups][-2:] == ["example.com", "nvidia.com"]
    widget = groups[-2]
    assert [v["version"] for v in widget["versions"]] == ["v1", "v1beta1", "v1alpha1"]
    assert widget["preferredVersion"] == {"groupVersion": "example.com/v1", "version": "v1"}


def test_core_resource_list_has_no_apiversion_and_upstream_entries(registry):
    doc = discovery.api_resource_list(registry, "", "v1")
    assert list(doc) == ["kind", "groupVersion", "resources"]
    names = [r["name"] for r in doc["resources"]]
    assert names == sorted(names)
    pods = next(r for r in doc["resources"] if r["name"] == "pods")
    assert pods == {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod", "verbs": ALL_VERBS,
                    "shortNames": ["po"], "categories": ["all"], "storageVersionHash": "xPOwRZ+Yhw8="}
    by_name = {r["name"]: r for r in doc["resources"]}
    assert by_name["pods/eviction"] == {"name": "pods/eviction", "singularName": "", "namespaced": True,
                                        "group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"]}
    assert by_name["pods/binding"] == {"name": "pods/binding", "singularName": "", "namespaced": True,
                                       "kind": "Binding", "verbs": ["create"]}
    assert by_name["pods/log"]["verbs"] == ["get"]
    assert by_name["pods/status"]["verbs"] == ["get", "patch", "update"]
    assert by_name["namespaces/finalize"] == {"name": "namespaces/finalize", "singularName": "",
                                              "namespaced": False, "kind": "Namespace", "verbs": ["update"]}
    assert by_name["namespaces"]["verbs"] == ["create", "delete", "get", "list", "patch", "update", "watch"]


def test_group_resource_list_carries_apiversion_and_scale(registry):
    doc = discovery.api_resource_list(registry, "apps", "v1")
    assert list(doc)[:3] == ["kind", "apiVersion", "groupVersion"]
    assert doc["groupVersion"] == "apps/v1"
    scale = next(r for r in doc["resources"] if r["name"] == "deployments/scale")
    assert (scale["group"], scale["version"], scale["kind"]) == ("autoscaling", "v1", "Scale")
    assert discovery.api_resource_list(registry, "apps", "v2") is None


def _hashes(registry, group, version):
    return {r["name"]: r.get("storageVersionHash")
            for r in discovery.api_resource_list(registry, group, version)["resources"]}


def test_storage_version_hashes_match_upstream(registry):
    core = _hashes(registry, "", "v1")
    assert (core["pods"], core["nodes"], core["namespaces"], core["configmaps"], core["events"]) == (
        "xPOwRZ+Yhw8=", "XwShjMxG9Fs=", "Q3oi5N2YM8M=", "qFsyl6wFWjQ=", "r2yiGXH7wu8=")
    assert _hashes(registry, "apps", "v1")["deployments"] == "8aSe+NMegvE="
    # events.k8s.io/v1 events are stored as core/v1 events.
    events = discovery.api_resource_list(registry, "events.k8s.io", "v1")["resources"][0]
    assert events["storageVersionHash"] == "r2yiGXH7wu8="


def test_crd_resource_list_uses_apiextensions_verbs_and_storage_version(registry):
    registry.add_crd(_crd(group="example.com", kind="Widget", plural="widgets", scope="Namespaced",
                          versions=(("v1", False), ("v1beta1", True)), subresources={"status": {}, "scale": {}},
                          short_names=["wd"]))
    resources = discovery.api_resource_list(registry, "example.com", "v1")["resources"]
    assert [r["name"] for r in resources] == ["widgets", "widgets/scale", "widgets/status"]
    widget = resources[0]
    assert widget["verbs"] == ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"]
    assert widget["shortNames"] == ["wd"]
    assert widget["storageVersionHash"] == discovery.storage_version_hash("example.com", "v1beta1", "Widget")
    assert resources[1] == {"name": "widgets/scale", "singularName": "", "namespaced": True, "group": "autoscaling",
                            "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]}


def test_aggregated_legacy_lists_pods_with_short_names_and_categories(registry):
    doc = discovery.aggregated_discovery(registry, legacy=True)
    assert (doc["kind"], doc["apiVersion"], doc["metadata"]) == ("APIGroupDiscoveryList", "apidiscovery.k8s.io/v2", {})
    [core] = doc["items"]
    assert core["metadata"] == {}
    [v1] = core["versions"]
    assert (v1["version"], v1["freshness"]) == ("v1", "Current")
    pods = next(r for r in v1["resources"] if r["resource"] == "pods")
    assert pods["shortNames"] == ["po"]
    assert pods["categories"] == ["all"]
    assert pods["scope"] == "Namespaced"
    assert pods["singularResource"] == "pod"
    assert pods["responseKind"] == {"group": "", "version": "", "kind": "Pod"}
    subs = {s["subresource"]: s for s in pods["subresources"]}
    assert list(subs) == ["attach", "binding", "ephemeralcontainers", "eviction", "exec", "log", "portforward",
                          "proxy", "status"]
    assert subs["exec"] == {"subresource": "exec", "responseKind": {"group": "", "version": "", "kind": "PodExecOptions"},
                            "verbs": ["create", "get"]}
    assert subs["eviction"] == {"subresource": "eviction",
                                "responseKind": {"group": "policy", "version": "v1", "kind": "Eviction"},
                                "verbs": ["create"]}


def test_aggregated_groups_order_and_crd_response_kinds(registry):
    registry.add_crd(_crd(subresources={"status": {}}))
    doc = discovery.aggregated_discovery(registry, legacy=False)
    names = [item["metadata"]["name"] for item in doc["items"]]
    assert names == ["apiregistration.k8s.io", "apps", "events.k8s.io", "authentication.k8s.io",
                     "authorization.k8s.io", "autoscaling", "batch", "certificates.k8s.io", "networking.k8s.io",
                     "policy", "rbac.authorization.k8s.io", "storage.k8s.io", "admissionregistration.k8s.io",
                     "apiextensions.k8s.io", "scheduling.k8s.io", "coordination.k8s.io", "node.k8s.io",
                     "discovery.k8s.io", "resource.k8s.io", "flowcontrol.apiserver.k8s.io", "storagemigration.k8s.io", "nvidia.com"]
    [policy] = doc["items"][-1]["versions"][0]["resources"]
    assert policy == {
        "resource": "clusterpolicies",
        "responseKind": {"group": "nvidia.com", "version": "v1", "kind": "ClusterPolicy"},
        "scope": "Cluster", "singularResource": "clusterpolicy",
        "verbs": ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"],
        "subresources": [{"subresource": "status",
                          "responseKind": {"group": "nvidia.com", "version": "v1", "kind": "ClusterPolicy"},
                          "verbs": ["get", "patch", "update"]}]}


def test_documents_are_cached_per_generation(registry):
    first = discovery.aggregated_discovery(registry, legacy=False)
    assert discovery.aggregated_discovery(registry, legacy=False) is first
    registry.add_crd(_crd())
    second = discovery.aggregated_discovery(registry, legacy=False)
    assert second is not first
    assert second["items"][-1]["metadata"]["name"] == "nvidia.com"
    registry.remove_crd("clusterpolicies.nvidia.com")
    assert "nvidia.com" not in [i["metadata"]["name"] for i in discovery.aggregated_discovery(registry, False)["items"]]


def test_kube_aware_version_order():
    versions = ["foo10", "v1alpha1", "v1", "v2", "v1beta1", "v1beta2", "foo1", "v11alpha2", "v10"]
    ordered = sorted(versions, key=functools.cmp_to_key(lambda a, b: -discovery.compare_kube_aware_versions(a, b)))
    assert ordered == ["v10", "v2", "v1", "v1beta2", "v1beta1", "v11alpha2", "v1alpha1", "foo1", "foo10"]
