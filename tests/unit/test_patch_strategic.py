"""Strategic merge patch with the bodies kubectl sends (client-side apply, taint, cordon, rollout restart)."""
import copy
import random

import pytest

from gpulab.cluster.errors import ApiError
from gpulab.cluster.kinds import builtin_registry
from gpulab.cluster.patch import apply_strategic_merge_patch
from gpulab.cluster.patch.go_sort import slice_stable

REGISTRY = builtin_registry()
DEPLOYMENTS = REGISTRY.by_key("deployments.apps")
NODES = REGISTRY.by_key("nodes")
PODS = REGISTRY.by_key("pods")

DEPLOYMENT = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "infer", "namespace": "default", "finalizers": ["example.com/a", "example.com/b"],
                 "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}\n"}},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "infer"}},
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
        "template": {
            "metadata": {"labels": {"app": "infer"}},
            "spec": {
                "containers": [
                    {"name": "server", "image": "nvcr.io/nvidia/tritonserver:24.05-py3",
                     "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                     "resources": {"limits": {"nvidia.com/gpu": 1}}},
                    {"name": "metrics", "image": "busybox:1.36"}],
                "volumes": [{"name": "models", "emptyDir": {}}],
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}}}}

NODE = {"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "gpu-node-1", "labels": {"kubernetes.io/hostname": "gpu-node-1"}},
        "spec": {"taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]}}


def _spec(result):
    return result["spec"]["template"]["spec"]


def test_client_side_apply_changes_image_and_replicas():
    # kubectl apply after editing replicas and the image: CreateThreeWayMergePatch output
    patch = {"metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"new\":1}\n"}},
             "spec": {"replicas": 3, "template": {"spec": {
                 "$setElementOrder/containers": [{"name": "server"}, {"name": "metrics"}],
                 "containers": [{"image": "nvcr.io/nvidia/tritonserver:24.06-py3", "name": "server"}]}}}}
    result = apply_strategic_merge_patch(DEPLOYMENT, patch, DEPLOYMENTS)
    assert result["spec"]["replicas"] == 3
    assert result["metadata"]["annotations"] == {
        "kubectl.kubernetes.io/last-applied-configuration": "{\"new\":1}\n"}
    server = _spec(result)["containers"][0]
    assert server == {"name": "server", "image": "nvcr.io/nvidia/tritonserver:24.06-py3",
                      "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                      "resources": {"limits": {"nvidia.com/gpu": 1}}}
    assert [c["name"] for c in _spec(result)["containers"]] == ["server", "metrics"]
    assert DEPLOYMENT["spec"]["replicas"] == 1   # input untouched


def test_client_side_apply_removes_an_env_var_and_a_container():
    patch = {"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "server"}],
        "containers": [{"$setElementOrder/env": [{"name": "A"}], "env": [{"$patch": "delete", "name": "B"}],
                        "name": "server"},
                       {"$patch": "delete", "name": "metrics"}]}}}}
    result = apply_strategic_merge_patch(DEPLOYMENT, patch, DEPLOYMENTS)
    assert [c["name"] for c in _spec(result)["containers"]] == ["server"]
    assert _spec(result)["containers"][0]["env"] == [{"name": "A", "value": "1"}]


def test_client_side_apply_adds_a_container_in_the_set_element_order():
    patch = {"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "init"}, {"name": "server"}, {"name": "metrics"}],
        "containers": [{"image": "busybox", "name": "init"}]}}}}
    result = apply_strategic_merge_patch(DEPLOYMENT, patch, DEPLOYMENTS)
    assert [c["name"] for c in _spec(result)["containers"]] == ["init", "server", "metrics"]


def test_retain_keys_clears_the_rolling_update_when_switching_to_recreate():
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": None, "type": "Recreate"}}}
    assert apply_strategic_merge_patch(DEPLOYMENT, patch, DEPLOYMENTS)["spec"]["strategy"] == {"type": "Recreate"}


def test_retain_keys_on_volumes_switches_the_volume_source():
    patch = {"spec": {"template": {"spec": {
        "$setElementOrder/volumes": [{"name": "models"}],
        "volumes": [{"$retainKeys": ["hostPath", "name"], "emptyDir": None, "hostPath": {"path": "/models"},
                     "name": "models"}]}}}}
    result = apply_strategic_merge_patch(DEPLOYMENT, patch, DEPLOYMENTS)
    assert _spec(result)["volumes"] == [{"name": "models", "hostPath": {"path": "/models"}}]


def test_primitive_list_merge_with_deletion_list_and_order():
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/a"],
                          "$setElementOrder/finalizers": ["example.com/b", "example.com/c"],
                          "finalizers": ["example.com/c"]}}
    result = apply_strategic_merge_patch(DEPLOYMENT, patch, DEPLOYMENTS)
    assert result["metadata"]["finalizers"] == ["example.com/b", "example.com/c"]


def test_merge_list_of_scalars_deduplicates():
    patch = {"metadata": {"finalizers": ["example.com/b", "example.com/z"]}}
    result = apply_strategic_merge_patch(DEPLOYMENT, patch, DEPLOYMENTS)
    assert result["metadata"]["finalizers"] == ["example.com/a", "example.com/b", "example.com/z"]


def test_atomic_lists_are_replaced():
    # PodSpec.tolerations has no patch strategy: the patch list replaces the live one
    patch = {"spec": {"template": {"spec": {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}}}}
    result = apply_strategic_merge_patch(DEPLOYMENT, patch, DEPLOYMENTS)
    assert _spec(result)["tolerations"] == [{"key": "dedicated", "operator": "Exists"}]


@pytest.mark.parametrize("patch, taints", [
    # kubectl taint nodes gpu-node-1 nvidia.com/gpu=present:NoSchedule
    ({"spec": {"taints": [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "value": "present"},
                          {"effect": "NoSchedule", "key": "node-role.kubernetes.io/control-plane"}]}},
     [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "value": "present"},
      {"effect": "NoSchedule", "key": "node-role.kubernetes.io/control-plane"}]),
    # kubectl taint nodes gpu-node-1 node-role.kubernetes.io/control-plane:NoSchedule-
    ({"spec": {"taints": None}}, None),
])
def test_kubectl_taint_replaces_the_whole_taint_list(patch, taints):
    result = apply_strategic_merge_patch(NODE, patch, NODES)
    assert result["spec"].get("taints") == taints
    assert result["metadata"] == NODE["metadata"]


@pytest.mark.parametrize("patch, spec", [
    ({"spec": {"unschedulable": True}}, {"unschedulable": True}),       # kubectl cordon
    ({"spec": {"unschedulable": None}}, {}),                            # kubectl uncordon
])
def test_kubectl_cordon_and_uncordon(patch, spec):
    node = copy.deepcopy(NODE)
    del node["spec"]["taints"]
    assert apply_strategic_merge_patch(node, patch, NODES)["spec"] == spec


def test_kubectl_rollout_restart_annotates_the_pod_template():
    patch = {"spec": {"template": {"metadata": {"annotations": {
        "kubectl.kubernetes.io/restartedAt": "2026-03-01T10:00:00Z"}}}}}
    result = apply_strategic_merge_patch(DEPLOYMENT, patch, DEPLOYMENTS)
    assert result["spec"]["template"]["metadata"] == {
        "labels": {"app": "infer"}, "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-03-01T10:00:00Z"}}


@pytest.mark.parametrize("patch, containers", [
    ({"spec": {"template": {"spec": {"containers": [{"name": "solo", "image": "x"}, {"$patch": "replace"}]}}}},
     [{"name": "solo", "image": "x"}]),
    ({"spec": {"template": {"spec": {"containers": [{"name": "metrics", "$patch": "delete"}]}}}},
     ["server"]),
    ({"spec": {"template": {"spec": {"containers": [{"name": "server", "image": None}]}}}}, None),
])
def test_list_directives(patch, containers):
    result = _spec(apply_strategic_merge_patch(DEPLOYMENT, patch, DEPLOYMENTS))["containers"]
    if containers is None:
        assert "image" not in result[0] and result[0]["name"] == "server"
    elif isinstance(containers[0], str):
        assert [c["name"] for c in result] == containers
    else:
        assert result == containers


def test_patch_replace_directive_on_a_map():
    result = apply_strategic_merge_patch(DEPLOYMENT, {"spec": {"strategy": {"$patch": "replace", "type": "Recreate"}}},
                                         DEPLOYMENTS)
    assert result["spec"]["strategy"] == {"type": "Recreate"}


def test_directives_are_removed_from_new_values():
    patch = {"spec": {"template": {"spec": {"affinity": {"nodeAffinity": {"$patch": "delete"}, "podAffinity": {}}}}}}
    assert _spec(apply_strategic_merge_patch(DEPLOYMENT, patch, DEPLOYMENTS))["affinity"] == {"podAffinity": {}}


@pytest.mark.parametrize("patch, code, message", [
    ({"spec": {"template": {"spec": {"containers": [{"name": "server", "$patch": "merge"}]}}}}, 500,
     "merging lists cannot yet be specified in the patch"),
    ({"spec": {"template": {"spec": {"containers": [{"name": "server", "$patch": "foo"}]}}}}, 500,
     "unknown patch type: foo in map: map[$patch:foo name:server]"),
    ({"spec": {"strategy": {"$patch": 1}}}, 500, "unknown patch type: %!s(int64=1) in map: map[$patch:1]"),
    ({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}, 500,
     "map: map[image:x] does not contain declared merge key: name"),
    ({"spec": {"strategy": {"$retainKeys": "type"}}}, 400, "invalid patch format of retainKeys"),
    ({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {"maxSurge": 2}}}}, 400,
     "invalid patch format of retainKeys"),
    ({"metadata": {"$deleteFromPrimitiveListX/finalizers": ["a"]}}, 400, "invalid patch format of primitive list"),
    ({"spec": {"template": {"spec": {"$setElementOrderX/containers": []}}}}, 400,
     "invalid patch format of setElementOrder list"),
    ({"spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "metrics"}],
                                     "containers": [{"name": "server", "image": "y"}]}}}}, 500,
     "the order in patch list:\n[map[image:y name:server]]\n doesn't match $setElementOrder list:\n"
     "[map[name:metrics]]"),
    ({"metadata": {"finalizers": [1]}}, 500,
     "list element types are not identical: [[example.com/a example.com/b] [1]]"),
    ([{"op": "add"}], 400, "json: cannot unmarshal array into Go value of type map[string]interface {}"),
])
def test_bad_strategic_merge_patches(patch, code, message):
    with pytest.raises(ApiError) as err:
        apply_strategic_merge_patch(DEPLOYMENT, patch, DEPLOYMENTS)
    assert (err.value.code, err.value.message) == (code, message)
    if code == 500:
        assert "reason" not in err.value.status()


def test_custom_resources_do_not_accept_strategic_merge_patch():
    crd = {"metadata": {"name": "clusterpolicies.nvidia.com"},
           "spec": {"group": "nvidia.com", "scope": "Cluster",
                    "names": {"plural": "clusterpolicies", "kind": "ClusterPolicy"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object"}}}]}}
    (rt,) = builtin_registry().add_crd(crd)
    with pytest.raises(ApiError) as err:
        apply_strategic_merge_patch({"spec": {}}, {"spec": {"a": 1}}, rt)
    assert err.value.status() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "the body of the request was in an unknown format - accepted media types include: "
                   "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
        "reason": "UnsupportedMediaType", "code": 415}


def test_null_patch_and_empty_patch_change_nothing():
    assert apply_strategic_merge_patch(DEPLOYMENT, None, DEPLOYMENTS) == DEPLOYMENT
    assert apply_strategic_merge_patch(DEPLOYMENT, {}, DEPLOYMENTS) == DEPLOYMENT


def test_int_and_float_merge_keys_are_different_values():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}}
    patch = {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80.0, "name": "http"}]}]}}
    ports = apply_strategic_merge_patch(pod, patch, PODS)["spec"]["containers"][0]["ports"]
    # no item matched, so the patch item leads: its key is not found in the live order
    assert ports == [{"containerPort": 80.0, "name": "http"}, {"containerPort": 80, "protocol": "TCP"}]


def test_lists_of_lists_are_refused_with_422():
    deployment = copy.deepcopy(DEPLOYMENT)
    deployment["metadata"]["finalizers"] = []
    with pytest.raises(ApiError) as err:
        apply_strategic_merge_patch(deployment, {"metadata": {"finalizers": [["nested"]]}}, DEPLOYMENTS)
    assert err.value.status()["code"] == 422
    assert err.value.status()["message"] == "the server rejected our request due to an error in our request"


def test_go_stable_sort_port_is_a_stable_sort_for_strict_orders():
    rng = random.Random(7)
    for n in (0, 1, 5, 20, 21, 47, 130):
        items = [(rng.randrange(10), i) for i in range(n)]
        assert slice_stable(list(items), lambda a, b: a[0] < b[0]) == sorted(items, key=lambda x: x[0])
