"""Operand DaemonSets and the operator's node labels (docs/fidelity.md#gpustack-core)."""
import pytest

from gpulab.gpustack.chart import cluster_policy, parse_set, values_for
from gpulab.gpustack.operands import deploy_labels, image_path, operand_daemonsets, os_tag

SPEC = cluster_policy(values_for())["spec"]
NFD_GPU = {"feature.node.kubernetes.io/pci-10de.present": "true"}
CONTAINER_STATE = {
    "nvidia.com/gpu.deploy.driver": "true",
    "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
    "nvidia.com/gpu.deploy.container-toolkit": "true",
    "nvidia.com/gpu.deploy.device-plugin": "true",
    "nvidia.com/gpu.deploy.dcgm": "true",
    "nvidia.com/gpu.deploy.dcgm-exporter": "true",
    "nvidia.com/gpu.deploy.node-status-exporter": "true",
    "nvidia.com/gpu.deploy.operator-validator": "true",
}


def test_default_operands_and_their_placement():
    daemonsets = {ds["metadata"]["name"]: ds for ds in operand_daemonsets(SPEC)}
    assert list(daemonsets) == ["nvidia-driver-daemonset", "nvidia-container-toolkit-daemonset",
                                "nvidia-operator-validator", "nvidia-device-plugin-daemonset",
                                "nvidia-device-plugin-mps-control-daemon",
                                "nvidia-dcgm-exporter", "gpu-feature-discovery", "nvidia-mig-manager"]
    mps = daemonsets["nvidia-device-plugin-mps-control-daemon"]["spec"]["template"]["spec"]
    assert mps["nodeSelector"] == {"nvidia.com/gpu.deploy.device-plugin": "true", "nvidia.com/mps.capable": "true"}
    assert mps["hostPID"] is True and mps["serviceAccountName"] == "nvidia-device-plugin"
    assert [c["name"] for c in mps["initContainers"]] == ["toolkit-validation", "mps-control-daemon-mounts"]
    assert [(c["name"], c["image"]) for c in mps["containers"]] == [
        ("mps-control-daemon-ctr", "nvcr.io/nvidia/k8s-device-plugin:v0.20.0")]
    plugin = daemonsets["nvidia-device-plugin-daemonset"]
    pod = plugin["spec"]["template"]["spec"]
    assert plugin["metadata"]["labels"] == {"app": "nvidia-device-plugin-daemonset"}
    assert pod["nodeSelector"] == {"nvidia.com/gpu.deploy.device-plugin": "true"}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert pod["priorityClassName"] == "system-node-critical"
    assert [c["name"] for c in pod["containers"]] == ["nvidia-device-plugin"]
    assert pod["containers"][0]["image"] == "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"
    driver = daemonsets["nvidia-driver-daemonset"]["spec"]["template"]["spec"]
    assert driver["containers"][0]["image"] == "nvcr.io/nvidia/driver:595.91.07-ubuntu22.04"
    assert daemonsets["nvidia-mig-manager"]["spec"]["template"]["spec"]["containers"][0]["image"] == (
        "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.15.0")
    validator = daemonsets["nvidia-operator-validator"]
    assert validator["metadata"]["labels"] == {"app": "nvidia-operator-validator",
                                               "app.kubernetes.io/part-of": "gpu-operator"}
    assert [c["name"] for c in validator["spec"]["template"]["spec"]["initContainers"]] == [
        "driver-validation", "toolkit-validation", "cuda-validation", "plugin-validation"]


def test_disabled_components_have_no_daemonset_and_config_adds_config_manager():
    spec = cluster_policy(values_for("v26.3.3", parse_set([
        "driver.enabled=false", "migManager.enabled=false", "dcgm.enabled=true",
        "devicePlugin.config.name=time-slicing-config"])))["spec"]
    daemonsets = {ds["metadata"]["name"]: ds for ds in operand_daemonsets(spec)}
    assert "nvidia-driver-daemonset" not in daemonsets and "nvidia-mig-manager" not in daemonsets
    assert "nvidia-dcgm" in daemonsets
    plugin = daemonsets["nvidia-device-plugin-daemonset"]["spec"]["template"]["spec"]
    assert [c["name"] for c in plugin["containers"]] == ["nvidia-device-plugin", "config-manager"]
    assert plugin["containers"][0]["image"] == "nvcr.io/nvidia/k8s-device-plugin:v0.19.3"


def test_gpu_node_gets_present_and_container_state_labels():
    labels = deploy_labels({**NFD_GPU, "nvidia.com/gpu.product": "NVIDIA-L4"}, SPEC)
    assert labels == {**NFD_GPU, "nvidia.com/gpu.product": "NVIDIA-L4", "nvidia.com/gpu.present": "true",
                      **CONTAINER_STATE}


def test_mig_capable_node_gets_mig_manager_and_all_disabled():
    labels = deploy_labels({**NFD_GPU, "nvidia.com/mig.capable": "true"}, SPEC)
    assert labels["nvidia.com/gpu.deploy.mig-manager"] == "true"
    assert labels["nvidia.com/mig.config"] == "all-disabled"
    chosen = deploy_labels({**NFD_GPU, "nvidia.com/mig.capable": "true", "nvidia.com/mig.config": "all-1g.10gb"}, SPEC)
    assert chosen["nvidia.com/mig.config"] == "all-1g.10gb"


def test_product_name_stands_in_for_mig_capable():
    labels = deploy_labels({**NFD_GPU, "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}, SPEC)
    assert labels["nvidia.com/gpu.deploy.mig-manager"] == "true"


def test_existing_deploy_values_are_honoured():
    labels = deploy_labels({**NFD_GPU, "nvidia.com/gpu.deploy.driver": "false"}, SPEC)
    assert labels["nvidia.com/gpu.deploy.driver"] == "false"


def test_operands_false_removes_every_state_label():
    before = {**NFD_GPU, "nvidia.com/gpu.present": "true", **CONTAINER_STATE,
              "nvidia.com/gpu.deploy.mig-manager": "true", "nvidia.com/gpu.deploy.operands": "false"}
    assert deploy_labels(before, SPEC) == {**NFD_GPU, "nvidia.com/gpu.present": "true",
                                           "nvidia.com/gpu.deploy.operands": "false"}


def test_node_that_lost_its_gpu():
    before = {"nvidia.com/gpu.present": "true", **CONTAINER_STATE}
    assert deploy_labels(before, SPEC) == {"nvidia.com/gpu.present": "false"}


def test_cpu_node_is_left_alone():
    assert deploy_labels({"kubernetes.io/hostname": "cpu-1"}, SPEC) == {"kubernetes.io/hostname": "cpu-1"}


def test_sandbox_workloads_use_the_node_workload_label():
    spec = cluster_policy(values_for(None, parse_set(["sandboxWorkloads.enabled=true"])))["spec"]
    labels = deploy_labels({**NFD_GPU, "nvidia.com/gpu.workload.config": "vm-passthrough",
                            "nvidia.com/gpu.deploy.driver": "true"}, spec)
    assert "nvidia.com/gpu.deploy.driver" not in labels
    assert labels["nvidia.com/gpu.deploy.vfio-manager"] == "true"


@pytest.mark.parametrize("labels, tag", [
    ({"feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
      "feature.node.kubernetes.io/system-os_release.VERSION_ID": "22.04"}, "ubuntu22.04"),
    ({"feature.node.kubernetes.io/system-os_release.ID": "rhel",
      "feature.node.kubernetes.io/system-os_release.VERSION_ID": "10.0"}, "rhel10"),
])
def test_driver_os_tag(labels, tag):
    assert os_tag(labels) == tag


def test_image_path_digest():
    assert image_path("nvcr.io/nvidia", "driver", "sha256:abc") == "nvcr.io/nvidia/driver@sha256:abc"
