"""The two ways to install NVIDIA's DRA driver, through gpulab's helm and the real kubectl, on one cluster.

First the standalone chart on a pool where the operator's device plugin is switched off (its kubelet plugin held
there by ``kubeletPlugin.nodeSelector``), beside the device plugin on the other GPU node; then, after the
GPU Operator release is replaced (GPUCluster is for new deployments only), a GPUCluster: the operator sweeps the
device plugin's labels off every GPU node and runs its own copy of the driver there. A GPUCluster next to a
ClusterPolicy is refused by both controllers. On both engines: the upstream one's kube-apiserver holds the
GPUCluster CRD's own validation (its CEL rule on the name). Upstream sources: docs/fidelity.md#dra-driver.
"""
from __future__ import annotations

import json

import pytest

from .conftest import start_cluster, stop_cluster, wait_for

H100_NODE = "gpulab-worker2"
A100_NODE = "gpulab-worker3"
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("gpustack-dra-install")]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, engine):
    c = start_cluster(tmp_path_factory.mktemp("gpustack-dra-install"), engine=engine)
    c.gpulab("install", "gpu-operator", timeout=180)
    yield c
    stop_cluster(c)


def pods_on(cluster, namespace: str, selector: str) -> set[str]:
    out = cluster.kubectl("get", "pods", "-n", namespace, "-l", selector, "-o",
                          "jsonpath={range .items[*]}{.spec.nodeName}{'\\n'}{end}").stdout
    return set(out.split())


def slice_nodes(cluster) -> set[str]:
    out = cluster.kubectl("get", "resourceslices", "-o", "jsonpath={.items[*].spec.nodeName}").stdout
    return set(out.split())


def conditions(cluster, kind: str, name: str) -> dict[str, tuple[str, str, str]]:
    obj = json.loads(cluster.kubectl("get", kind, name, "-o", "json").stdout)
    return {c["type"]: (c["status"], c["reason"], c.get("message", ""))
            for c in (obj.get("status") or {}).get("conditions") or ()}


def test_the_standalone_chart_serves_only_the_pool_without_the_device_plugin(cluster):
    wait_for(lambda: pods_on(cluster, "gpu-operator", "app=nvidia-device-plugin-daemonset") == {H100_NODE, A100_NODE},
             what="the device plugin on both GPU nodes")
    cluster.kubectl("label", "node", H100_NODE, "gpu-allocation=dra", "nvidia.com/gpu.deploy.device-plugin=false",
                    "--overwrite")
    wait_for(lambda: pods_on(cluster, "gpu-operator", "app=nvidia-device-plugin-daemonset") == {A100_NODE},
             what="the device plugin to leave the H100 node")
    refused = cluster.gpulab("install", "nvidia-dra-driver-gpu", "--set",
                             "kubeletPlugin.nodeSelector.gpu-allocation=dra", check=False)
    assert refused.returncode == 1 and "cannot be deployed alongside the standard GPU device plugin on the same " \
        "node" in refused.stderr
    cluster.gpulab("install", "nvidia-dra-driver-gpu", "--set", "gpuResourcesEnabledOverride=true", "--set",
                   "kubeletPlugin.nodeSelector.gpu-allocation=dra", timeout=180)
    selector = cluster.kubectl("get", "daemonset", "nvidia-dra-driver-gpu-kubelet-plugin", "-n",
                               "nvidia-dra-driver-gpu", "-o", "jsonpath={.spec.template.spec.nodeSelector}").stdout
    assert json.loads(selector) == {"gpu-allocation": "dra"}
    assert pods_on(cluster, "nvidia-dra-driver-gpu", "nvidia-dra-driver-gpu-component=kubelet-plugin") == {H100_NODE}
    wait_for(lambda: slice_nodes(cluster) == {H100_NODE}, what="slices of the H100 node only")
    gpus = cluster.kubectl("get", "node", A100_NODE, "-o", "jsonpath={.status.allocatable.nvidia\\.com/gpu}").stdout
    assert gpus == "4"      # the device plugin still counts the A100's GPUs


def test_a_gpucluster_beside_a_clusterpolicy_is_refused_by_both(cluster):
    wrong_name = cluster.kubectl("create", "-f", "-", check=False, input=json.dumps({
        "apiVersion": "nvidia.com/v1alpha1", "kind": "GPUCluster", "metadata": {"name": "dra"},
        "spec": {"draDriver": {}}}))
    assert wrong_name.returncode == 1
    assert "GPUCluster is a singleton, metadata.name must be 'gpu-cluster'" in wrong_name.stderr
    cluster.kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "nvidia.com/v1alpha1", "kind": "GPUCluster", "metadata": {"name": "gpu-cluster"},
        "spec": {"draDriver": {}}}))
    wait_for(lambda: conditions(cluster, "gpuclusters", "gpu-cluster").get("Error", ("",))[0] == "True",
             what="the GPUCluster's Error condition")
    assert conditions(cluster, "gpuclusters", "gpu-cluster")["Error"][1:] == (
        "PrerequisiteNotMet", 'A ClusterPolicy CR "cluster-policy" exists; a ClusterPolicy CR and GPUCluster CR may '
        "not exist at the same time")
    wait_for(lambda: conditions(cluster, "clusterpolicies", "cluster-policy").get("Error", ("",))[1]
             == "ReconcileFailed", what="the ClusterPolicy's conflict")
    assert conditions(cluster, "clusterpolicies", "cluster-policy")["Error"][2] == (
        'conflicting GPUCluster resource "gpu-cluster" detected; ClusterPolicy and GPUCluster cannot co-exist')
    row = cluster.kubectl("get", "gpuclusters", "--no-headers").stdout.split()
    assert row[:2] == ["gpu-cluster", "notReady"]
    assert cluster.kubectl("get", "daemonset", "-n", "gpu-operator", "nvidia-dra-driver-kubelet-plugin",
                           check=False).returncode == 1      # nothing deployed for it
    cluster.kubectl("delete", "gpucluster", "gpu-cluster", timeout=60)
    wait_for(lambda: conditions(cluster, "clusterpolicies", "cluster-policy").get("Ready", ("",))[0] == "True",
             what="the ClusterPolicy ready again")


def test_the_chart_refuses_a_gpucluster_beside_a_clusterpolicy_or_without_a_driver(cluster):
    both = cluster.gpulab("install", "gpu-operator", "--name", "other", "-n", "other", "--set",
                          "gpuCluster.deployCR=true", check=False)
    assert both.returncode == 1 and ("execution error at (gpu-operator/templates/validations.yaml:2:3): "
                                     "clusterPolicy.deployCR and gpuCluster.deployCR cannot both be true; only one CR "
                                     "can exist") in both.stderr
    driver = cluster.gpulab("install", "gpu-operator", "--name", "other", "-n", "other", "--set",
                            "gpuCluster.deployCR=true", "--set", "clusterPolicy.deployCR=false", check=False)
    assert driver.returncode == 1 and "the NVIDIADriver CRD must be enabled when deploying a GPUCluster CR, set " \
        "driver.nvidiaDriverCRD.enabled=true" in driver.stderr


def test_a_gpucluster_release_runs_the_dra_driver_on_every_gpu_node_and_no_device_plugin(cluster):
    cluster.gpulab("uninstall", "nvidia-dra-driver-gpu", timeout=120)
    cluster.gpulab("uninstall", "gpu-operator", timeout=180)
    cluster.gpulab("install", "gpu-operator", "--set", "clusterPolicy.deployCR=false", "--set",
                   "gpuCluster.deployCR=true", "--set", "driver.enabled=false", timeout=180)
    wait_for(lambda: cluster.kubectl("get", "gpuclusters", "--no-headers").stdout.split()[1:2] == ["ready"],
             what="the GPUCluster ready", timeout=120)
    assert conditions(cluster, "gpuclusters", "gpu-cluster")["Ready"] == (
        "True", "Reconciled", "All resources have been successfully reconciled")
    assert cluster.kubectl("get", "clusterpolicies", "-o", "name").stdout == ""
    assert pods_on(cluster, "gpu-operator", "app=nvidia-dra-driver-kubelet-plugin") == {H100_NODE, A100_NODE}
    assert pods_on(cluster, "gpu-operator", "app=nvidia-device-plugin-daemonset") == set()
    labels = json.loads(cluster.kubectl("get", "node", H100_NODE, "-o", "jsonpath={.metadata.labels}").stdout)
    assert labels["nvidia.com/gpu.deploy.dra-driver"] == "true"
    assert "nvidia.com/gpu.deploy.device-plugin" not in labels       # swept, though a user had set it
    wait_for(lambda: slice_nodes(cluster) == {H100_NODE, A100_NODE}, what="slices of both GPU nodes")
    classes = json.loads(cluster.kubectl("get", "deviceclasses", "-o", "json").stdout)["items"]
    gpu = next(c for c in classes if c["metadata"]["name"] == "gpu.nvidia.com")
    assert gpu["metadata"]["ownerReferences"][0]["kind"] == "GPUCluster"
    assert "extendedResourceName" not in gpu["spec"]
    namespace = cluster.kubectl("get", "namespace", "gpu-operator", "-o",
                                "jsonpath={.metadata.labels.resource\\.kubernetes\\.io/admin-access}").stdout
    assert namespace == "true"
    cluster.gpulab("uninstall", "gpu-operator", timeout=180)     # the pre-delete hook deletes the GPUCluster
    assert cluster.kubectl("get", "gpuclusters", "-o", "name").stdout == ""
    wait_for(lambda: slice_nodes(cluster) == set(), what="the slices gone with the driver")
