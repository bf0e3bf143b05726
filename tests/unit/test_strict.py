"""Server-side field validation: unknown and duplicate fields, with kube-apiserver's exact texts.

The Deployment bodies and expected strings of the first two tests are those of the
v1.27 conformance tests in kubernetes/kubernetes test/e2e/apimachinery/field_validation.go.
"""
from __future__ import annotations

import copy
from pathlib import Path

import orjson
import pytest
import yaml

from gpulab.cluster.kinds import builtin_registry
from gpulab.cluster.registry import Registry
from gpulab.cluster.validation import strict
from gpulab.cluster.gofmt import go_v

PODGROUP_CRD = Path(__file__).resolve().parents[2] / "gpulab/cluster/crds/scheduling.x-k8s.io_podgroups.yaml"


@pytest.fixture(scope="module")
def registry() -> Registry:
    reg = builtin_registry()
    reg.add_crd(yaml.safe_load(PODGROUP_CRD.read_text()))
    return reg


def unknown_fields(rt, obj: dict) -> list[str]:
    """The paths of the ``unknown field`` messages a strict decode of ``obj`` gives."""
    prefix = 'unknown field "'
    return [m[len(prefix):-1] for m in strict.strict_messages(rt, obj) if m.startswith(prefix)]


def deployment_body(spec_extra: str = "", meta_extra: str = "") -> str:
    return ('{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "my-dep", ' + meta_extra
            + '"labels": {"app": "nginx"}}, "spec": {' + spec_extra + '"selector": {"matchLabels": {"app": "nginx"}}, '
            '"template": {"metadata": {"labels": {"app": "nginx"}}, "spec": {"containers": [{"name": "nginx", '
            '"image": "nginx:latest"}]}}}}')


def test_unknown_and_duplicate_fields_in_document_order(registry):
    rt = registry.by_key("deployments.apps")
    body = deployment_body('"unknownField": "foo", "replicas": 2, "replicas": 3, ')
    messages = strict.strict_messages(rt, body)
    assert messages == ['unknown field "spec.unknownField"', 'duplicate field "spec.replicas"']
    err = strict.strict_decoding_error(messages, kind=rt.kind, version=rt.version)
    assert (err.code, err.reason) == (400, "BadRequest")
    assert err.message == ('Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
                           'unknown field "spec.unknownField", duplicate field "spec.replicas"')


def test_unknown_metadata_field(registry):
    rt = registry.by_key("deployments.apps")
    messages = strict.strict_messages(rt, deployment_body(meta_extra='"unknownMeta": "foo", '))
    assert messages == ['unknown field "metadata.unknownMeta"']


def test_paths_through_lists_and_no_descent_into_unknown_values(registry):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"foo": {"deeper": 1},
                    "containers": [{"name": "a", "image": "i"}, {"name": "b", "image": "i", "bar": 1,
                                                                 "ports": [{"containerPortZ": 80}]}]}}
    assert unknown_fields(registry.by_key("pods"), pod) == [
        "spec.foo", "spec.containers[1].bar", "spec.containers[1].ports[0].containerPortZ"]


def test_maps_and_custom_unmarshalers_accept_anything(registry):
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "labels": {"any/key": "v"}, "annotations": {"x": "y"},
                        "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:metadata": {"f:labels": {}}}}]},
           "spec": {"containers": [{"name": "c", "image": "i",
                                    "resources": {"limits": {"nvidia.com/gpu": 1, "memory": "1Gi"}},
                                    "livenessProbe": {"httpGet": {"port": "http"}}}],
                    "nodeSelector": {"nvidia.com/gpu.present": "true"}}}
    assert unknown_fields(registry.by_key("pods"), pod) == []


def test_field_names_are_case_sensitive(registry):
    ns = {"apiVersion": "v1", "kind": "Namespace", "Metadata": {"name": "x"}}
    assert unknown_fields(registry.by_key("namespaces"), ns) == ["Metadata"]


def test_strict_error_without_kind_and_warning_text():
    messages = [strict.unknown_field_message(p) for p in ("spec.foo", "spec.containers[0].bar")]
    err = strict.strict_decoding_error(messages)
    assert err.status() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'strict decoding error: unknown field "spec.foo", unknown field "spec.containers[0].bar"',
        "reason": "BadRequest", "code": 400}
    assert strict.unknown_field_message("spec.foo") == 'unknown field "spec.foo"'


def test_duplicates_inside_maps_are_reported_with_their_key(registry):
    body = deployment_body(meta_extra='"annotations": {"a": "1", "a": "2"}, ')
    assert strict.strict_messages(registry.by_key("deployments.apps"), body) == [
        'duplicate field "metadata.annotations.a"']


def test_errors_are_deduplicated_and_capped_at_100(registry):
    containers = [{"name": f"c{i}", "image": "i", "bogus": 1} for i in range(120)]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": containers}}
    paths = unknown_fields(registry.by_key("pods"), pod)
    assert len(paths) == 100 and paths[-1] == "spec.containers[99].bogus"
    body = '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"x":1,"x":2,"x":3}}'
    assert strict.strict_messages(registry.by_key("pods"), body) == ['unknown field "spec.x"']


def test_crd_objects_use_the_apiextensions_schema(registry):
    crd_rt = registry.by_key("customresourcedefinitions.apiextensions.k8s.io")
    crd = yaml.safe_load(PODGROUP_CRD.read_text())
    assert unknown_fields(crd_rt, crd) == []
    version = crd["spec"]["versions"][0]
    version["servd"] = True
    version["subresources"]["status"] = {"x": 1}  # CustomResourceSubresourceStatus is an empty struct
    spec_props = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    spec_props["minMember"]["maxium"] = 3
    # additionalProperties is a JSONSchemaPropsOrBool: its own UnmarshalJSON decodes the inside leniently
    spec_props["minResources"]["additionalProperties"]["bogus"] = 1
    assert unknown_fields(crd_rt, crd) == [
        "spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.minMember.maxium",
        "spec.versions[0].subresources.status.x",
        "spec.versions[0].servd",
    ]


def test_custom_resource_reports_decoder_duplicates_then_pruned_fields(registry):
    rt = registry.by_key("podgroups.scheduling.x-k8s.io")
    body = ('{"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", '
            '"metadata": {"name": "pg", "zeta": 1, "alpha": 2}, '
            '"spec": {"minMember": 2, "minMember": 3, "zz": 1, "aa": {"b": 1}}, "status": {"phase": "Running"}}')
    assert strict.strict_messages(rt, body) == [
        'duplicate field "spec.minMember"', 'unknown field "metadata.alpha"', 'unknown field "metadata.zeta"',
        'unknown field "spec.aa"', 'unknown field "spec.zz"']
    obj = orjson.loads(body)
    before = copy.deepcopy(obj)
    assert unknown_fields(rt, obj) == ["metadata.alpha", "metadata.zeta", "spec.aa", "spec.zz"]
    assert obj == before  # reporting does not prune


def test_patch_error_is_a_422_on_the_patch_field():
    patch = {"spec": {"replicas": 2, "foo": "x"}}
    err = strict.strict_patch_error(['unknown field "spec.foo"'], go_v(patch))
    assert (err.code, err.reason) == (422, "Invalid")
    assert err.message == (' "" is invalid: patch: Invalid value: "map[spec:map[foo:x replicas:2]]": '
                           'strict decoding error: unknown field "spec.foo"')
    assert err.details == {"causes": [{
        "reason": "FieldValueInvalid", "field": "patch",
        "message": 'Invalid value: "map[spec:map[foo:x replicas:2]]": strict decoding error: unknown field "spec.foo"'}]}
