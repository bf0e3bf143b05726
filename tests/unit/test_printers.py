"""Table columns and rows for the built-in kinds other than pods, and the Table envelope."""
from __future__ import annotations

import pytest

from gpulab.cluster.errors import ApiError
from gpulab.cluster.kinds import builtin_registry, table
from gpulab.cluster.printers.cells import parse_rfc3339

NOW = parse_rfc3339("2026-03-01T12:00:00Z") / 1e6
REG = builtin_registry()


def meta(name, created="2026-03-01T11:00:00Z", **extra):
    return {"name": name, "creationTimestamp": created, **extra}


def headers(key):
    return [(c["name"], c["type"], c["priority"]) for c in table(REG.by_key(key), [], now=NOW)["columnDefinitions"]]


def row(key, obj):
    return table(REG.by_key(key), [obj], now=NOW)["rows"][0]["cells"]


# --- the Table envelope ----------------------------------------------------------------
def test_table_envelope_and_partial_object_metadata():
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": meta("gpu-lab", uid="u1", resourceVersion="7"),
          "status": {"phase": "Active"}}
    out = table(REG.by_key("namespaces"), [ns], now=NOW)
    assert list(out) == ["kind", "apiVersion", "metadata", "columnDefinitions", "rows"]
    assert (out["kind"], out["apiVersion"], out["metadata"]) == ("Table", "meta.k8s.io/v1", {})
    assert out["rows"] == [{"cells": ["gpu-lab", "Active", "60m"],
                            "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                       "metadata": ns["metadata"]}}]


def test_include_object_none_and_object():
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": meta("a"), "status": {"phase": "Active"}}
    assert table(REG.by_key("namespaces"), [ns], now=NOW, include_object="None")["rows"][0]["object"] is None
    assert table(REG.by_key("namespaces"), [ns], now=NOW, include_object="Object")["rows"][0]["object"] == ns


def test_unknown_include_object_is_a_bad_request():
    with pytest.raises(ApiError) as err:
        table(REG.by_key("namespaces"), [], now=NOW, include_object="Everything")
    assert err.value.code == 400
    assert str(err.value.message) == 'unrecognized includeObject value: "Everything"'


# --- nodes -------------------------------------------------------------------------------
def node(labels=None, ready="True", unschedulable=False, conditions=True):
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta("gpu-node-1", "2026-02-27T12:00:00Z",
                                                                  labels=labels or {}),
            "spec": {"unschedulable": True} if unschedulable else {},
            "status": {"conditions": [{"type": "MemoryPressure", "status": "False"},
                                      {"type": "Ready", "status": ready}] if conditions else [],
                       "addresses": [{"type": "InternalIP", "address": "172.18.0.3"},
                                     {"type": "Hostname", "address": "gpu-node-1"}],
                       "nodeInfo": {"kubeletVersion": "v1.36.0", "osImage": "Ubuntu 24.04.1 LTS",
                                    "kernelVersion": "6.8.0-51-generic", "architecture": "amd64",
                                    "containerRuntimeVersion": "containerd://2.1.0"}}}


def test_node_columns():
    assert headers("nodes") == [("Name", "string", 0), ("Status", "string", 0), ("Roles", "string", 0),
                                ("Age", "string", 0), ("Version", "string", 0), ("Internal-IP", "string", 1),
                                ("External-IP", "string", 1), ("OS-Image", "string", 1),
                                ("Kernel-Version", "string", 1), ("Container-Runtime", "string", 1)]


def test_node_row_ready_with_roles_and_wide_cells():
    labels = {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "gpu",
              "node-role.kubernetes.io/": "ignored", "nvidia.com/gpu.present": "true"}
    assert row("nodes", node(labels)) == ["gpu-node-1", "Ready", "control-plane,gpu", "2d", "v1.36.0", "172.18.0.3",
                                          "<none>", "Ubuntu 24.04.1 LTS", "6.8.0-51-generic (amd64)",
                                          "containerd://2.1.0"]


@pytest.mark.parametrize("kwargs,status", [
    ({"ready": "False"}, "NotReady"),
    ({"ready": "Unknown"}, "NotReady"),
    ({"conditions": False}, "Unknown"),
    ({"unschedulable": True}, "Ready,SchedulingDisabled"),
    ({"ready": "Unknown", "unschedulable": True}, "NotReady,SchedulingDisabled"),
])
def test_node_status(kwargs, status):
    cells = row("nodes", node(**kwargs))
    assert (cells[1], cells[2]) == (status, "<none>")


def test_node_without_node_info():
    obj = {"apiVersion": "v1", "kind": "Node", "metadata": meta("bare"), "spec": {}, "status": {}}
    assert row("nodes", obj) == ["bare", "Unknown", "<none>", "60m", "", "<none>", "<none>", "<unknown>",
                                 "<unknown>", "<unknown>"]


# --- events ------------------------------------------------------------------------------
EVENT_HEADERS = [("Last Seen", "string", 0), ("Type", "string", 0), ("Reason", "string", 0),
                 ("Object", "string", 0), ("Subobject", "string", 1), ("Source", "string", 1),
                 ("Message", "string", 0), ("First Seen", "string", 1), ("Count", "string", 1),
                 ("Name", "string", 1)]


def test_event_columns_for_both_groups():
    assert headers("events") == EVENT_HEADERS
    events_v1 = REG.lookup("events.k8s.io", "v1", "events")
    assert [(c["name"], c["type"], c["priority"]) for c in table(events_v1, [], now=NOW)["columnDefinitions"]] \
        == EVENT_HEADERS


def test_core_event_row():
    event = {"apiVersion": "v1", "kind": "Event", "metadata": meta("infer-worker.18a1b2c3d4e5f607"),
             "involvedObject": {"kind": "Pod", "name": "infer-worker", "namespace": "default",
                                "fieldPath": "spec.containers{main}"},
             "reason": "FailedScheduling", "type": "Warning",
             "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu. \n",
             "source": {"component": "default-scheduler"}, "count": 3,
             "firstTimestamp": "2026-03-01T11:50:00Z", "lastTimestamp": "2026-03-01T11:55:00Z"}
    assert row("events", event) == ["5m", "Warning", "FailedScheduling", "pod/infer-worker", "spec.containers{main}",
                                    "default-scheduler", "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
                                    "10m", 3, "infer-worker.18a1b2c3d4e5f607"]


def test_core_event_with_host_and_only_event_time():
    event = {"apiVersion": "v1", "kind": "Event", "metadata": meta("e"), "type": "Normal", "reason": "Started",
             "involvedObject": {"kind": "Node"}, "message": "Started kubelet",
             "source": {"component": "kubelet", "host": "gpu-node-1"},
             "eventTime": "2026-03-01T11:59:30.000000Z"}
    assert row("events", event) == ["30s", "Normal", "Started", "node", "", "kubelet, gpu-node-1",
                                    "Started kubelet", "30s", 1, "e"]


def test_events_k8s_io_event_with_series():
    events_v1 = REG.lookup("events.k8s.io", "v1", "events")
    event = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": meta("e2"), "type": "Normal",
             "reason": "Pulled", "note": "Container image pulled", "regarding": {"kind": "Pod", "name": "p"},
             "reportingController": "kubelet", "reportingInstance": "gpu-node-2",
             "eventTime": "2026-03-01T11:00:00.000000Z",
             "series": {"count": 4, "lastObservedTime": "2026-03-01T11:58:00.000000Z"}}
    cells = table(events_v1, [event], now=NOW)["rows"][0]["cells"]
    assert cells == ["2m", "Normal", "Pulled", "pod/p", "", "kubelet, gpu-node-2", "Container image pulled",
                     "60m", 4, "e2"]


# --- small core kinds ------------------------------------------------------------------
def test_namespace_configmap_secret_serviceaccount_rows():
    assert headers("namespaces") == [("Name", "string", 0), ("Status", "string", 0), ("Age", "string", 0)]
    assert row("namespaces", {"metadata": meta("gone"), "status": {"phase": "Terminating"}}) == \
        ["gone", "Terminating", "60m"]
    assert headers("configmaps") == [("Name", "string", 0), ("Data", "string", 0), ("Age", "string", 0)]
    assert row("configmaps", {"metadata": meta("cfg"), "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}}) \
        == ["cfg", 3, "60m"]
    assert headers("secrets") == [("Name", "string", 0), ("Type", "string", 0), ("Data", "string", 0),
                                  ("Age", "string", 0)]
    assert row("secrets", {"metadata": meta("s"), "type": "Opaque", "data": {"k": "dg=="},
                           "stringData": {"k": "v", "x": "y"}}) == ["s", "Opaque", 2, "60m"]
    assert headers("serviceaccounts") == [("Name", "string", 0), ("Age", "string", 0)]
    assert row("serviceaccounts", {"metadata": meta("default"), "secrets": [{"name": "old-token"}]}) == ["default", "60m"]


def service(type_, **spec):
    return {"metadata": meta("triton"), "spec": {"type": type_, **spec}, "status": {}}


def test_service_columns():
    assert headers("services") == [("Name", "string", 0), ("Type", "string", 0), ("Cluster-IP", "string", 0),
                                   ("External-IP", "string", 0), ("Port(s)", "string", 0), ("Age", "string", 0),
                                   ("Selector", "string", 1)]


@pytest.mark.parametrize("svc,cells", [
    (service("ClusterIP", clusterIPs=["10.96.0.10"], ports=[{"port": 8000, "protocol": "TCP"},
                                                            {"port": 8001, "protocol": "UDP"}],
             selector={"app": "triton", "tier": "serve"}),
     ["triton", "ClusterIP", "10.96.0.10", "<none>", "8000/TCP,8001/UDP", "60m", "app=triton,tier=serve"]),
    (service("NodePort", clusterIPs=["10.96.0.11"], ports=[{"port": 80, "nodePort": 30080, "protocol": "TCP"}]),
     ["triton", "NodePort", "10.96.0.11", "<none>", "80:30080/TCP", "60m", "<none>"]),
    (service("LoadBalancer", clusterIPs=["10.96.0.12"], ports=[{"port": 80, "nodePort": 31000, "protocol": "TCP"}]),
     ["triton", "LoadBalancer", "10.96.0.12", "<pending>", "80:31000/TCP", "60m", "<none>"]),
    (service("ClusterIP", clusterIP="None"), ["triton", "ClusterIP", "None", "<none>", "<none>", "60m", "<none>"]),
    (service("ExternalName", externalName="models.example.com"),
     ["triton", "ExternalName", "<none>", "models.example.com", "<none>", "60m", "<none>"]),
])
def test_service_rows(svc, cells):
    assert row("services", svc) == cells


def test_load_balancer_ingress_and_external_ips():
    svc = service("LoadBalancer", clusterIPs=["10.96.0.12"], externalIPs=["192.0.2.9"])
    svc["status"] = {"loadBalancer": {"ingress": [{"ip": "203.0.113.5"}, {"hostname": "lb.example.com"}]}}
    assert row("services", svc)[3] == "203.0.113.5,lb.example.com,192.0.2.9"


# --- workloads ----------------------------------------------------------------------------
TEMPLATE = {"spec": {"containers": [{"name": "triton", "image": "nvcr.io/nvidia/tritonserver:24.05"},
                                    {"name": "sidecar", "image": "busybox"}]}}


def test_deployment():
    assert headers("deployments.apps") == [("Name", "string", 0), ("Ready", "string", 0), ("Up-to-date", "string", 0),
                                           ("Available", "string", 0), ("Age", "string", 0),
                                           ("Containers", "string", 1), ("Images", "string", 1),
                                           ("Selector", "string", 1)]
    deploy = {"metadata": meta("triton"), "spec": {"replicas": 3, "template": TEMPLATE, "selector": {
        "matchLabels": {"app": "triton"}, "matchExpressions": [{"key": "gpu", "operator": "In",
                                                                "values": ["l4", "a100"]}]}},
              "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}}
    assert row("deployments.apps", deploy) == ["triton", "2/3", 3, 2, "60m", "triton,sidecar",
                                               "nvcr.io/nvidia/tritonserver:24.05,busybox",
                                               "app=triton,gpu in (a100,l4)"]


def test_replicaset():
    assert headers("replicasets.apps") == [("Name", "string", 0), ("Desired", "integer", 0),
                                           ("Current", "integer", 0), ("Ready", "integer", 0), ("Age", "string", 0),
                                           ("Containers", "string", 1), ("Images", "string", 1),
                                           ("Selector", "string", 1)]
    rs = {"metadata": meta("triton-5d8f"), "spec": {"replicas": 2, "template": TEMPLATE, "selector": {
        "matchLabels": {"pod-template-hash": "5d8f", "app": "triton"}}}, "status": {"replicas": 2}}
    assert row("replicasets.apps", rs) == ["triton-5d8f", 2, 2, 0, "60m", "triton,sidecar",
                                           "nvcr.io/nvidia/tritonserver:24.05,busybox",
                                           "app=triton,pod-template-hash=5d8f"]


def test_daemonset():
    assert [h[0] for h in headers("daemonsets.apps")] == ["Name", "Desired", "Current", "Ready", "Up-to-date",
                                                          "Available", "Node Selector", "Age", "Containers",
                                                          "Images", "Selector"]
    ds = {"metadata": meta("nvidia-device-plugin-daemonset"),
          "spec": {"selector": {"matchLabels": {"name": "nvidia-device-plugin-ds"}},
                   "template": {"spec": {"nodeSelector": {"nvidia.com/gpu.present": "true"},
                                         "containers": [{"name": "nvidia-device-plugin-ctr",
                                                         "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"}]}}},
          "status": {"desiredNumberScheduled": 2, "currentNumberScheduled": 2, "numberReady": 1,
                     "updatedNumberScheduled": 2, "numberAvailable": 1}}
    assert row("daemonsets.apps", ds) == ["nvidia-device-plugin-daemonset", 2, 2, 1, 2, 1,
                                          "nvidia.com/gpu.present=true", "60m", "nvidia-device-plugin-ctr",
                                          "nvcr.io/nvidia/k8s-device-plugin:v0.17.0", "name=nvidia-device-plugin-ds"]


def job(conditions=(), deleting=False, **spec):
    obj = {"metadata": meta("train"), "spec": {"template": TEMPLATE, **spec,
                                                "selector": {"matchLabels": {"batch.kubernetes.io/job-name": "train"}}},
           "status": {"conditions": [{"type": t, "status": s} for t, s in conditions]}}
    if deleting:
        obj["metadata"]["deletionTimestamp"] = "2026-03-01T11:59:00Z"
    return obj


def test_job_columns():
    assert headers("jobs.batch") == [("Name", "string", 0), ("Status", "string", 0), ("Completions", "string", 0),
                                     ("Duration", "string", 0), ("Age", "string", 0), ("Containers", "string", 1),
                                     ("Images", "string", 1), ("Selector", "string", 1)]


@pytest.mark.parametrize("obj,status", [
    (job(), "Running"),
    (job([("Complete", "True")]), "Complete"),
    (job([("Failed", "True")]), "Failed"),
    (job([("Complete", "False")]), "Running"),
    (job([("Suspended", "True")]), "Suspended"),
    (job([("Suspended", "True")], deleting=True), "Terminating"),
    (job([("Complete", "True")], deleting=True), "Complete"),
    (job([("FailureTarget", "True")]), "FailureTarget"),
    (job([("SuccessCriteriaMet", "True")]), "SuccessCriteriaMet"),
    (job([("SuccessCriteriaMet", "True"), ("Complete", "True")]), "Complete"),
])
def test_job_status(obj, status):
    assert row("jobs.batch", obj)[1] == status


def test_job_rows_completions_and_duration():
    done = job([("Complete", "True")], completions=4, parallelism=2)
    done["status"].update(succeeded=4, startTime="2026-03-01T11:00:00Z", completionTime="2026-03-01T11:03:20Z")
    assert row("jobs.batch", done) == ["train", "Complete", "4/4", "3m20s", "60m", "triton,sidecar",
                                       "nvcr.io/nvidia/tritonserver:24.05,busybox",
                                       "batch.kubernetes.io/job-name=train"]
    work_queue = job(parallelism=3)
    work_queue["status"].update(succeeded=1, startTime="2026-03-01T11:30:00Z")
    assert row("jobs.batch", work_queue)[2:4] == ["1/1 of 3", "30m"]
    assert row("jobs.batch", job(parallelism=1))[2:4] == ["0/1", ""]


def test_controller_revision():
    assert headers("controllerrevisions.apps") == [("Name", "string", 0), ("Controller", "string", 0),
                                                   ("Revision", "string", 0), ("Age", "string", 0)]
    rev = {"metadata": meta("gpu-feature-discovery-7c9", ownerReferences=[
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "gpu-feature-discovery", "controller": True}]),
        "revision": 2}
    assert row("controllerrevisions.apps", rev) == ["gpu-feature-discovery-7c9", "daemonset.apps/gpu-feature-discovery",
                                                    2, "60m"]
    assert row("controllerrevisions.apps", {"metadata": meta("orphan"), "revision": 1})[1] == "<none>"


def test_pod_disruption_budget():
    assert headers("poddisruptionbudgets.policy") == [("Name", "string", 0), ("Min Available", "string", 0),
                                                      ("Max Unavailable", "string", 0),
                                                      ("Allowed Disruptions", "integer", 0), ("Age", "string", 0)]
    assert row("poddisruptionbudgets.policy", {"metadata": meta("triton"), "spec": {"minAvailable": 1},
                                                "status": {"disruptionsAllowed": 1}}) == ["triton", "1", "N/A", 1, "60m"]
    assert row("poddisruptionbudgets.policy", {"metadata": meta("t"), "spec": {"maxUnavailable": "25%"}}) == \
        ["t", "N/A", "25%", 0, "60m"]


def test_priority_class():
    assert headers("priorityclasses.scheduling.k8s.io") == [("Name", "string", 0), ("Value", "integer", 0),
                                                            ("Global-Default", "boolean", 0), ("Age", "string", 0),
                                                            ("PreemptionPolicy", "string", 0)]
    pc = {"metadata": meta("system-node-critical", "2026-01-01T00:00:00Z"), "value": 2000001000,
          "preemptionPolicy": "PreemptLowerPriority"}
    assert row("priorityclasses.scheduling.k8s.io", pc) == ["system-node-critical", 2000001000, False, "59d",
                                                            "PreemptLowerPriority"]


def test_lease():
    assert headers("leases.coordination.k8s.io") == [("Name", "string", 0), ("Holder", "string", 0),
                                                     ("Age", "string", 0)]
    assert row("leases.coordination.k8s.io", {"metadata": meta("gpu-node-1"),
                                              "spec": {"holderIdentity": "gpu-node-1"}}) == ["gpu-node-1", "gpu-node-1",
                                                                                             "60m"]
    assert row("leases.coordination.k8s.io", {"metadata": meta("free"), "spec": {}})[1] == ""


# --- kinds without a printer ------------------------------------------------------------
def test_custom_resource_definitions_print_group_scope_and_versions():
    """v1.37's CRD table convertor (apiextensions-apiserver tableconvertor.go, kubernetes/kubernetes#131599)."""
    assert headers("customresourcedefinitions.apiextensions.k8s.io") == [
        ("Name", "string", 0), ("Group", "string", 0), ("Scope", "string", 0), ("Versions", "string", 0),
        ("Created At", "date", 0)]
    crd = {"metadata": meta("clusterpolicies.nvidia.com", "2026-03-01T06:30:00+01:00"),
           "spec": {"group": "nvidia.com", "scope": "Cluster",
                    "versions": [{"name": "v1", "served": True}, {"name": "v1alpha1", "served": False}]}}
    assert row("customresourcedefinitions.apiextensions.k8s.io", crd) == [
        "clusterpolicies.nvidia.com", "nvidia.com", "Cluster", "v1,v1alpha1", "2026-03-01T05:30:00Z"]
