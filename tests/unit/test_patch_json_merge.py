"""JSON patch and JSON merge patch as kube-apiserver applies them (evanphx/json-patch v4 semantics)."""
import pytest

from gpulab.cluster.errors import ApiError
from gpulab.cluster.patch import apply_json_patch, apply_merge_patch

POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "trainer", "namespace": "default", "labels": {"app": "trainer"},
                    "resourceVersion": "7"},
       "spec": {"containers": [{"name": "cuda", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"}]}}

UNPROCESSABLE = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                 "message": "the server rejected our request due to an error in our request",
                 "reason": "Invalid", "details": {}, "code": 422}


@pytest.mark.parametrize("ops, path, expected", [
    ([{"op": "replace", "path": "/spec/containers/0/image", "value": "busybox"}],
     ("spec", "containers", 0, "image"), "busybox"),
    ([{"op": "add", "path": "/metadata/labels/gpu", "value": "true"}], ("metadata", "labels", "gpu"), "true"),
    ([{"op": "add", "path": "/metadata/labels/nvidia.com~1gpu.present", "value": "true"}],
     ("metadata", "labels", "nvidia.com/gpu.present"), "true"),
    ([{"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
      {"op": "replace", "path": "/metadata/labels/app", "value": "x"}], ("metadata", "labels", "app"), "x"),
    # v4 quirks: replace of a missing member adds it; copy from a missing member copies null;
    # test of a missing member against null passes; add without value adds null
    ([{"op": "replace", "path": "/metadata/labels/tier", "value": "gpu"}], ("metadata", "labels", "tier"), "gpu"),
    ([{"op": "copy", "from": "/metadata/labels/nope", "path": "/metadata/labels/copied"}],
     ("metadata", "labels", "copied"), None),
    ([{"op": "test", "path": "/metadata/annotations", "value": None},
      {"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}}], ("metadata", "annotations"), {"a": "b"}),
    ([{"op": "move", "from": "/metadata/labels/app", "path": "/metadata/labels/role"}],
     ("metadata", "labels"), {"role": "trainer"}),
])
def test_json_patch_operations(ops, path, expected):
    result = apply_json_patch(POD, ops)
    value = result
    for step in path:
        value = value[step]
    assert value == expected
    assert POD["metadata"]["labels"] == {"app": "trainer"}   # input untouched


@pytest.mark.parametrize("ops", [
    [{"op": "test", "path": "/metadata/resourceVersion", "value": "6"},
     {"op": "replace", "path": "/spec/containers/0/image", "value": "x"}],
    [{"op": "test", "path": "/metadata/labels/missing", "value": "x"}],
    [{"op": "remove", "path": "/metadata/annotations"}],
    [{"op": "add", "path": "/metadata/annotations/a", "value": "b"}],
    [{"op": "replace", "path": "/spec/containers/3/image", "value": "x"}],
    [{"op": "add", "path": "/spec/containers/5", "value": {}}],
    [{"op": "explode", "path": "/spec"}],
    [{"op": "add", "value": 1}],
])
def test_json_patch_failures_are_the_generic_422(ops):
    with pytest.raises(ApiError) as err:
        apply_json_patch(POD, ops)
    assert err.value.status() == UNPROCESSABLE


def test_failed_json_patch_applies_nothing():
    ops = [{"op": "replace", "path": "/metadata/labels/app", "value": "changed"},
           {"op": "test", "path": "/metadata/labels/app", "value": "other"}]
    with pytest.raises(ApiError):
        apply_json_patch(POD, ops)
    assert POD["metadata"]["labels"]["app"] == "trainer"


@pytest.mark.parametrize("body, code, message", [
    ({"op": "add"}, 400, "json: cannot unmarshal object into Go value of type jsonpatch.Patch"),
    ("[]", 400, "json: cannot unmarshal string into Go value of type jsonpatch.Patch"),
    (["add"], 400, "json: cannot unmarshal string into Go value of type jsonpatch.Operation"),
    ([{"op": "test", "path": "/metadata/name", "value": "trainer"}] * 10001, 413,
     "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"),
])
def test_json_patch_bodies_that_do_not_decode(body, code, message):
    with pytest.raises(ApiError) as err:
        apply_json_patch(POD, body)
    assert (err.value.code, err.value.message) == (code, message)


def test_json_patch_replacing_the_document_with_a_list_fails_to_decode():
    with pytest.raises(ApiError) as err:
        apply_json_patch(POD, [{"op": "replace", "path": "", "value": [1]}])
    assert err.value.code == 422
    assert err.value.message == (
        ' "" is invalid: patch: Invalid value: "[1]": couldn\'t get version/kind; json parse error: json: cannot '
        'unmarshal array into Go value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
        'Kind string "json:\\"kind,omitempty\\"" }')


# --- merge patch: what kubectl label / annotate / scale send ------------------------------------
@pytest.mark.parametrize("patch, metadata", [
    # kubectl label pod trainer gpu=true  (jsonpatch.CreateMergePatch of the object before/after)
    ({"metadata": {"labels": {"gpu": "true"}}}, {"labels": {"app": "trainer", "gpu": "true"}}),
    # kubectl label pod trainer app-
    ({"metadata": {"labels": {"app": None}}}, {"labels": {}}),
    # kubectl label pod trainer app=other --overwrite --resource-version=7
    ({"metadata": {"labels": {"app": "other"}, "resourceVersion": "7"}},
     {"labels": {"app": "other"}, "resourceVersion": "7"}),
    # kubectl annotate pod trainer nvidia.com/mig.config=all-1g.10gb
    ({"metadata": {"annotations": {"nvidia.com/mig.config": "all-1g.10gb"}}},
     {"labels": {"app": "trainer"}, "annotations": {"nvidia.com/mig.config": "all-1g.10gb"}}),
])
def test_merge_patches_kubectl_sends(patch, metadata):
    result = apply_merge_patch(POD, patch)
    expected = {"name": "trainer", "namespace": "default", "labels": {"app": "trainer"}, "resourceVersion": "7"}
    expected.update(metadata)
    assert result["metadata"] == expected
    assert result["spec"] == POD["spec"]


def test_kubectl_scale_merge_patch_on_the_scale_subresource():
    scale = {"kind": "Scale", "apiVersion": "autoscaling/v1",
             "metadata": {"name": "web", "namespace": "default", "resourceVersion": "12"},
             "spec": {"replicas": 1}, "status": {"replicas": 1, "selector": "app=web"}}
    # kubectl scale deployment web --replicas=3: Scales().Patch(MergePatchType, {"spec":{"replicas":3}})
    assert apply_merge_patch(scale, {"spec": {"replicas": 3}}) == {**scale, "spec": {"replicas": 3}}


@pytest.mark.parametrize("patch, spec", [
    # nulls inside added values are pruned, also inside arrays
    ({"spec": {"nodeSelector": {"a": "1", "b": None}}}, {"nodeSelector": {"a": "1"}}),
    ({"spec": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "value": None}, None]}},
     {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}),
    # an empty array becomes null (pruneAryNulls leaves a nil slice)
    ({"spec": {"tolerations": []}}, {"tolerations": None}),
    # arrays are replaced, never merged
    ({"spec": {"containers": [{"name": "other"}]}}, {"containers": [{"name": "other"}]}),
])
def test_merge_patch_v4_quirks(patch, spec):
    assert apply_merge_patch(POD, patch)["spec"] == {**POD["spec"], **spec}


@pytest.mark.parametrize("patch", [None, "labels", 3])
def test_merge_patch_that_is_not_an_object_or_array_is_400(patch):
    with pytest.raises(ApiError) as err:
        apply_merge_patch(POD, patch)
    assert err.value.status()["message"] == "Invalid JSON Patch"
    assert (err.value.code, err.value.reason) == (400, "BadRequest")


def test_merge_patch_that_is_an_array_replaces_the_document_which_then_fails_to_decode():
    with pytest.raises(ApiError) as err:
        apply_merge_patch(POD, [1, None])
    assert err.value.code == 422
    assert err.value.details["causes"][0]["field"] == "patch"
    assert 'Invalid value: "[1]": couldn\'t get version/kind' in err.value.message
