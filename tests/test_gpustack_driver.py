"""Driver versions through the real kubectl: a pinned ``driver.version``, then a change that rolls node by node.

The upgrade controller (gpu-operator ``upgrade_controller.go`` / k8s-operator-libs) cordons one node at a time,
deletes the pods using its GPUs, restarts the driver pod and uncordons, recording ``GPUDriverUpgrade`` events; a
GPU pod that no controller owns stops the upgrade of its node (``upgrade-failed``) until the learner deals with it.
Upstream sources: docs/fidelity.md#gpustack.
"""
from __future__ import annotations

import json
import re
import time

import pytest

from .conftest import start_cluster, stop_cluster, wait_for

H100_NODE = "gpulab-worker2"
A100_NODE = "gpulab-worker3"
STATE = "nvidia.com/gpu-driver-upgrade-state"
# k8s-operator-libs pkg/upgrade (common_manager.go, pod_manager.go) with pod deletion on and drain off, as the
# GPU Operator's chart sets them
UPSTREAM_STATES = ("upgrade-required", "cordon-required", "wait-for-jobs-required", "pod-deletion-required",
                   "drain-required", "pod-restart-required", "validation-required", "uncordon-required",
                   "upgrade-done")
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("gpustack-driver")]




@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = start_cluster(tmp_path_factory.mktemp("gpustack-driver"))
    c.gpulab("install", "gpu-operator", "--set", "driver.version=580.105.08", timeout=180)
    yield c
    stop_cluster(c)


def node(cluster, name: str) -> dict:
    return json.loads(cluster.kubectl("get", "node", name, "-o", "json").stdout)


def label(cluster, name: str, key: str) -> str | None:
    return node(cluster, name)["metadata"]["labels"].get(key)


def pods(cluster, selector: str) -> list[dict]:
    return json.loads(cluster.kubectl("get", "pods", "-l", selector, "-o", "json").stdout)["items"]


def node_events(cluster, name: str) -> list[str]:
    items = json.loads(cluster.kubectl("get", "events", "--field-selector",
                                       f"involvedObject.name={name},reason=GPUDriverUpgrade", "-o",
                                       "json").stdout)["items"]
    return [e["message"] for e in items]


WORKLOADS = f"""
apiVersion: v1
kind: Pod
metadata: {{name: bare, labels: {{app: bare}}}}
spec:
  nodeSelector: {{kubernetes.io/hostname: {H100_NODE}}}
  containers:
  - name: main
    image: nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04
    command: [sleep, "3600"]
    resources: {{limits: {{nvidia.com/gpu: "1"}}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: served}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: served}}}}
  template:
    metadata: {{labels: {{app: served}}}}
    spec:
      terminationGracePeriodSeconds: 1
      nodeSelector: {{kubernetes.io/hostname: {A100_NODE}}}
      containers:
      - name: main
        image: nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04
        command: [sleep, "3600"]
        resources: {{limits: {{nvidia.com/gpu: "1"}}}}
"""


def test_a_pinned_driver_stays_put(cluster):
    for name in (H100_NODE, A100_NODE):
        wait_for(lambda: label(cluster, name, STATE) == "upgrade-done" and
                 label(cluster, name, "nvidia.com/cuda.driver-version.full") == "580.105.08", what=f"{name} ready")
    out = cluster.gpulab("upgrade", "gpu-operator", "--reuse-values", "--version", "v26.3.3", timeout=180)
    assert out.stdout.splitlines()[0] == 'Release "gpu-operator" has been upgraded. Happy Helming!'
    assert "REVISION: 2" in out.stdout
    time.sleep(3)
    assert label(cluster, H100_NODE, STATE) == "upgrade-done"
    image = json.loads(cluster.kubectl("get", "ds", "-n", "gpu-operator", "nvidia-driver-daemonset", "-o",
                                       "json").stdout)["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image.startswith("nvcr.io/nvidia/driver:580.105.08-")


def test_changing_the_version_rolls_node_by_node(cluster):
    for name in (H100_NODE, A100_NODE):
        wait_for(lambda: label(cluster, name, STATE) == "upgrade-done", what=f"{name} upgrade-done")
    cluster.kubectl("apply", "-f", "-", input=WORKLOADS)
    wait_for(lambda: len(pods(cluster, "app in (bare,served)")) == 2 and all(
        p["status"].get("phase") == "Running" for p in pods(cluster, "app in (bare,served)")), what="GPU workloads")
    served_before = pods(cluster, "app=served")[0]["metadata"]["name"]
    cluster.gpulab("upgrade", "gpu-operator", "--reuse-values", "--set", "driver.version=580.126.20", timeout=180)
    # the H100 node goes first and stops at its bare GPU pod, which no controller owns
    wait_for(lambda: label(cluster, H100_NODE, STATE) == "upgrade-failed", what="upgrade-failed")
    assert any("cannot delete Pods declare no controller (use --force to override): default/bare" in m
               for m in node_events(cluster, H100_NODE))
    assert node(cluster, H100_NODE)["spec"].get("unschedulable") is True
    assert pods(cluster, "app=bare")[0]["status"]["phase"] == "Running"
    # then the A100 node: its Deployment pod is deleted, the driver replaced, the node uncordoned
    wait_for(lambda: label(cluster, A100_NODE, STATE) == "upgrade-done" and
             label(cluster, A100_NODE, "nvidia.com/cuda.driver-version.full") == "580.126.20",
             timeout=120, what="the A100 node on the new driver")
    # the node left pod-deletion-required only once its GPU pods were gone: none is left terminating
    assert not [p for p in pods(cluster, "app=served") if p["metadata"].get("deletionTimestamp")]
    messages = node_events(cluster, A100_NODE)
    for state in UPSTREAM_STATES:
        assert f"Successfully updated node state label to {state}" in messages
    # the pods are deleted and waited for (the drain helper), then the node moves on and says so
    assert messages.index("Deleted workload pods on the node for the driver upgrade") == \
        messages.index("Successfully updated node state label to drain-required") + 1
    # kubectl events lists them in the order they happened, though several share one second. upgrade-done
    # repeats the install's event, so (as client-go aggregates) it is that event with a count of 2.
    lines = [line for line in cluster.kubectl("events", "--for", f"node/{A100_NODE}").stdout.splitlines()
             if "Successfully updated node state label to" in line]
    assert [line.rsplit(" to ", 1)[1] for line in lines if not line.endswith("upgrade-done")] == \
        list(UPSTREAM_STATES[:-1]), lines
    # (a busy machine can see the controller write upgrade-done once more as the node settles: a count of 3)
    done = next(line for line in lines if line.endswith("upgrade-done"))
    assert re.search(r"\(x[23] over ", done), lines
    assert not node(cluster, A100_NODE)["spec"].get("unschedulable")
    wait_for(lambda: [p["metadata"]["name"] for p in pods(cluster, "app=served")] != [served_before] and
             all(p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
                 for p in pods(cluster, "app=served")), what="the Deployment's pod replaced")

    # once the bare pod is gone, relabelling the node resumes its upgrade
    cluster.kubectl("delete", "pod", "bare", "--grace-period=0", "--force")
    cluster.kubectl("label", "node", H100_NODE, f"{STATE}=upgrade-required", "--overwrite")
    wait_for(lambda: label(cluster, H100_NODE, STATE) == "upgrade-done" and
             label(cluster, H100_NODE, "nvidia.com/cuda.driver-version.full") == "580.126.20",
             timeout=120, what="the H100 node on the new driver")
    assert not node(cluster, H100_NODE)["spec"].get("unschedulable")


def test_an_upgrade_without_values_keeps_the_last_releases_as_helm_does(cluster):
    def driver_image() -> str:
        return json.loads(cluster.kubectl("get", "ds", "-n", "gpu-operator", "nvidia-driver-daemonset", "-o", "json")
                          .stdout)["spec"]["template"]["spec"]["containers"][0]["image"]

    before = driver_image()
    assert before.startswith("nvcr.io/nvidia/driver:580.126.20-")
    out = cluster.gpulab("upgrade", "gpu-operator", "-n", "gpu-operator", "--wait", timeout=180)
    assert "REVISION: 4" in out.stdout
    assert driver_image() == before
    policy = json.loads(cluster.kubectl("get", "clusterpolicy", "cluster-policy", "-o", "json").stdout)
    assert policy["spec"]["driver"]["version"] == "580.126.20"
