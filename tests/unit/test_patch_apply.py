"""Server-side apply: merge by schema, ownership, pruning, conflicts, force, kubectl's annotation upgrade."""
import copy
import json

import pytest

from gpulab.cluster.errors import ApiError
from gpulab.cluster.kinds import builtin_registry, strategy_for
from gpulab.cluster.patch import server_side_apply, update_managed_fields

REGISTRY = builtin_registry()
DEPLOYMENTS = REGISTRY.by_key("deployments.apps")
PODS = REGISTRY.by_key("pods")
T1, T2, T3, T4 = ("2026-02-01T00:00:00Z", "2026-02-02T00:00:00Z", "2026-02-03T00:00:00Z",
                  "2026-02-04T00:00:00Z")

CONFIG = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
          "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                   "template": {"metadata": {"labels": {"app": "web"}},
                                "spec": {"containers": [{"name": "app", "image": "nginx:1.25",
                                                         "ports": [{"containerPort": 80}]}]}}}}

APPLIED_FIELDS = {"f:spec": {
    "f:replicas": {}, "f:selector": {},
    "f:template": {"f:metadata": {"f:labels": {"f:app": {}}},
                   "f:spec": {"f:containers": {'k:{"name":"app"}': {
                       ".": {}, "f:image": {}, "f:name": {},
                       "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}}}}}}}}


def _apply(live, config, manager="kubectl", force=False, now=T1, subresource=None):
    """An apply to the Deployment endpoint ``subresource`` names, with that endpoint's reset fields."""
    return server_side_apply(live, config, DEPLOYMENTS, manager=manager, force=force, now=now, subresource=subresource,
                             reset=strategy_for(DEPLOYMENTS).reset_fields(subresource))


def _stored(obj):
    """What the API server would have stored: identity fields added."""
    obj = copy.deepcopy(obj)
    obj["metadata"].update(uid="0c1f", resourceVersion="10", creationTimestamp=T1)
    return obj


def _config(**spec):
    config = copy.deepcopy(CONFIG)
    for key, value in spec.items():
        if value is None:
            del config["spec"][key]
        else:
            config["spec"][key] = value
    return config


def test_create_by_apply():
    created = _apply(None, CONFIG)
    assert created == {**CONFIG, "metadata": {"name": "web", "namespace": "default", "managedFields": [
        {"manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1", "time": T1,
         "fieldsType": "FieldsV1", "fieldsV1": APPLIED_FIELDS}]}}


def test_reapplying_the_same_configuration_changes_nothing():
    live = _stored(_apply(None, CONFIG))
    assert _apply(live, CONFIG, now=T2) == live


def test_a_field_dropped_from_the_configuration_is_removed():
    live = _stored(_apply(None, CONFIG))
    result = _apply(live, _config(replicas=None), now=T2)
    assert "replicas" not in result["spec"]
    (entry,) = result["metadata"]["managedFields"]
    assert entry["time"] == T2
    assert "f:replicas" not in entry["fieldsV1"]["f:spec"]
    assert result["metadata"]["uid"] == "0c1f"


def test_a_dropped_container_is_removed_and_a_dropped_named_struct_too():
    config = _config(strategy={"type": "Recreate"})
    config["spec"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "busybox"})
    live = _stored(_apply(None, config))
    result = _apply(live, CONFIG, now=T2)
    assert [c["name"] for c in result["spec"]["template"]["spec"]["containers"]] == ["app"]
    assert "strategy" not in result["spec"]


def test_a_field_another_manager_also_owns_is_not_removed():
    live = _stored(_apply(None, CONFIG))
    shared = _stored(_apply(live, {"apiVersion": "apps/v1", "kind": "Deployment",
                                   "metadata": {"name": "web", "namespace": "default"}, "spec": {"replicas": 2}},
                            manager="gpu-team", now=T2))
    result = _apply(shared, _config(replicas=None), now=T3)
    assert result["spec"]["replicas"] == 2
    owners = {e["manager"]: e["fieldsV1"] for e in result["metadata"]["managedFields"]}
    assert owners["gpu-team"] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in owners["kubectl"]["f:spec"]


def test_conflict_with_another_applier_then_force():
    live = _stored(_apply(None, CONFIG))
    scale_up = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
                "spec": {"replicas": 5}}
    with pytest.raises(ApiError) as err:
        _apply(live, scale_up, manager="gpu-team", now=T2)
    assert err.value.status() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas',
        "reason": "Conflict",
        "details": {"causes": [{"reason": "FieldManagerConflict", "message": 'conflict with "kubectl"',
                                "field": ".spec.replicas"}]},
        "code": 409}
    forced = _apply(live, scale_up, manager="gpu-team", force=True, now=T2)
    assert forced["spec"]["replicas"] == 5
    kubectl, team = forced["metadata"]["managedFields"]
    assert (kubectl["manager"], kubectl["time"]) == ("kubectl", T1)
    assert "f:replicas" not in kubectl["fieldsV1"]["f:spec"]
    assert team == {"manager": "gpu-team", "operation": "Apply", "apiVersion": "apps/v1", "time": T2,
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}


def test_conflict_with_kubectl_client_side_apply():
    client_side = copy.deepcopy(CONFIG)
    live = _stored(update_managed_fields(None, client_side, DEPLOYMENTS, manager="kubectl-client-side-apply",
                                         operation="Update", subresource=None, now=T1))
    with pytest.raises(ApiError) as err:
        _apply(live, _config(replicas=3), manager="gpu-team", now=T2)
    assert err.value.message == ('Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" '
                                 "using apps/v1: .spec.replicas")
    assert err.value.details == {"causes": [{
        "reason": "FieldManagerConflict", "message": 'conflict with "kubectl-client-side-apply" using apps/v1',
        "field": ".spec.replicas"}]}


def test_conflicts_with_several_managers_are_listed_per_manager():
    live = _stored(update_managed_fields(None, CONFIG, DEPLOYMENTS, manager="kubectl-client-side-apply",
                                         operation="Update", subresource=None, now=T1))
    status = copy.deepcopy(live)
    status["spec"]["template"]["metadata"]["labels"]["tier"] = "gpu"
    live = update_managed_fields(live, status, DEPLOYMENTS, manager="kubectl-label", operation="Update",
                                 subresource=None, now=T2)
    config = _config(replicas=4)
    config["spec"]["template"]["metadata"]["labels"]["tier"] = "cpu"
    with pytest.raises(ApiError) as err:
        _apply(live, config, manager="gpu-team", now=T3)
    assert err.value.message == (
        "Apply failed with 2 conflicts: "
        'conflicts with "kubectl-client-side-apply" using apps/v1:\n- .spec.replicas\n'
        'conflicts with "kubectl-label" using apps/v1:\n- .spec.template.metadata.labels.tier')
    assert [c["field"] for c in err.value.details["causes"]] == [".spec.replicas",
                                                                 ".spec.template.metadata.labels.tier"]


def test_same_value_is_shared_ownership_not_a_conflict():
    live = _stored(_apply(None, CONFIG))
    result = _apply(live, _config(replicas=2), manager="gpu-team", now=T2)
    team, kubectl = result["metadata"]["managedFields"]
    # the object did not change, so managedFieldsUpdater sets no time: the new entry has none and sorts first
    assert team == {"manager": "gpu-team", "operation": "Apply", "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
                    "fieldsV1": APPLIED_FIELDS}
    assert kubectl == live["metadata"]["managedFields"][0]


def test_kubectl_server_side_apply_takes_over_from_its_client_side_annotation():
    annotated = copy.deepcopy(CONFIG)
    last = json.dumps(CONFIG, sort_keys=True, separators=(",", ":")) + "\n"
    annotated["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": last}
    live = _stored(update_managed_fields(None, annotated, DEPLOYMENTS, manager="kubectl-client-side-apply",
                                         operation="Update", subresource=None, now=T1))
    result = _apply(live, _config(replicas=3), manager="kubectl", now=T2)
    assert result["spec"]["replicas"] == 3
    annotation = result["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    assert annotation == json.dumps(_config(replicas=3), sort_keys=True, separators=(",", ":")) + "\n"
    server, client = result["metadata"]["managedFields"]   # Apply entries sort before Update entries
    assert (server["manager"], server["operation"], client["manager"]) == (
        "kubectl", "Apply", "kubectl-client-side-apply")
    assert "f:replicas" not in client["fieldsV1"]["f:spec"]


def test_kubectl_still_conflicts_on_fields_changed_since_its_last_client_side_apply():
    annotated = copy.deepcopy(CONFIG)
    annotated["metadata"]["annotations"] = {
        "kubectl.kubernetes.io/last-applied-configuration": json.dumps(CONFIG) + "\n"}
    live = _stored(update_managed_fields(None, annotated, DEPLOYMENTS, manager="kubectl-client-side-apply",
                                         operation="Update", subresource=None, now=T1))
    scaled = copy.deepcopy(live)
    scaled["spec"]["replicas"] = 7
    live = update_managed_fields(live, scaled, DEPLOYMENTS, manager="kubectl", operation="Update",
                                 subresource="scale", now=T2)
    with pytest.raises(ApiError) as err:
        _apply(live, _config(replicas=3), manager="kubectl", now=T3)
    assert err.value.message == ('Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" '
                                 "using apps/v1: .spec.replicas")


def test_an_object_nobody_tracked_gets_a_before_first_apply_entry():
    live = _stored(CONFIG)
    result = _apply(live, _config(replicas=3), manager="gpu-team", force=True, now=T2)
    entries = {e["manager"]: e for e in result["metadata"]["managedFields"]}
    assert entries["before-first-apply"]["operation"] == "Update"
    assert "f:replicas" not in entries["before-first-apply"]["fieldsV1"]["f:spec"]
    assert entries["gpu-team"]["fieldsV1"]["f:spec"]["f:replicas"] == {}


def test_status_in_an_apply_to_the_main_resource_is_not_owned():
    config = copy.deepcopy(CONFIG)
    config["status"] = {"replicas": 2}
    (entry,) = _apply(None, config)["metadata"]["managedFields"]
    assert entry["fieldsV1"] == APPLIED_FIELDS


def test_apply_to_the_status_subresource():
    live = _stored(_apply(None, CONFIG))
    status = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
              "status": {"readyReplicas": 2, "conditions": [{"type": "Available", "status": "True"}]}}
    result = _apply(live, status, manager="deployment-controller", now=T2, subresource="status")
    entry = result["metadata"]["managedFields"][-1]
    assert entry == {"manager": "deployment-controller", "operation": "Apply", "apiVersion": "apps/v1", "time": T2,
                     "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {
                         "f:conditions": {'k:{"type":"Available"}': {".": {}, "f:status": {}, "f:type": {}}},
                         "f:readyReplicas": {}}},
                     "subresource": "status"}


def test_set_lists_and_atomic_maps():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default",
                                                            "finalizers": ["example.com/a"]},
           "spec": {"nodeSelector": {"nvidia.com/gpu.present": "true"}, "containers": [{"name": "c", "image": "i"}]}}
    created = server_side_apply(None, pod, PODS, manager="m", force=False, now=T1)
    fields = created["metadata"]["managedFields"][0]["fieldsV1"]
    assert fields["f:metadata"] == {"f:finalizers": {'v:"example.com/a"': {}}}
    assert fields["f:spec"]["f:nodeSelector"] == {}
    other = copy.deepcopy(pod)
    other["metadata"]["finalizers"] = ["example.com/b"]
    other["spec"]["nodeSelector"] = {"zone": "a"}
    merged = server_side_apply(_stored(created), other, PODS, manager="n", force=True, now=T2)
    assert merged["metadata"]["finalizers"] == ["example.com/a", "example.com/b"]   # sets merge
    assert merged["spec"]["nodeSelector"] == {"zone": "a"}                          # atomic maps replace


@pytest.mark.parametrize("config, code, message", [
    ({**CONFIG, "kind": "StatefulSet"}, 400, "invalid object type: apps/v1, Kind=StatefulSet"),
    ({**CONFIG, "apiVersion": "v1"}, 400, "invalid object type: /v1, Kind=Deployment"),
    ({**CONFIG, "metadata": {"name": "web", "managedFields": []}}, 400, "metadata.managedFields must be nil"),
    ({**CONFIG, "spec": {"replicas": 1, "paralellism": 2}}, 500,
     "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): .spec.paralellism: "
     "field not declared in schema"),
    ({**CONFIG, "spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}, 500,
     "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): .spec.template.spec.containers: "
     'element 0: associative list with keys has an element that omits key field "name" '
     "(and doesn't have default value)"),
    ({**CONFIG, "spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}}}, 500,
     "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): .spec.template.spec.containers: "
     'duplicate entries for key [name="a"]'),
])
def test_bad_apply_configurations(config, code, message):
    with pytest.raises(ApiError) as err:
        _apply(None, config)
    assert (err.value.code, err.value.message) == (code, message)


def test_custom_resource_apply_follows_the_crd_schema():
    crd = {"metadata": {"name": "clusterpolicies.nvidia.com"},
           "spec": {"group": "nvidia.com", "scope": "Cluster",
                    "names": {"plural": "clusterpolicies", "kind": "ClusterPolicy"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                        "type": "object", "properties": {"spec": {"type": "object", "properties": {
                            "devicePlugin": {"type": "object", "properties": {
                                "env": {"type": "array", "x-kubernetes-list-type": "map",
                                        "x-kubernetes-list-map-keys": ["name"],
                                        "items": {"type": "object", "properties": {
                                            "name": {"type": "string"}, "value": {"type": "string"}}}},
                                "args": {"type": "array", "items": {"type": "string"}}}},
                            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}}}]}}
    (rt,) = builtin_registry().add_crd(crd)
    config = {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"},
              "spec": {"devicePlugin": {"env": [{"name": "MIG_STRATEGY", "value": "single"}], "args": ["a"]},
                       "extra": {"anything": {"goes": 1}}}}
    created = server_side_apply(None, config, rt, manager="gpu-operator", force=False, now=T1)
    assert created["metadata"]["managedFields"][0]["fieldsV1"] == {"f:spec": {
        "f:devicePlugin": {"f:args": {}, "f:env": {'k:{"name":"MIG_STRATEGY"}': {".": {}, "f:name": {},
                                                                                "f:value": {}}}},
        "f:extra": {"f:anything": {".": {}, "f:goes": {}}}}}   # map entries (not struct fields) are members
    with pytest.raises(ApiError) as err:
        server_side_apply(None, {**config, "spec": {"bogus": 1}}, rt, manager="m", force=False, now=T1)
    assert err.value.message == ("failed to create typed patch object (/cluster-policy; nvidia.com/v1, "
                                 "Kind=ClusterPolicy): .spec.bogus: field not declared in schema")


def test_configmap_example_from_the_server_side_apply_documentation():
    # kubernetes.io/docs/reference/using-api/server-side-apply/ "Field management" example
    configmaps = REGISTRY.by_key("configmaps")
    config = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": "test-cm", "namespace": "default", "labels": {"test-label": "test"}},
              "data": {"key": "some value"}}
    created = server_side_apply(None, config, configmaps, manager="kubectl", force=False, now="2010-10-10T00:00:00Z")
    assert created["metadata"]["managedFields"] == [
        {"manager": "kubectl", "operation": "Apply", "apiVersion": "v1", "time": "2010-10-10T00:00:00Z",
         "fieldsType": "FieldsV1",
         "fieldsV1": {"f:data": {"f:key": {}}, "f:metadata": {"f:labels": {"f:test-label": {}}}}}]
