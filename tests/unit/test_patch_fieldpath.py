"""FieldsV1 encoding, path strings and set algebra (structured-merge-diff fieldpath)."""
import pytest

from gpulab.cluster.patch.fieldpath import FieldSet, PathElement, field, key_element, path_string
from gpulab.cluster.gofmt import go_float, go_v

CONTAINER = key_element({"name": "cuda"})
PORT = key_element({"protocol": "TCP", "containerPort": 8000})


def test_fields_v1_order_and_dot_members():
    owned = FieldSet.of(
        (field("spec"), field("containers"), CONTAINER),
        (field("spec"), field("containers"), CONTAINER, field("image")),
        (field("spec"), field("containers"), CONTAINER, field("ports"), PORT),
        (field("metadata"), field("finalizers"), PathElement("v", value="nvidia.com/gpu-operator")),
        (field("spec"), field("args"), PathElement("i", index=0)),
        (field("metadata"), field("labels")),
        (field("metadata"), field("labels"), field("app")))
    assert list(owned.to_fields_v1()) == ["f:metadata", "f:spec"]
    assert owned.to_fields_v1() == {
        "f:metadata": {"f:finalizers": {'v:"nvidia.com/gpu-operator"': {}},
                       "f:labels": {".": {}, "f:app": {}}},
        "f:spec": {"f:args": {"i:0": {}},
                   "f:containers": {'k:{"name":"cuda"}': {
                       ".": {}, "f:image": {},
                       "f:ports": {'k:{"containerPort":8000,"protocol":"TCP"}': {}}}}}}
    assert FieldSet.from_fields_v1(owned.to_fields_v1()) == owned


def test_element_kinds_sort_fields_then_keys_then_values_then_indexes():
    mixed = FieldSet.of((PathElement("i", index=1),), (PathElement("v", value=True),), (PathElement("v", value="a"),),
                        (PathElement("v", value=2),), (key_element({"k": 1}),), (field("z"),))
    assert list(mixed.to_fields_v1()) == ["f:z", 'k:{"k":1}', "v:2", 'v:"a"', "v:true", "i:1"]


@pytest.mark.parametrize("path, text", [
    ((field("spec"), field("replicas")), ".spec.replicas"),
    ((field("spec"), field("containers"), CONTAINER, field("image")), '.spec.containers[name="cuda"].image'),
    ((field("ports"), PORT), '.ports[containerPort=8000,protocol="TCP"]'),
    ((field("metadata"), field("finalizers"), PathElement("v", value="a/b")), '.metadata.finalizers[="a/b"]'),
    ((field("args"), PathElement("i", index=2)), ".args[2]"),
])
def test_path_strings(path, text):
    assert path_string(path) == text


def test_set_algebra():
    a = FieldSet.of((field("spec"),), (field("spec"), field("replicas")), (field("spec"), field("paused")))
    b = FieldSet.of((field("spec"),))
    assert a.difference(b).to_fields_v1() == {"f:spec": {"f:paused": {}, "f:replicas": {}}}
    assert a.recursive_difference(b).empty()
    assert a.intersection(FieldSet.of((field("spec"), field("paused")))).to_fields_v1() == {
        "f:spec": {"f:paused": {}}}
    assert [path_string(p) for p in a.iterate()] == [".spec", ".spec.paused", ".spec.replicas"]


def test_ints_and_floats_are_the_same_key_but_bools_are_not():
    assert key_element({"port": 80}) == key_element({"port": 80.0})
    assert PathElement("v", value=1) != PathElement("v", value=True)


@pytest.mark.parametrize("value, text", [
    (1.5, "1.5"), (100.0, "100"), (1e6, "1e+06"), (123456.0, "123456"), (1234567.0, "1.234567e+06"),
    (0.0001, "0.0001"), (0.00001, "1e-05"), (-2.5, "-2.5")])
def test_go_float_formatting(value, text):
    assert go_float(value) == text


def test_go_map_formatting_sorts_keys():
    assert go_v({"name": "a", "$patch": "x", "n": 1, "l": ["p", None]}) == "map[$patch:x l:[p <nil>] n:1 name:a]"
