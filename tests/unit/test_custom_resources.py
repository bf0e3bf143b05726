"""Custom resources: pruning, defaulting and kube-openapi validation messages, on PodGroup and ClusterPolicy."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from gpulab.cluster.errors import invalid_object
from gpulab.cluster.kinds import builtin_registry
from gpulab.cluster.registry import Registry
from gpulab.cluster.validation.crd import validate_crd
from gpulab.cluster.validation.custom import prune_and_default, validate_custom_resource

PODGROUP_CRD = yaml.safe_load(
    (Path(__file__).resolve().parents[2] / "gpulab/cluster/crds/scheduling.x-k8s.io_podgroups.yaml").read_text())

QUANTITY = {"anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$",
            "x-kubernetes-int-or-string": True}

# A small, realistic subset of NVIDIA gpu-operator's deployments/gpu-operator/crds/nvidia.com_clusterpolicies.yaml.
CLUSTERPOLICY_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "clusterpolicies.nvidia.com"},
    "spec": {
        "group": "nvidia.com",
        "names": {"kind": "ClusterPolicy", "listKind": "ClusterPolicyList", "plural": "clusterpolicies",
                  "singular": "clusterpolicy"},
        "scope": "Cluster",
        "versions": [{
            "name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
            "additionalPrinterColumns": [{"jsonPath": ".status.state", "name": "Status", "type": "string"}],
            "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
                    "spec": {"type": "object", "required": ["driver"], "properties": {
                        "cdi": {"type": "object", "properties": {
                            "enabled": {"type": "boolean", "default": True},
                            "default": {"type": "boolean", "default": False}}},
                        "daemonsets": {"type": "object", "properties": {
                            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                            "priorityClassName": {"type": "string"},
                            "updateStrategy": {"type": "string", "default": "RollingUpdate",
                                               "enum": ["RollingUpdate", "OnDelete"]},
                            "tolerations": {"type": "array", "items": {"type": "object", "properties": {
                                "effect": {"type": "string"}, "key": {"type": "string"},
                                "operator": {"type": "string"},
                                "tolerationSeconds": {"type": "integer", "format": "int64"},
                                "value": {"type": "string"}}}}}},
                        "driver": {"type": "object", "properties": {
                            "enabled": {"type": "boolean"},
                            "image": {"type": "string", "pattern": r"[a-zA-Z0-9\-]+"},
                            "version": {"type": "string"},
                            "env": {"type": "array", "items": {"type": "object", "required": ["name"], "properties": {
                                "name": {"type": "string"}, "value": {"type": "string"}}}},
                            "resources": {"type": "object", "properties": {
                                "limits": {"type": "object", "additionalProperties": QUANTITY}}}}},
                        "mig": {"type": "object", "properties": {
                            "strategy": {"type": "string", "enum": ["none", "single", "mixed"]}}},
                        "devicePlugin": {"type": "object", "properties": {
                            "config": {"type": "object", "properties": {
                                "name": {"type": "string"}, "default": {"type": "string"}}}}},
                        "validator": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                                      "properties": {"repository": {"type": "string"}}},
                        "hostPaths": {"type": "object", "properties": {
                            "rootFS": {"type": "string", "maxLength": 20, "minLength": 1},
                            "driverInstallDir": {"type": "string", "nullable": True}}},
                        "gpus": {"type": "array", "maxItems": 2, "minItems": 1,
                                 "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                        "slices": {"type": "array", "x-kubernetes-list-type": "map",
                                   "x-kubernetes-list-map-keys": ["profile"],
                                   "items": {"type": "object", "required": ["profile"], "properties": {
                                       "profile": {"type": "string"}, "count": {"type": "integer", "minimum": 1,
                                                                               "maximum": 7}}}},
                        "upgradeWindow": {"type": "string", "format": "date-time"},
                    }},
                    "status": {"type": "object", "properties": {
                        "namespace": {"type": "string"},
                        "state": {"type": "string", "enum": ["ignored", "ready", "notReady", "disabled"]}}},
                },
            }},
        }],
    },
}


@pytest.fixture(scope="module")
def registry() -> Registry:
    reg = builtin_registry()
    reg.add_crd(PODGROUP_CRD)
    reg.add_crd(CLUSTERPOLICY_CRD)
    return reg


@pytest.fixture
def podgroups(registry):
    return registry.by_key("podgroups.scheduling.x-k8s.io")


@pytest.fixture
def policies(registry):
    return registry.by_key("clusterpolicies.nvidia.com")


def podgroup(**spec) -> dict:
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "train", "namespace": "default"}, "spec": spec}


def policy(**spec) -> dict:
    return {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"},
            "spec": {"driver": {"enabled": True}, **spec}}


def messages(rt, obj) -> list[str]:
    return [str(e) for e in validate_custom_resource(rt, obj)]


def test_the_clusterpolicy_subset_is_a_valid_crd():
    assert validate_crd(copy.deepcopy(CLUSTERPOLICY_CRD)) == []


def test_pruning_reports_metadata_first_then_sorted_paths(podgroups):
    obj = podgroup(minMember=2, zeta=1, alpha={"x": 1})
    obj["metadata"]["bogus"] = True
    obj["status"] = {"phase": "Pending", "extra": 1}
    obj["top"] = "x"
    assert prune_and_default(podgroups, obj) == ["metadata.bogus", "spec.alpha", "spec.zeta", "status.extra", "top"]
    assert obj == {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                   "metadata": {"name": "train", "namespace": "default"}, "spec": {"minMember": 2},
                   "status": {"phase": "Pending"}}


def test_pruning_inside_lists_and_maps(policies):
    obj = policy(daemonsets={"labels": {"a": "b"}, "tolerations": [{"key": "k", "typo": 1}]})
    obj["spec"]["driver"]["resources"] = {"limits": {"nvidia.com/gpu": 1}, "request": {}}
    assert prune_and_default(policies, obj) == ["spec.daemonsets.tolerations[0].typo",
                                                "spec.driver.resources.request"]
    assert obj["spec"]["daemonsets"]["labels"] == {"a": "b"}


def test_preserve_unknown_fields_keeps_undeclared_fields(policies):
    obj = policy(validator={"repository": "nvcr.io", "plugin": {"env": [{"name": "X"}]}})
    assert prune_and_default(policies, obj) == []
    assert obj["spec"]["validator"]["plugin"] == {"env": [{"name": "X"}]}


def test_defaults_are_applied_after_pruning(policies):
    obj = policy(cdi={}, daemonsets={"updateStrategy": None})
    prune_and_default(policies, obj)
    assert obj["spec"]["cdi"] == {"enabled": True, "default": False}
    assert obj["spec"]["daemonsets"] == {"updateStrategy": "RollingUpdate"}


def test_nulls_of_non_nullable_fields_are_dropped(policies):
    obj = policy(mig={"strategy": None}, hostPaths={"driverInstallDir": None})
    prune_and_default(policies, obj)
    assert obj["spec"]["mig"] == {}
    assert obj["spec"]["hostPaths"] == {"driverInstallDir": None}
    assert messages(policies, obj) == []


def test_type_errors(podgroups):
    assert messages(podgroups, podgroup(minMember="string")) == [
        'spec.minMember: Invalid value: "string": spec.minMember in body must be of type integer: "string"']
    # a non-string value against a formatted type is reported with the format (kube-openapi type.go)
    assert messages(podgroups, podgroup(minMember=True)) == [
        'spec.minMember: Invalid value: "": spec.minMember in body must be of type int32: ""']
    assert messages(podgroups, podgroup(minMember=1.5)) == [
        'spec.minMember: Invalid value: "double": spec.minMember in body must be of type int32: "double"']
    assert messages(podgroups, podgroup(minMember=2.0)) == []


def test_invalid_object_message(podgroups):
    obj = podgroup(minMember="two")
    errs = validate_custom_resource(podgroups, obj)
    assert invalid_object(podgroups.kind, podgroups.group, "train", errs).message == (
        'PodGroup.scheduling.x-k8s.io "train" is invalid: spec.minMember: Invalid value: "string": spec.minMember '
        'in body must be of type integer: "string"')


def test_required_enum_and_nested_required(policies):
    obj = policy(mig={"strategy": "all"})
    del obj["spec"]["driver"]
    obj["spec"]["daemonsets"] = {"updateStrategy": "Recreate"}
    obj["status"] = {"state": "broken"}
    assert messages(policies, obj) == [
        'spec.daemonsets.updateStrategy: Unsupported value: "Recreate": supported values: "RollingUpdate", "OnDelete"',
        'spec.mig.strategy: Unsupported value: "all": supported values: "none", "single", "mixed"',
        "spec.driver: Required value",
        'status.state: Unsupported value: "broken": supported values: "ignored", "ready", "notReady", "disabled"',
    ]
    assert messages(policies, policy(driver={"env": [{"value": "1"}]})) == ["spec.driver.env[0].name: Required value"]


def test_numeric_bounds(policies):
    obj = policy(slices=[{"profile": "1g.10gb", "count": 0}, {"profile": "3g.40gb", "count": 8}])
    assert messages(policies, obj) == [
        "spec.slices[0].count: Invalid value: 0: spec.slices[0].count in body should be greater than or equal to 1",
        "spec.slices[1].count: Invalid value: 8: spec.slices[1].count in body should be less than or equal to 7",
    ]


def test_string_length_pattern_and_format(policies):
    obj = policy(hostPaths={"rootFS": "/" + "r" * 25}, upgradeWindow="tomorrow")
    obj["spec"]["driver"]["image"] = "!!!"
    assert messages(policies, obj) == [
        'spec.driver.image: Invalid value: "!!!": spec.driver.image in body should match \'[a-zA-Z0-9\\-]+\'',
        "spec.hostPaths.rootFS: Too long: may not be more than 20 bytes",
        'spec.upgradeWindow: Invalid value: "tomorrow": spec.upgradeWindow in body must be of type date-time: '
        '"tomorrow"',
    ]
    assert messages(policies, policy(hostPaths={"rootFS": ""}, upgradeWindow="2026-03-01T02:00:00Z")) == [
        'spec.hostPaths.rootFS: Invalid value: "": spec.hostPaths.rootFS in body should be at least 1 chars long']


def test_item_counts_and_set_duplicates(policies):
    assert messages(policies, policy(gpus=[])) == [
        "spec.gpus: Invalid value: 0: spec.gpus in body should have at least 1 items"]
    assert messages(policies, policy(gpus=["a", "b", "c"])) == ["spec.gpus: Too many: 3: must have at most 2 items"]
    assert messages(policies, policy(gpus=["a", "a"])) == ['spec.gpus[1]: Duplicate value: "a"']


def test_list_map_key_duplicates(policies):
    obj = policy(slices=[{"profile": "1g.10gb"}, {"profile": "2g.20gb"}, {"profile": "1g.10gb", "count": 2}])
    assert messages(policies, obj) == [
        'spec.slices[2]: Duplicate value: map[string]interface {}{"profile":"1g.10gb"}']


def test_int_or_string_quantities(podgroups, policies):
    ok = podgroup(minMember=1, minResources={"nvidia.com/gpu": 4, "memory": "16Gi"})
    assert messages(podgroups, ok) == []
    bad = policy(driver={"resources": {"limits": {"nvidia.com/gpu": "lots", "cpu": [1]}}})
    assert messages(policies, bad) == [
        'spec.driver.resources.limits.nvidia.com/gpu: Invalid value: "lots": spec.driver.resources.limits.nvidia.com/gpu'
        " in body should match '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?"
        "(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$'",
        'spec.driver.resources.limits.cpu: Invalid value: "array": spec.driver.resources.limits.cpu in body must be '
        'of type integer,string: "array"',
        '<nil>: Invalid value: "": "spec.driver.resources.limits.cpu" must validate at least one schema (anyOf)',
        'spec.driver.resources.limits.cpu: Invalid value: "array": spec.driver.resources.limits.cpu in body must be '
        'of type integer: "array"',
    ]


def test_null_where_a_value_is_required_by_type(policies):
    obj = policy()
    obj["spec"]["driver"]["version"] = None
    assert messages(policies, obj) == [
        'spec.driver.version: Invalid value: "null": spec.driver.version in body must be of type string: "null"']


def test_metadata_name_and_type_meta(podgroups):
    obj = podgroup(minMember=1)
    obj["metadata"]["name"] = "Train_Job"
    assert messages(podgroups, obj) == [
        'metadata.name: Invalid value: "Train_Job": a lowercase RFC 1123 subdomain must consist of lower case '
        "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
        "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]
    del obj["metadata"]["name"]
    assert messages(podgroups, obj) == ["metadata.name: Required value: name or generateName is required"]
    obj = podgroup(minMember="x")
    obj["kind"] = "Podgroup"
    assert messages(podgroups, obj) == ['kind: Invalid value: "Podgroup": must be PodGroup']


def test_cluster_scoped_resource_may_not_have_a_namespace(policies):
    obj = policy()
    obj["metadata"]["namespace"] = "gpu-operator"
    assert messages(policies, obj) == ["metadata.namespace: Forbidden: not allowed on this type"]


def test_scale_subresource_replicas():
    crd = copy.deepcopy(PODGROUP_CRD)
    crd["spec"]["versions"][0]["subresources"]["scale"] = {"specReplicasPath": ".spec.minMember",
                                                           "statusReplicasPath": ".status.running"}
    rt = builtin_registry().add_crd(crd)[0]
    obj = podgroup(minMember=-1)
    obj["status"] = {"running": "two"}
    assert messages(rt, obj) == [
        'status.running: Invalid value: "string": status.running in body must be of type integer: "string"',
        ".spec.minMember: Invalid value: -1: should be a non-negative integer",
        ".status.running: Invalid value: 0: .status.running accessor error: two is of the type string, expected int64",
    ]


def test_patterns_use_go_end_of_text():
    crd = copy.deepcopy(PODGROUP_CRD)
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]["phase"][
        "pattern"] = "^[A-Z][a-z]+$"
    rt = builtin_registry().add_crd(crd)[0]
    obj = podgroup(minMember=1)
    obj["status"] = {"phase": "Running\n"}
    assert messages(rt, obj) == [
        'status.phase: Invalid value: "Running\\n": status.phase in body should match \'^[A-Z][a-z]+$\'']


def test_generic_object_meta_rules_apply_to_custom_resources(podgroups):
    obj = podgroup(minMember=1)
    obj["metadata"]["labels"] = {"team": "a b"}
    assert messages(podgroups, obj) == [
        'metadata.labels: Invalid value: "a b": a valid label must be an empty string or consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
        "'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"]


def test_update_checks_metadata_changes_and_ratchets_list_types(policies):
    old = policy(gpus=["a", "a"])
    old["metadata"]["uid"] = "1"
    new = copy.deepcopy(old)
    new["metadata"]["uid"] = "2"
    assert [str(e) for e in validate_custom_resource(policies, new, old)] == [
        'metadata.uid: Invalid value: "2": field is immutable']
    assert messages(policies, new) == ['spec.gpus[1]: Duplicate value: "a"']
