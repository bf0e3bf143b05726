"""metadata.managedFields on create, update and non-apply patches (kube-apiserver's field manager)."""
import copy

import pytest

from gpulab.cluster.kinds import builtin_registry, strategy_for
from gpulab.cluster.patch import apply_merge_patch, manager_or_user_agent, update_managed_fields

REGISTRY = builtin_registry()
PODS = REGISTRY.by_key("pods")
DEPLOYMENTS = REGISTRY.by_key("deployments.apps")
NODES = REGISTRY.by_key("nodes")

T1, T2, T3 = "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"

POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "trainer", "namespace": "default", "labels": {"app": "trainer"}},
       "spec": {"containers": [{"name": "cuda", "image": "cuda:12", "resources": {"limits": {"nvidia.com/gpu": 1}}}],
                "restartPolicy": "Never"}}

CREATE_FIELDS = {
    "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
    "f:spec": {"f:containers": {'k:{"name":"cuda"}': {
        ".": {}, "f:image": {}, "f:name": {},
        "f:resources": {".": {}, "f:limits": {".": {}, "f:nvidia.com/gpu": {}}}}},
        "f:restartPolicy": {}}}


def _created(manager="kubectl-create"):
    pod = update_managed_fields(None, POD, PODS, manager=manager, operation="Update", subresource=None, now=T1)
    pod["metadata"]["uid"] = "6b1c"
    return pod


def test_create_records_every_field_as_the_creating_manager():
    pod = update_managed_fields(None, POD, PODS, manager="kubectl-create", operation="Update", subresource=None,
                                now=T1)
    assert pod["metadata"]["managedFields"] == [
        {"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1", "time": T1,
         "fieldsType": "FieldsV1", "fieldsV1": CREATE_FIELDS}]
    assert "managedFields" not in POD["metadata"]


def test_create_of_a_deployment_leaves_out_the_dot_for_go_value_structs():
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "web", "namespace": "default"},
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                           "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
                           "template": {"metadata": {"labels": {"app": "web"}},
                                        "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}}
    result = update_managed_fields(None, deployment, DEPLOYMENTS, manager="kubectl-create", operation="Update",
                                   subresource=None, now=T1)
    assert result["metadata"]["managedFields"][0]["fieldsV1"] == {"f:spec": {
        "f:replicas": {}, "f:selector": {},
        "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}}, "f:type": {}},
        "f:template": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                       "f:spec": {"f:containers": {'k:{"name":"nginx"}': {
                           ".": {}, "f:image": {}, "f:name": {}, "f:resources": {}}}}}}}


def test_kubectl_label_adds_its_own_entry_sorted_by_time():
    pod = _created()
    labelled = update_managed_fields(pod, apply_merge_patch(pod, {"metadata": {"labels": {"gpu": "true"}}}), PODS,
                                     manager="kubectl-label", operation="Update", subresource=None, now=T2)
    assert labelled["metadata"]["managedFields"] == [
        {"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1", "time": T1,
         "fieldsType": "FieldsV1", "fieldsV1": CREATE_FIELDS},
        {"manager": "kubectl-label", "operation": "Update", "apiVersion": "v1", "time": T2,
         "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {"f:gpu": {}}}}}]


def test_a_change_moves_ownership_away_from_the_previous_manager():
    pod = _created()
    edited = copy.deepcopy(pod)
    edited["spec"]["containers"][0]["image"] = "cuda:12.4"
    result = update_managed_fields(pod, edited, PODS, manager="kubectl-edit", operation="Update", subresource=None,
                                   now=T2)
    create, edit = result["metadata"]["managedFields"]
    assert "f:image" not in create["fieldsV1"]["f:spec"]["f:containers"]['k:{"name":"cuda"}']
    assert edit["manager"] == "kubectl-edit"
    assert edit["fieldsV1"] == {"f:spec": {"f:containers": {'k:{"name":"cuda"}': {"f:image": {}}}}}


def test_the_same_manager_merges_into_one_entry_and_a_no_op_keeps_the_time():
    pod = _created()
    second = copy.deepcopy(pod)
    second["metadata"]["labels"]["team"] = "ml"
    second = update_managed_fields(pod, second, PODS, manager="kubectl-create", operation="Update", subresource=None,
                                   now=T2)
    (entry,) = second["metadata"]["managedFields"]
    assert entry["time"] == T2
    assert entry["fieldsV1"]["f:metadata"] == {"f:labels": {".": {}, "f:app": {}, "f:team": {}}}
    again = update_managed_fields(second, second, PODS, manager="kubectl-create", operation="Update",
                                  subresource=None, now=T3)
    assert again["metadata"]["managedFields"] == second["metadata"]["managedFields"]


def test_removing_a_field_removes_it_from_every_manager():
    pod = _created()
    unlabelled = update_managed_fields(pod, apply_merge_patch(pod, {"metadata": {"labels": {"app": None}}}), PODS,
                                       manager="kubectl-label", operation="Update", subresource=None, now=T2)
    (entry,) = unlabelled["metadata"]["managedFields"]
    assert entry["manager"] == "kubectl-create"
    # the emptied labels map itself is still kubectl-create's: a member without children has no "."
    assert entry["fieldsV1"]["f:metadata"] == {"f:labels": {}}


def test_status_subresource_entry_and_reset_fields():
    pod = _created()
    new = copy.deepcopy(pod)
    new["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    new["spec"]["restartPolicy"] = "Always"     # the status strategy resets spec: never owned through status
    result = update_managed_fields(pod, new, PODS, manager="kubelet", operation="Update", subresource="status",
                                   now=T2, reset=strategy_for(PODS).reset_fields("status"))
    assert result["metadata"]["managedFields"][-1] == {
        "manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": T2, "fieldsType": "FieldsV1",
        "fieldsV1": {"f:status": {"f:conditions": {".": {}, 'k:{"type":"Ready"}': {
            ".": {}, "f:status": {}, "f:type": {}}}, "f:phase": {}}},
        "subresource": "status"}


def test_status_is_not_owned_through_the_main_resource():
    pod = copy.deepcopy(POD)
    pod["status"] = {"phase": "Pending"}
    result = update_managed_fields(None, pod, PODS, manager="kubectl-create", operation="Update", subresource=None,
                                   now=T1, reset=strategy_for(PODS).reset_fields(None))
    assert "f:status" not in result["metadata"]["managedFields"][0]["fieldsV1"]


def test_scale_subresource_entry():
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "web", "namespace": "default", "uid": "1"}, "spec": {"replicas": 1}}
    deployment = update_managed_fields(None, deployment, DEPLOYMENTS, manager="kubectl-create", operation="Update",
                                       subresource=None, now=T1)
    scaled = apply_merge_patch(deployment, {"spec": {"replicas": 3}})
    result = update_managed_fields(deployment, scaled, DEPLOYMENTS, manager="kubectl", operation="Update",
                                   subresource="scale", now=T2)
    assert result["metadata"]["managedFields"] == [
        {"manager": "kubectl", "operation": "Update", "apiVersion": "apps/v1", "time": T2, "fieldsType": "FieldsV1",
         "fieldsV1": {"f:spec": {"f:replicas": {}}}, "subresource": "scale"}]


@pytest.mark.parametrize("sent", [[], [{}]])
def test_sending_an_empty_list_or_one_empty_entry_clears_managed_fields(sent):
    pod = _created()
    cleared = copy.deepcopy(pod)
    cleared["metadata"]["managedFields"] = sent
    result = update_managed_fields(pod, cleared, PODS, manager="kubectl-patch", operation="Update",
                                   subresource=None, now=T2)
    assert "managedFields" not in result["metadata"]
    # an object nobody tracks stays untracked on later updates
    later = update_managed_fields(result, apply_merge_patch(result, {"metadata": {"labels": {"x": "y"}}}), PODS,
                                  manager="kubectl-label", operation="Update", subresource=None, now=T3)
    assert "managedFields" not in later["metadata"]


def test_managed_fields_sent_by_the_client_are_kept_unless_undecodable():
    pod = _created()
    sent = copy.deepcopy(pod)
    sent["metadata"]["managedFields"][0]["manager"] = "renamed"
    kept = update_managed_fields(pod, sent, PODS, manager="kubectl-replace", operation="Update", subresource=None,
                                 now=T2)
    assert [e["manager"] for e in kept["metadata"]["managedFields"]] == ["renamed"]
    sent["metadata"]["managedFields"][0]["operation"] = "Delete"
    fallback = update_managed_fields(pod, sent, PODS, manager="kubectl-replace", operation="Update",
                                     subresource=None, now=T2)
    assert fallback["metadata"]["managedFields"] == pod["metadata"]["managedFields"]


def test_more_than_ten_update_managers_are_merged_into_ancient_changes():
    pod = _created("manager-00")
    for i in range(1, 11):
        new = copy.deepcopy(pod)
        new["metadata"]["labels"][f"l{i}"] = "v"
        pod = update_managed_fields(pod, new, PODS, manager=f"manager-{i:02d}", operation="Update",
                                    subresource=None, now=f"2026-01-01T00:00:{i:02d}Z")
    managers = [e["manager"] for e in pod["metadata"]["managedFields"]]
    assert managers == ["ancient-changes"] + [f"manager-{i:02d}" for i in range(2, 11)]
    bucket = pod["metadata"]["managedFields"][0]
    assert bucket["time"] == "2026-01-01T00:00:01Z"
    assert bucket["fieldsV1"]["f:metadata"]["f:labels"]["f:l1"] == {}


def test_custom_resources_have_no_go_zero_values():
    crd = {"metadata": {"name": "podgroups.scheduling.x-k8s.io"},
           "spec": {"group": "scheduling.x-k8s.io", "scope": "Namespaced",
                    "names": {"plural": "podgroups", "kind": "PodGroup"},
                    "versions": [{"name": "v1alpha1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                      "spec": {"type": "object", "properties": {"minMember": {"type": "integer"}}}}}},
                                  "subresources": {"status": {}}}]}}
    (rt,) = builtin_registry().add_crd(crd)
    group = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
             "metadata": {"name": "gang", "namespace": "default"}, "spec": {"minMember": 4}}
    result = update_managed_fields(None, group, rt, manager="kubectl-create", operation="Update", subresource=None,
                                   now=T1)
    assert result["metadata"]["managedFields"][0]["fieldsV1"] == {"f:spec": {".": {}, "f:minMember": {}}}


@pytest.mark.parametrize("field_manager, user_agent, expected", [
    ("kubectl-client-side-apply", "kubectl/v1.37.0 (linux/amd64) kubernetes/abc", "kubectl-client-side-apply"),
    (None, "kubectl/v1.37.0 (linux/amd64) kubernetes/abc", "kubectl"),
    ("", "OpenAPI-Generator/31.0.0/python", "OpenAPI-Generator"),
    (None, "nvidia-gpu-operator\x07/v24", "nvidia-gpu-operator"),
    (None, "x" * 200, "x" * 128),
    (None, None, ""),
])
def test_manager_or_user_agent(field_manager, user_agent, expected):
    assert manager_or_user_agent(field_manager, user_agent) == expected


def test_update_managed_fields_records_updates_only():
    with pytest.raises(ValueError):
        update_managed_fields(None, POD, PODS, manager="m", operation="Apply", subresource=None, now=T1)


# A Deployment created by `kubectl apply` and then reconciled by the deployment controller, as a real
# cluster showed it (kubectl get deployment nginx -o yaml). LabelSelector became
# x-kubernetes-map-type: atomic after that capture, so selector is one leaf now, and entries are split per
# subresource since v1.22.
LAST_APPLIED = ('{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{},"labels":{"app":"nginx"},'
                '"name":"nginx","namespace":"default"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"nginx"}},'
                '"template":{"metadata":{"labels":{"app":"nginx"}},"spec":{"containers":[{"image":"nginx:1.16",'
                '"name":"nginx","ports":[{"containerPort":8080}]}]}}}}\n')
DEFAULTED_NGINX = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": LAST_APPLIED},
                 "labels": {"app": "nginx"}, "name": "nginx", "namespace": "default"},
    "spec": {"progressDeadlineSeconds": 600, "replicas": 2, "revisionHistoryLimit": 10,
             "selector": {"matchLabels": {"app": "nginx"}},
             "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}, "type": "RollingUpdate"},
             "template": {"metadata": {"labels": {"app": "nginx"}},
                          "spec": {"containers": [{"image": "nginx:1.16", "imagePullPolicy": "IfNotPresent",
                                                   "name": "nginx",
                                                   "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                                                   "resources": {}, "terminationMessagePath": "/dev/termination-log",
                                                   "terminationMessagePolicy": "File"}],
                                   "dnsPolicy": "ClusterFirst", "restartPolicy": "Always",
                                   "schedulerName": "default-scheduler", "securityContext": {},
                                   "terminationGracePeriodSeconds": 30}}}}
CLIENT_SIDE_APPLY_FIELDS = {
    "f:metadata": {"f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}},
                   "f:labels": {".": {}, "f:app": {}}},
    "f:spec": {"f:progressDeadlineSeconds": {}, "f:replicas": {}, "f:revisionHistoryLimit": {}, "f:selector": {},
               "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}},
                              "f:type": {}},
               "f:template": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                              "f:spec": {"f:containers": {'k:{"name":"nginx"}': {
                                  ".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
                                  "f:ports": {".": {}, 'k:{"containerPort":8080,"protocol":"TCP"}': {
                                      ".": {}, "f:containerPort": {}, "f:protocol": {}}},
                                  "f:resources": {}, "f:terminationMessagePath": {},
                                  "f:terminationMessagePolicy": {}}},
                                  "f:dnsPolicy": {}, "f:restartPolicy": {}, "f:schedulerName": {},
                                  "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}}}}}


def test_golden_client_side_apply_then_deployment_controller():
    created = update_managed_fields(None, DEFAULTED_NGINX, DEPLOYMENTS, manager="kubectl-client-side-apply",
                                    operation="Update", subresource=None, now="2021-03-13T23:20:06Z")
    assert created["metadata"]["managedFields"] == [
        {"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "apps/v1",
         "time": "2021-03-13T23:20:06Z", "fieldsType": "FieldsV1", "fieldsV1": CLIENT_SIDE_APPLY_FIELDS}]
    created["metadata"].update(uid="133301f7", resourceVersion="6555", generation=1)
    revised = copy.deepcopy(created)
    revised["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "1"
    revised = update_managed_fields(created, revised, DEPLOYMENTS, manager="kube-controller-manager",
                                    operation="Update", subresource=None, now="2021-03-13T23:20:06Z")
    with_status = copy.deepcopy(revised)
    condition = {"lastTransitionTime": "2021-03-13T23:20:08Z", "lastUpdateTime": "2021-03-13T23:20:08Z",
                 "message": "m", "reason": "r", "status": "True"}
    with_status["status"] = {"availableReplicas": 2,
                             "conditions": [{**condition, "type": "Available"}, {**condition, "type": "Progressing"}],
                             "observedGeneration": 1, "readyReplicas": 2, "replicas": 2, "updatedReplicas": 2}
    final = update_managed_fields(revised, with_status, DEPLOYMENTS, manager="kube-controller-manager",
                                  operation="Update", subresource="status", now="2021-03-13T23:20:08Z")
    condition_fields = {".": {}, "f:lastTransitionTime": {}, "f:lastUpdateTime": {}, "f:message": {},
                        "f:reason": {}, "f:status": {}, "f:type": {}}
    # same second: sorted by manager name, so the controller's metadata entry comes first
    assert [e["manager"] for e in final["metadata"]["managedFields"]] == [
        "kube-controller-manager", "kubectl-client-side-apply", "kube-controller-manager"]
    assert final["metadata"]["managedFields"][1]["fieldsV1"] == CLIENT_SIDE_APPLY_FIELDS
    assert final["metadata"]["managedFields"][::2] == [
        {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1",
         "time": "2021-03-13T23:20:06Z", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:metadata": {"f:annotations": {"f:deployment.kubernetes.io/revision": {}}}}},
        {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1",
         "time": "2021-03-13T23:20:08Z", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:status": {"f:availableReplicas": {},
                                   "f:conditions": {".": {}, 'k:{"type":"Available"}': condition_fields,
                                                    'k:{"type":"Progressing"}': condition_fields},
                                   "f:observedGeneration": {}, "f:readyReplicas": {}, "f:replicas": {},
                                   "f:updatedReplicas": {}}},
         "subresource": "status"}]
