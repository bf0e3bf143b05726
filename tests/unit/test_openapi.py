"""OpenAPI v2/v3 documents: what kubectl explain, apply's field validation check and strategic merge read."""
from __future__ import annotations

import copy
import hashlib

import orjson
import pytest

from gpulab.cluster import openapi, schema
from gpulab.cluster.kinds import builtin_registry

CLUSTER_POLICY = {
    "metadata": {"name": "clusterpolicies.nvidia.com"},
    "spec": {
        "group": "nvidia.com", "scope": "Cluster",
        "names": {"kind": "ClusterPolicy", "listKind": "ClusterPolicyList", "plural": "clusterpolicies",
                  "singular": "clusterpolicy"},
        "versions": [{
            "name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {
                "type": "object", "description": "ClusterPolicy is the Schema for the clusterpolicies API",
                "properties": {
                    "metadata": {"type": "object"},
                    "spec": {
                        "type": "object", "description": "ClusterPolicySpec defines the desired state of ClusterPolicy",
                        "required": ["driver", "config"],
                        "properties": {
                            "driver": {"type": "object", "example": {"enabled": True}, "properties": {
                                "enabled": {"type": "boolean", "default": True,
                                            "description": "Enabled indicates if deployment of NVIDIA Driver "
                                                           "through operator is enabled"}}},
                            "config": {"type": "object", "nullable": True,
                                       "properties": {"name": {"type": "string"}}},
                            "maxUnavailable": {"x-kubernetes-int-or-string": True},
                            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                            "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                                         "properties": {"spec": {"type": "object"}}},
                        }},
                }}},
        }],
    },
}
PRESERVE_ALL = {
    "metadata": {"name": "things.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"kind": "Thing", "plural": "things"},
             "versions": [{"name": "v1alpha1", "served": True, "storage": True, "subresources": {"scale": {}},
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]},
}


@pytest.fixture
def registry():
    return builtin_registry()


@pytest.fixture
def with_crds(registry):
    registry.add_crd(copy.deepcopy(CLUSTER_POLICY))
    registry.add_crd(copy.deepcopy(PRESERVE_ALL))
    return registry


def _walk(node):
    yield node
    if isinstance(node, dict):
        for v in node.values():
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)


def _schema_nodes(node):
    """Every schema in a definition: itself, its properties, items and additionalProperties, recursively."""
    yield node
    for sub in (node.get("properties") or {}).values():
        yield from _schema_nodes(sub)
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            yield from _schema_nodes(node[key])


def _refs(doc):
    return {n["$ref"].rsplit("/", 1)[-1] for n in _walk(doc) if isinstance(n, dict) and isinstance(n.get("$ref"), str)}


def _patch_ops(doc, gvk):
    return [item["patch"] for item in doc["paths"].values()
            if "patch" in item and item["patch"].get("x-kubernetes-group-version-kind") == gvk]


def test_pod_tolerations_in_v3_core_document(registry):
    doc = openapi.openapi_v3_document(registry, "api/v1")
    schemas = doc["components"]["schemas"]
    pod = schemas["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    assert pod["properties"]["spec"] == {
        "allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}],
        "description": "Specification of the desired behavior of the pod. More info: "
                       "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"
                       "#spec-and-status"}
    tolerations = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["tolerations"]
    assert tolerations["description"] == "If specified, the pod's tolerations."
    assert tolerations["items"] == {"$ref": "#/components/schemas/io.k8s.api.core.v1.Toleration"}
    assert schemas["io.k8s.api.core.v1.Toleration"]["properties"]["effect"]["description"] == (
        "Effect indicates the taint effect to match. Empty means match all taint effects. When specified, allowed "
        "values are NoSchedule, PreferNoSchedule and NoExecute.")
    assert (doc["openapi"], doc["info"]) == ("3.0.0", {"title": "Kubernetes", "version": "v1.37.1"})


def test_pod_patch_operation_carries_field_validation(registry):
    doc = openapi.openapi_v3_document(registry, "api/v1")
    item = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]
    patch = item["patch"]
    assert patch["operationId"] == "patchCoreV1NamespacedPod"
    assert patch["tags"] == ["core_v1"]
    assert patch["x-kubernetes-action"] == "patch"
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "kind": "Pod", "version": "v1"}
    names = [p["name"] for p in patch["parameters"]]
    assert names == ["dryRun", "fieldManager", "fieldValidation", "force"]
    assert patch["parameters"][2] == {
        "description": openapi.FIELD_VALIDATION.description, "in": "query", "name": "fieldValidation",
        "schema": {"type": "string", "uniqueItems": True}}
    assert openapi.FIELD_VALIDATION.description.startswith(
        "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing "
        "unknown or duplicate fields.")
    assert sorted(patch["requestBody"]["content"]) == [
        "application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json",
        "application/strategic-merge-patch+json"]
    assert [p["name"] for p in item["parameters"]] == ["name", "namespace", "pretty"]


def test_every_patch_operation_for_every_served_kind_has_field_validation(with_crds):
    """query_param_verifier_v3.go takes the first PATCH operation whose GVK matches, in map order."""
    index = openapi.openapi_v3_index(with_crds)
    for rt in with_crds.types():
        path = f"apis/{rt.group}/{rt.version}" if rt.group else f"api/{rt.version}"
        assert path in index["paths"]
        if "patch" not in rt.verbs:  # bindings, componentstatuses
            continue
        ops = _patch_ops(openapi.openapi_v3_document(with_crds, path),
                         {"group": rt.group, "kind": rt.kind, "version": rt.version})
        assert ops, rt.key
        for op in ops:
            assert "fieldValidation" in [p["name"] for p in op["parameters"]], rt.key


def test_strategic_merge_keys_as_upstream(registry):
    v3 = openapi.openapi_v3_document(registry, "api/v1")["components"]["schemas"]
    v2 = openapi.openapi_v2(registry)["definitions"]
    for defs in (v3, v2):
        containers = defs["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
        assert (containers["x-kubernetes-patch-merge-key"], containers["x-kubernetes-patch-strategy"]) == (
            "name", "merge")
        taints = defs["io.k8s.api.core.v1.NodeSpec"]["properties"]["taints"]
        assert taints["x-kubernetes-list-type"] == "atomic"


def test_crd_kind_in_its_group_document(with_crds):
    doc = openapi.openapi_v3_document(with_crds, "apis/nvidia.com/v1")
    assert doc["info"] == {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"}
    schemas = doc["components"]["schemas"]
    policy = schemas["com.nvidia.v1.ClusterPolicy"]
    assert policy["x-kubernetes-group-version-kind"] == [{"group": "nvidia.com", "kind": "ClusterPolicy",
                                                          "version": "v1"}]
    assert policy["properties"]["metadata"] == {
        "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "description": "Standard object's metadata. More info: "
                       "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"}
    assert policy["properties"]["spec"]["description"] == "ClusterPolicySpec defines the desired state of ClusterPolicy"
    assert schemas["com.nvidia.v1.ClusterPolicyList"]["description"] == "ClusterPolicyList is a list of ClusterPolicy"
    assert sorted(doc["paths"]) == ["/apis/nvidia.com/v1/clusterpolicies", "/apis/nvidia.com/v1/clusterpolicies/{name}",
                                    "/apis/nvidia.com/v1/clusterpolicies/{name}/status"]
    collection = doc["paths"]["/apis/nvidia.com/v1/clusterpolicies"]
    assert collection["get"]["operationId"] == "listNvidiaComV1ClusterPolicy"
    assert collection["get"]["description"] == "list objects of kind ClusterPolicy"
    assert collection["get"]["tags"] == ["nvidiaCom_v1"]
    assert collection["delete"]["description"] == "delete collection of ClusterPolicy"
    patch = doc["paths"]["/apis/nvidia.com/v1/clusterpolicies/{name}"]["patch"]
    assert sorted(patch["requestBody"]["content"]) == [
        "application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json"]
    assert set(_refs(doc)) <= set(schemas)


def test_crd_schema_conversions_v3_keep_and_v2_drop(with_crds):
    v3 = openapi.openapi_v3_document(with_crds, "apis/nvidia.com/v1")["components"]["schemas"]
    spec3 = v3["com.nvidia.v1.ClusterPolicy"]["properties"]["spec"]
    assert spec3["properties"]["maxUnavailable"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert spec3["properties"]["config"]["nullable"] is True
    assert spec3["properties"]["driver"]["properties"]["enabled"]["default"] is True
    assert "example" not in spec3["properties"]["driver"]  # not part of a structural schema
    template = spec3["properties"]["template"]
    assert sorted(template["properties"]) == ["apiVersion", "kind", "metadata", "spec"]
    assert template["required"] == ["kind", "apiVersion"]

    v2 = openapi.openapi_v2(with_crds)["definitions"]
    spec2 = v2["com.nvidia.v1.ClusterPolicy"]["properties"]["spec"]
    assert spec2["properties"]["maxUnavailable"] == {"x-kubernetes-int-or-string": True}
    assert spec2["properties"]["config"] == {}
    assert spec2["required"] == ["driver"]  # nullable properties leave required
    assert spec2["properties"]["extra"] == {"x-kubernetes-preserve-unknown-fields": True}
    assert "default" not in spec2["properties"]["driver"]["properties"]["enabled"]
    # A root that preserves unknown fields publishes no properties to v2.
    assert v2["com.example.v1alpha1.Thing"] == {
        "type": "object",
        "x-kubernetes-group-version-kind": [{"group": "example.com", "kind": "Thing", "version": "v1alpha1"}]}


def test_crd_scale_and_namespaced_routes(with_crds):
    doc = openapi.openapi_v3_document(with_crds, "apis/example.com/v1alpha1")
    paths = doc["paths"]
    assert paths["/apis/example.com/v1alpha1/things"]["get"]["operationId"] == \
        "listExampleComV1alpha1ThingForAllNamespaces"
    scale = paths["/apis/example.com/v1alpha1/namespaces/{namespace}/things/{name}/scale"]
    assert scale["get"]["operationId"] == "readExampleComV1alpha1NamespacedThingScale"
    assert scale["get"]["description"] == "read scale of the specified Thing"
    assert scale["get"]["x-kubernetes-group-version-kind"] == {"group": "example.com", "kind": "Thing",
                                                               "version": "v1alpha1"}
    assert scale["put"]["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/io.k8s.api.autoscaling.v1.Scale"}


def test_v3_hash_changes_when_a_crd_is_added(registry):
    before = openapi.openapi_v3_index(registry)["paths"]
    registry.add_crd(copy.deepcopy(CLUSTER_POLICY))
    after = openapi.openapi_v3_index(registry)["paths"]
    assert "apis/nvidia.com/v1" not in before
    url = after["apis/nvidia.com/v1"]["serverRelativeURL"]
    body = orjson.dumps(openapi.openapi_v3_document(registry, "apis/nvidia.com/v1"))
    assert url == "/openapi/v3/apis/nvidia.com/v1?hash=" + hashlib.sha512(body).hexdigest().upper()
    assert after["api/v1"] == before["api/v1"]
    changed = copy.deepcopy(CLUSTER_POLICY)
    changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] = "changed"
    registry.add_crd(changed)
    assert openapi.openapi_v3_index(registry)["paths"]["apis/nvidia.com/v1"]["serverRelativeURL"] != url


def test_single_operation_paths_hoist_their_parameters(registry):
    doc = openapi.openapi_v3_document(registry, "api/v1")
    eviction = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}/eviction"]
    assert [p["name"] for p in eviction["parameters"]] == [
        "dryRun", "fieldManager", "fieldValidation", "name", "namespace", "pretty"]
    assert eviction["parameters"][3]["description"] == "name of the Eviction"
    post = eviction["post"]
    assert (post["operationId"], post["description"]) == ("createCoreV1NamespacedPodEviction",
                                                          "create eviction of a Pod")
    assert post["x-kubernetes-group-version-kind"] == {"group": "policy", "kind": "Eviction", "version": "v1"}
    assert "parameters" not in post
    log = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}/log"]["get"]
    assert log["operationId"] == "readCoreV1NamespacedPodLog"
    assert log["responses"]["200"]["content"]["text/plain"] == {"schema": {"type": "string"}}


def test_upstream_operation_ids_and_descriptions(registry):
    doc = openapi.openapi_v3_document(registry, "apis/scheduling.k8s.io/v1")
    paths = doc["paths"]
    assert paths["/apis/scheduling.k8s.io/v1/"]["get"]["operationId"] == "getSchedulingV1APIResources"
    collection = paths["/apis/scheduling.k8s.io/v1/priorityclasses"]
    assert collection["delete"]["operationId"] == "deleteSchedulingV1CollectionPriorityClass"
    assert collection["get"]["description"] == "list or watch objects of kind PriorityClass"
    assert collection["post"]["description"] == "create a PriorityClass"
    watch = paths["/apis/scheduling.k8s.io/v1/watch/priorityclasses"]
    assert watch["get"]["operationId"] == "watchSchedulingV1PriorityClassList"
    assert watch["get"]["x-kubernetes-action"] == "watchlist"
    assert [p["name"] for p in watch["parameters"]] == [
        "allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit", "pretty", "resourceVersion",
        "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch"]
    pods = openapi.openapi_v3_document(registry, "api/v1")["paths"]
    assert pods["/api/v1/pods"]["get"]["operationId"] == "listCoreV1PodForAllNamespaces"
    assert pods["/api/v1/namespaces/{namespace}/pods/{name}"]["delete"]["responses"]["200"]["content"][
        "application/json"] == {"schema": {"$ref": "#/components/schemas/io.k8s.api.core.v1.Pod"}}
    assert pods["/api/v1/namespaces/{namespace}/configmaps/{name}"]["delete"]["responses"]["200"]["content"][
        "application/json"] == {"schema": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Status"}}


def test_v2_is_swagger_kubectl_can_parse(with_crds):
    doc = openapi.openapi_v2(with_crds)
    assert (doc["swagger"], doc["info"]) == ("2.0", {"title": "Kubernetes", "version": "v1.37.1"})
    assert doc["securityDefinitions"]["BearerToken"]["name"] == "authorization"
    forbidden = {"oneOf", "anyOf", "nullable", "allOf"}
    assert not [n for d in doc["definitions"].values() for n in _schema_nodes(d) if forbidden & set(n)]
    assert _refs(doc) <= set(doc["definitions"])
    patch = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert patch["operationId"] == "patchCoreV1NamespacedPod"
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
    assert patch["parameters"][0] == {"in": "body", "name": "body", "required": True,
                                      "schema": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"}}
    assert doc["definitions"]["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["type"] == "string"
    assert doc["paths"]["/apis/nvidia.com/v1/clusterpolicies/{name}"]["patch"]["x-kubernetes-group-version-kind"] \
        == {"group": "nvidia.com", "kind": "ClusterPolicy", "version": "v1"}


def test_every_v3_document_references_only_its_own_schemas(with_crds):
    for path in openapi.openapi_v3_index(with_crds)["paths"]:
        doc = openapi.openapi_v3_document(with_crds, path)
        assert _refs(doc) <= set(doc["components"]["schemas"]), path
    assert openapi.openapi_v3_document(with_crds, "apis/apps") is None
    assert openapi.openapi_v3_document(with_crds, "apis/apps/v2") is None


def test_schema_definitions_in_v3_form():
    intstr = schema.openapi_definition("io.k8s.apimachinery.pkg.util.intstr.IntOrString", v3=True)
    assert intstr["oneOf"] == [{"type": "integer"}, {"type": "string"}]
    assert intstr["format"] == "int-or-string"
    quantity = schema.openapi_definition("io.k8s.apimachinery.pkg.api.resource.Quantity")
    assert quantity["type"] == "string"
    assert quantity["description"].startswith("Quantity is a fixed-point representation of a number. It provides "
                                              "convenient marshaling/unmarshaling in JSON and YAML, in addition to "
                                              "String() and AsInt64() accessors.\n\nThe serialization format is:")
    selector = schema.openapi_definition("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector", v3=True)
    assert selector["properties"]["matchExpressions"]["items"] == {
        "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement"}


def test_operation_id_and_tags():
    assert openapi.operation_id_and_tags("deletecollectionNamespacedPod", "/api/v1/namespaces/{namespace}/pods") == (
        "deleteCoreV1CollectionNamespacedPod", ["core_v1"])
    assert openapi.operation_id_and_tags("listPodGroupForAllNamespaces",
                                         "/apis/scheduling.x-k8s.io/v1alpha1/podgroups") == (
        "listSchedulingXK8sIoV1alpha1PodGroupForAllNamespaces", ["schedulingXK8sIo_v1alpha1"])
