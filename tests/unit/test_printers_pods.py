"""The pod printer's STATUS, READY and RESTARTS logic (printPod in pkg/printers/internalversion)."""
from __future__ import annotations

import pytest

from gpulab.cluster.kinds import builtin_registry, table
from gpulab.cluster.printers.cells import parse_rfc3339

NOW = parse_rfc3339("2026-03-01T12:00:00Z") / 1e6
PODS = builtin_registry().by_key("pods")


def pod(*, phase="Running", containers=("main",), init=(), statuses=(), init_statuses=(), conditions=(),
        reason=None, deleting=False, **spec_extra):
    obj = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "infer-worker", "namespace": "default", "creationTimestamp": "2026-03-01T11:55:00Z"},
        "spec": {"containers": [{"name": n, "image": "nvcr.io/nvidia/cuda:12.4"} for n in containers],
                 **({"initContainers": list(init)} if init else {}), **spec_extra},
        "status": {"phase": phase, "conditions": list(conditions),
                   "containerStatuses": list(statuses), "initContainerStatuses": list(init_statuses)},
    }
    if reason:
        obj["status"]["reason"] = reason
    if deleting:
        obj["metadata"]["deletionTimestamp"] = "2026-03-01T11:59:00Z"
    return obj


def running(name="main", ready=True, restarts=0, **extra):
    return {"name": name, "ready": ready, "restartCount": restarts, "state": {"running": {}}, **extra}


def waiting(reason, name="main", restarts=0, **extra):
    return {"name": name, "ready": False, "restartCount": restarts, "state": {"waiting": {"reason": reason}},
            **extra}


def terminated(name="main", restarts=0, **state):
    return {"name": name, "ready": False, "restartCount": restarts, "state": {"terminated": state}}


READY = {"type": "Ready", "status": "True"}
INITIALIZED = {"type": "Initialized", "status": "True"}
INIT_A, INIT_B = {"name": "fetch-model", "image": "busybox"}, {"name": "warmup", "image": "busybox"}
SIDECAR = {"name": "metrics", "image": "dcgm-exporter", "restartPolicy": "Always"}


def cells(obj):
    return table(PODS, [obj], now=NOW)["rows"][0]["cells"]


STATUS_CASES = [
    ("running", pod(statuses=[running()], conditions=[READY]), "1/1", "Running"),
    ("pending without status", pod(phase="Pending"), "0/1", "Pending"),
    ("unschedulable stays Pending",
     pod(phase="Pending", conditions=[{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]),
     "0/1", "Pending"),
    ("scheduling gated",
     pod(phase="Pending", conditions=[{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]),
     "0/1", "SchedulingGated"),
    ("container creating", pod(phase="Pending", statuses=[waiting("ContainerCreating")]), "0/1", "ContainerCreating"),
    ("image pull error", pod(phase="Pending", statuses=[waiting("ErrImagePull")]), "0/1", "ErrImagePull"),
    ("image pull back-off", pod(phase="Pending", statuses=[waiting("ImagePullBackOff")]), "0/1", "ImagePullBackOff"),
    ("crash loop", pod(statuses=[waiting("CrashLoopBackOff", restarts=4)]), "0/1", "CrashLoopBackOff"),
    ("completed", pod(phase="Succeeded", statuses=[terminated(reason="Completed", exitCode=0)]), "0/1", "Completed"),
    ("error", pod(phase="Failed", statuses=[terminated(reason="Error", exitCode=1)]), "0/1", "Error"),
    ("oom killed", pod(phase="Failed", statuses=[terminated(reason="OOMKilled", exitCode=137)]), "0/1", "OOMKilled"),
    ("exit code without reason", pod(phase="Failed", statuses=[terminated(exitCode=3)]), "0/1", "ExitCode:3"),
    ("signal without reason", pod(phase="Failed", statuses=[terminated(exitCode=137, signal=9)]), "0/1", "Signal:9"),
    ("first init container running",
     pod(phase="Pending", init=[INIT_A, INIT_B],
         init_statuses=[running("fetch-model", ready=False), waiting("PodInitializing", "warmup")],
         statuses=[waiting("PodInitializing")]), "0/1", "Init:0/2"),
    ("second init container running",
     pod(phase="Pending", init=[INIT_A, INIT_B],
         init_statuses=[terminated("fetch-model", reason="Completed", exitCode=0), running("warmup", ready=False)],
         statuses=[waiting("PodInitializing")]), "0/1", "Init:1/2"),
    ("init container image pull error",
     pod(phase="Pending", init=[INIT_A], init_statuses=[waiting("ErrImagePull", "fetch-model")],
         statuses=[waiting("PodInitializing")]), "0/1", "Init:ErrImagePull"),
    ("init container failed",
     pod(phase="Pending", init=[INIT_A], init_statuses=[terminated("fetch-model", reason="Error", exitCode=1)],
         statuses=[waiting("PodInitializing")]), "0/1", "Init:Error"),
    ("init container failed without reason",
     pod(phase="Pending", init=[INIT_A], init_statuses=[terminated("fetch-model", exitCode=2)]),
     "0/1", "Init:ExitCode:2"),
    ("init container killed by signal",
     pod(phase="Pending", init=[INIT_A], init_statuses=[terminated("fetch-model", exitCode=143, signal=15)]),
     "0/1", "Init:Signal:15"),
    ("init done, containers initializing",
     pod(phase="Pending", init=[INIT_A], init_statuses=[terminated("fetch-model", reason="Completed", exitCode=0)],
         statuses=[waiting("PodInitializing")], conditions=[INITIALIZED]), "0/1", "PodInitializing"),
    ("sidecar started and ready counts as a container",
     pod(init=[SIDECAR], init_statuses=[running("metrics", started=True)], statuses=[running()],
         conditions=[INITIALIZED, READY]), "2/2", "Running"),
    ("completed container beside a running one, pod ready",
     pod(containers=("main", "helper"), statuses=[running(), terminated("helper", reason="Completed", exitCode=0)],
         conditions=[READY]), "1/2", "Running"),
    ("completed container beside a running one, pod not ready",
     pod(containers=("main", "helper"), statuses=[running(), terminated("helper", reason="Completed", exitCode=0)]),
     "1/2", "NotReady"),
    ("terminating", pod(statuses=[running()], conditions=[READY], deleting=True), "1/1", "Terminating"),
    ("finished pods do not show Terminating",
     pod(phase="Succeeded", statuses=[terminated(reason="Completed", exitCode=0)], deleting=True), "0/1", "Completed"),
    ("node lost", pod(statuses=[running()], reason="NodeLost", deleting=True), "1/1", "Unknown"),
    ("rejected for an extended resource", pod(phase="Failed", reason="OutOfnvidia.com/gpu"), "0/1",
     "OutOfnvidia.com/gpu"),
    ("unexpected admission error", pod(phase="Failed", reason="UnexpectedAdmissionError"), "0/1",
     "UnexpectedAdmissionError"),
    ("evicted keeps the reason", pod(phase="Failed", reason="Evicted"), "0/1", "Evicted"),
]


@pytest.mark.parametrize("obj,ready,status", [c[1:] for c in STATUS_CASES], ids=[c[0] for c in STATUS_CASES])
def test_pod_status_and_ready(obj, ready, status):
    row = cells(obj)
    assert (row[1], row[2]) == (ready, status)


def test_pod_columns_are_kubectls_headers():
    cols = table(PODS, [], now=NOW)["columnDefinitions"]
    assert [(c["name"], c["priority"]) for c in cols] == [
        ("Name", 0), ("Ready", 0), ("Status", 0), ("Restarts", 0), ("Age", 0),
        ("IP", 1), ("Node", 1), ("Nominated Node", 1), ("Readiness Gates", 1)]
    assert cols[0]["format"] == "name"
    assert cols[3] == {"name": "Restarts", "type": "string", "format": "", "priority": 0,
                       "description": "The number of times the containers in this pod have been restarted and "
                                      "when the last container in this pod has restarted."}
    assert cols[5]["description"].startswith("podIP address allocated to the pod.")


def test_full_row_with_restarts_and_wide_cells():
    obj = pod(statuses=[running(restarts=3, lastState={"terminated": {"exitCode": 1,
                                                                      "finishedAt": "2026-03-01T11:57:30Z"}})],
              conditions=[READY, {"type": "example.com/lb", "status": "True"}],
              nodeName="gpu-node-1", readinessGates=[{"conditionType": "example.com/lb"},
                                                     {"conditionType": "example.com/dns"}])
    obj["status"]["podIPs"] = [{"ip": "10.244.1.7"}]
    obj["status"]["nominatedNodeName"] = "gpu-node-2"
    assert cells(obj) == ["infer-worker", "1/1", "Running", "3 (2m30s ago)", "5m", "10.244.1.7", "gpu-node-1",
                          "gpu-node-2", "1/2"]


def test_unscheduled_pod_wide_cells_are_none():
    assert cells(pod(phase="Pending"))[4:] == ["5m", "<none>", "<none>", "<none>", "<none>"]


def test_restarts_without_a_termination_time_have_no_ago():
    assert cells(pod(statuses=[waiting("CrashLoopBackOff", restarts=7)]))[3] == "7"


def test_pod_ip_falls_back_to_status_pod_ip():
    obj = pod(statuses=[running()])
    obj["status"]["podIP"] = "10.244.0.9"
    assert cells(obj)[5] == "10.244.0.9"


def test_sidecar_restarts_count_after_initialization():
    sidecar = running("metrics", restarts=2, started=True,
                      lastState={"terminated": {"exitCode": 1, "finishedAt": "2026-03-01T11:58:00Z"}})
    obj = pod(init=[SIDECAR], init_statuses=[sidecar], statuses=[running(restarts=1)],
              conditions=[INITIALIZED, READY])
    assert cells(obj)[1:4] == ["2/2", "Running", "3 (2m ago)"]


def test_finished_pods_carry_the_completed_row_condition():
    rows = table(PODS, [pod(phase="Succeeded", statuses=[terminated(reason="Completed", exitCode=0)]),
                        pod(phase="Failed", statuses=[terminated(reason="Error", exitCode=1)]),
                        pod(statuses=[running()])], now=NOW)["rows"]
    assert rows[0]["conditions"] == [{"type": "Completed", "status": "True", "reason": "Succeeded",
                                      "message": "The pod has completed successfully."}]
    assert rows[1]["conditions"] == [{"type": "Completed", "status": "True", "reason": "Failed",
                                      "message": "The pod failed."}]
    assert "conditions" not in rows[2]
