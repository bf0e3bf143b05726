"""The GPU Operator's operands as data, and the node labels that place them.

What the operator (NVIDIA/gpu-operator) creates for a ``ClusterPolicy``:

* one DaemonSet per enabled component, from the manifests under ``assets/state-*``
  (names, ``app`` labels, container names, service accounts, the
  ``nvidia.com/gpu.deploy.<operand>=true`` node selectors, the
  ``nvidia.com/gpu`` Exists NoSchedule toleration and ``system-node-critical``
  priority from ``spec.daemonsets``), with images built like
  ``api/nvidia/v1`` ``ImagePath``: ``<repository>/<image>:<version>`` (``@`` for a
  ``sha256:`` digest) and, for the driver, ``-<os tag>`` from the node's NFD
  ``system-os_release`` labels (``580.105.08-ubuntu22.04``).
* the per-node labels of ``controllers/state_manager.go`` ``labelGPUNodes``:
  ``nvidia.com/gpu.present=true`` where NFD found an NVIDIA PCI device, the
  workload's ``nvidia.com/gpu.deploy.*`` labels (existing values honoured, so a
  learner's ``...deploy.driver=false`` sticks), ``nvidia.com/gpu.deploy.operands=false``
  removing them all, ``nvidia.com/gpu.deploy.mig-manager=true`` on MIG-capable
  nodes, and ``nvidia.com/mig.config=all-disabled`` where MIG manager runs and
  no config was chosen.

Pure data and functions: the reconcilers that apply these to a cluster live elsewhere.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
OPERANDS_LABEL = "nvidia.com/gpu.deploy.operands"
MIG_MANAGER_LABEL = "nvidia.com/gpu.deploy.mig-manager"
MIG_CAPABLE_LABEL = "nvidia.com/mig.capable"
MPS_CAPABLE_LABEL = "nvidia.com/mps.capable"
MPS_CONTROL_DAEMON = "nvidia-device-plugin-mps-control-daemon"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
MIG_CONFIG_DISABLED = "all-disabled"
WORKLOAD_CONFIG_LABEL = "nvidia.com/gpu.workload.config"
VGPU_HOST_DRIVER_LABEL = "nvidia.com/vgpu.host-driver-version"
PRODUCT_LABEL = "nvidia.com/gpu.product"
KATA_DEVICE_PLUGIN_LABEL = "nvidia.com/gpu.deploy.kata-sandbox-device-plugin"
KUBEVIRT_DEVICE_PLUGIN_LABEL = "nvidia.com/gpu.deploy.sandbox-device-plugin"
NFD_OS_ID_LABEL = "feature.node.kubernetes.io/system-os_release.ID"
NFD_OS_VERSION_LABEL = "feature.node.kubernetes.io/system-os_release.VERSION_ID"

# state_manager.go gpuNodeLabels: NFD's PCI labels for an NVIDIA (0x10de) device.
GPU_NODE_LABELS = {
    "feature.node.kubernetes.io/pci-10de.present": "true",
    "feature.node.kubernetes.io/pci-0302_10de.present": "true",
    "feature.node.kubernetes.io/pci-0300_10de.present": "true",
}
# state_manager.go gpuStateLabels.
GPU_STATE_LABELS: dict[str, dict[str, str]] = {
    "container": {
        "nvidia.com/gpu.deploy.driver": "true",
        "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
        "nvidia.com/gpu.deploy.container-toolkit": "true",
        "nvidia.com/gpu.deploy.device-plugin": "true",
        "nvidia.com/gpu.deploy.dcgm": "true",
        "nvidia.com/gpu.deploy.dcgm-exporter": "true",
        "nvidia.com/gpu.deploy.node-status-exporter": "true",
        "nvidia.com/gpu.deploy.operator-validator": "true",
    },
    "vm-passthrough": {
        "nvidia.com/gpu.deploy.sandbox-device-plugin": "true",
        "nvidia.com/gpu.deploy.sandbox-validator": "true",
        "nvidia.com/gpu.deploy.vfio-manager": "true",
        "nvidia.com/gpu.deploy.kata-manager": "true",
        "nvidia.com/gpu.deploy.cc-manager": "true",
    },
    "vm-vgpu": {
        "nvidia.com/gpu.deploy.sandbox-device-plugin": "true",
        "nvidia.com/gpu.deploy.vgpu-manager": "true",
        "nvidia.com/gpu.deploy.vgpu-device-manager": "true",
        "nvidia.com/gpu.deploy.sandbox-validator": "true",
        "nvidia.com/gpu.deploy.cc-manager": "true",
    },
}
DEFAULT_WORKLOAD = "container"
_TOOLKIT_READY_WAIT = "toolkit-validation"


@dataclass(frozen=True)
class Operand:
    """One operand DaemonSet of ``assets/state-*/``."""

    name: str                        # DaemonSet name, also its ``app`` label
    component: str                   # ClusterPolicy spec block that enables and images it
    deploy_label: str                # node selector key (value "true")
    containers: tuple[str, ...]
    init_containers: tuple[str, ...]
    service_account: str
    enabled_when_unset: bool = True  # the spec type's IsEnabled() when ``enabled`` is absent
    always: bool = False             # deployed whatever ``enabled`` says (the validator)
    extra_labels: dict[str, str] = field(default_factory=dict)
    extra_node_selector: dict[str, str] = field(default_factory=dict)
    host_pid: bool = False


OPERANDS: tuple[Operand, ...] = (
    Operand("nvidia-driver-daemonset", "driver", "nvidia.com/gpu.deploy.driver",
            ("nvidia-driver-ctr",), ("k8s-driver-manager",), "nvidia-driver"),
    Operand("nvidia-container-toolkit-daemonset", "toolkit", "nvidia.com/gpu.deploy.container-toolkit",
            ("nvidia-container-toolkit-ctr",), ("driver-validation",), "nvidia-container-toolkit"),
    Operand("nvidia-operator-validator", "validator", "nvidia.com/gpu.deploy.operator-validator",
            ("nvidia-operator-validator",),
            ("driver-validation", "toolkit-validation", "cuda-validation", "plugin-validation"),
            "nvidia-operator-validator", always=True,
            extra_labels={"app.kubernetes.io/part-of": "gpu-operator"}),
    Operand("nvidia-device-plugin-daemonset", "devicePlugin", "nvidia.com/gpu.deploy.device-plugin",
            ("nvidia-device-plugin", "config-manager"), (_TOOLKIT_READY_WAIT, "config-manager-init"),
            "nvidia-device-plugin"),
    # assets/state-mps-control-daemon/0400_daemonset.yaml: started with the device plugin (isStateEnabled), placed
    # only where GFD found the node's config to select MPS.
    Operand(MPS_CONTROL_DAEMON, "devicePlugin", "nvidia.com/gpu.deploy.device-plugin",
            ("mps-control-daemon-ctr", "config-manager"),
            (_TOOLKIT_READY_WAIT, "mps-control-daemon-mounts", "config-manager-init"),
            "nvidia-device-plugin", extra_node_selector={MPS_CAPABLE_LABEL: "true"}, host_pid=True),
    Operand("nvidia-dcgm", "dcgm", "nvidia.com/gpu.deploy.dcgm",
            ("nvidia-dcgm-ctr",), (_TOOLKIT_READY_WAIT,), "nvidia-dcgm", enabled_when_unset=False),
    Operand("nvidia-dcgm-exporter", "dcgmExporter", "nvidia.com/gpu.deploy.dcgm-exporter",
            ("nvidia-dcgm-exporter",), (_TOOLKIT_READY_WAIT,), "nvidia-dcgm-exporter"),
    Operand("gpu-feature-discovery", "gfd", "nvidia.com/gpu.deploy.gpu-feature-discovery",
            ("gpu-feature-discovery", "config-manager"), (_TOOLKIT_READY_WAIT, "config-manager-init"),
            "nvidia-gpu-feature-discovery", extra_labels={"app.kubernetes.io/part-of": "nvidia-gpu"}),
    Operand("nvidia-mig-manager", "migManager", MIG_MANAGER_LABEL,
            ("nvidia-mig-manager",), (_TOOLKIT_READY_WAIT,), "nvidia-mig-manager"),
    Operand("nvidia-node-status-exporter", "nodeStatusExporter", "nvidia.com/gpu.deploy.node-status-exporter",
            ("nvidia-node-status-exporter",), (), "nvidia-node-status-exporter", enabled_when_unset=False),
)
_CONFIG_MANAGER = ("config-manager", "config-manager-init")  # only when spec.devicePlugin.config.name is set


def operand(name: str) -> Operand:
    """The operand whose DaemonSet is called ``name``."""
    for candidate in OPERANDS:
        if candidate.name == name:
            return candidate
    raise KeyError(f"unknown operand {name!r}; known: {', '.join(o.name for o in OPERANDS)}")


def image_path(repository: str, image: str, version: str) -> str:
    """``api/nvidia/v1`` ``ImagePath``: ``repo/image:tag``, or ``repo/image@sha256:...`` for a digest."""
    separator = "@" if version.startswith("sha256:") else ":"
    return f"{repository}/{image}{separator}{version}" if repository else f"{image}{separator}{version}"


def os_tag(node_labels: dict[str, str]) -> str:
    """``getGPUNodeOSTag``: NFD's os_release ID + VERSION_ID (major only for Rocky and RHEL >= 10)."""
    os_id = node_labels[NFD_OS_ID_LABEL]
    os_version = node_labels[NFD_OS_VERSION_LABEL]
    major = os_version.split(".")[0]
    if os_id == "rocky" or (os_id == "rhel" and int(major) >= 10):
        os_version = major
    return f"{os_id}{os_version}"


def is_enabled(spec: dict[str, Any], op: Operand) -> bool:
    """Whether the operator deploys ``op`` for this ClusterPolicy spec."""
    if op.always:
        return True
    enabled = spec.get(op.component, {}).get("enabled")
    return op.enabled_when_unset if enabled is None else bool(enabled)


def operand_image(spec: dict[str, Any], op: Operand, *, node_os_tag: str = "ubuntu22.04") -> str:
    """The main container's image; the driver's tag gets the node OS suffix."""
    block = spec.get(op.component, {})
    path = image_path(block.get("repository", ""), block["image"], str(block["version"]))
    return f"{path}-{node_os_tag}" if op.component == "driver" else path


def _uses_config_manager(spec: dict[str, Any]) -> bool:
    return bool((spec.get("devicePlugin", {}).get("config") or {}).get("name"))


def operand_daemonset(spec: dict[str, Any], op: Operand, *, namespace: str = "gpu-operator",
                      node_os_tag: str = "ubuntu22.04") -> dict[str, Any]:
    """The DaemonSet manifest (apps/v1) the operator creates for ``op``."""
    daemonsets = spec.get("daemonsets", {})
    block = spec.get(op.component, {})
    validator = spec.get("validator", {})
    validator_image = image_path(validator.get("repository", ""), validator.get("image", "gpu-operator-validator"),
                                 str(validator.get("version", "")))
    main_image = operand_image(spec, op, node_os_tag=node_os_tag)
    skip = () if _uses_config_manager(spec) else _CONFIG_MANAGER
    pull_policy = block.get("imagePullPolicy", "IfNotPresent")
    containers = [{"name": name, "image": main_image, "imagePullPolicy": pull_policy}
                  for name in op.containers if name not in skip]
    init_containers = [{"name": name, "image": main_image if name.startswith(("config-manager", "k8s-driver", "mps-"))
                        else validator_image, "imagePullPolicy": pull_policy}
                       for name in op.init_containers if name not in skip]
    if op.component == "driver":
        manager = block.get("manager", {})
        init_containers[0]["image"] = image_path(manager.get("repository", ""), manager.get("image", ""),
                                                 str(manager.get("version", "")))
    if op.component == "validator":
        containers[0]["image"] = validator_image
    selector = {"app": op.name, **op.extra_labels}
    pod_labels = {**selector, **daemonsets.get("labels", {})}
    update_strategy: dict[str, Any]
    if op.component == "driver":
        update_strategy = {"type": "OnDelete"}
    elif daemonsets.get("updateStrategy", "RollingUpdate") == "OnDelete":
        update_strategy = {"type": "OnDelete"}
    else:
        max_unavailable = (daemonsets.get("rollingUpdate") or {}).get("maxUnavailable", "1")
        if isinstance(max_unavailable, str) and max_unavailable.isdigit():
            max_unavailable = int(max_unavailable)   # the operator's intstr.Parse: "1" is the integer 1
        update_strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": max_unavailable}}
    pod_spec: dict[str, Any] = {
        "nodeSelector": {op.deploy_label: "true", **op.extra_node_selector},
        "tolerations": list(daemonsets.get("tolerations", [])),
        "serviceAccountName": op.service_account,
        "initContainers": init_containers,
        "containers": containers,
    }
    if daemonsets.get("priorityClassName"):
        pod_spec["priorityClassName"] = daemonsets["priorityClassName"]
    if op.host_pid:
        pod_spec["hostPID"] = True
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": op.name, "namespace": namespace, "labels": dict(selector)},
        "spec": {
            "selector": {"matchLabels": selector},
            "updateStrategy": update_strategy,
            "template": {"metadata": {"labels": pod_labels}, "spec": pod_spec},
        },
    }


def operand_daemonsets(spec: dict[str, Any], *, namespace: str = "gpu-operator",
                       node_os_tag: str = "ubuntu22.04") -> list[dict[str, Any]]:
    """Every DaemonSet the operator deploys for this ClusterPolicy spec, in the operator's state order."""
    return [operand_daemonset(spec, op, namespace=namespace, node_os_tag=node_os_tag)
            for op in OPERANDS if is_enabled(spec, op)]


# --- node labels (controllers/state_manager.go) --------------------------------------------

def has_gpu(labels: dict[str, str]) -> bool:
    """``hasGPULabels``: NFD saw an NVIDIA PCI display/3D controller."""
    return any(labels.get(key) == value for key, value in GPU_NODE_LABELS.items())


def has_mig_capable_gpu(labels: dict[str, str]) -> bool:
    """``hasMIGCapableGPU``: GFD's mig.capable label, else an H100/A100/A30 product name; never on vGPU hosts."""
    if labels.get(VGPU_HOST_DRIVER_LABEL):
        return False
    if MIG_CAPABLE_LABEL in labels:
        return labels[MIG_CAPABLE_LABEL] == "true"
    product = labels.get(PRODUCT_LABEL, "").lower()
    return any(name in product for name in ("h100", "a100", "a30"))


def workload_config(labels: dict[str, str], spec: dict[str, Any]) -> str:
    """``getWorkloadConfig``: ``container`` unless sandbox workloads are enabled."""
    sandbox = spec.get("sandboxWorkloads", {})
    if not sandbox.get("enabled"):
        return DEFAULT_WORKLOAD
    if labels.get(WORKLOAD_CONFIG_LABEL) in GPU_STATE_LABELS:
        return labels[WORKLOAD_CONFIG_LABEL]
    default = sandbox.get("defaultWorkload", DEFAULT_WORKLOAD)
    return default if default in GPU_STATE_LABELS else DEFAULT_WORKLOAD


def _effective_state_labels(config: str, mode: str | None) -> dict[str, str]:
    labels = dict(GPU_STATE_LABELS[config])
    if config == "vm-passthrough" and mode == "kata":
        labels.pop(KUBEVIRT_DEVICE_PLUGIN_LABEL, None)
        labels[KATA_DEVICE_PLUGIN_LABEL] = "true"
    return labels


def _all_state_keys() -> set[str]:
    keys = {key for labels in GPU_STATE_LABELS.values() for key in labels}
    return keys | {KATA_DEVICE_PLUGIN_LABEL}


def _remove_all_state_labels(labels: dict[str, str]) -> None:
    for key in _all_state_keys() | {MIG_MANAGER_LABEL}:
        labels.pop(key, None)


def mark_gpu_present(labels: dict[str, str]) -> str | None:
    """Set ``nvidia.com/gpu.present`` in place from the node's PCI labels, as both of the operator's labelling
    passes (ClusterPolicy and GPUCluster) do; returns the value it changed the label to, else None."""
    present = labels.get(GPU_PRESENT_LABEL) == "true"
    if not present and has_gpu(labels):
        labels[GPU_PRESENT_LABEL] = "true"
    elif present and not has_gpu(labels):
        labels[GPU_PRESENT_LABEL] = "false"
    else:
        return None
    return labels[GPU_PRESENT_LABEL]


def deploy_labels(node_labels: dict[str, str], spec: dict[str, Any]) -> dict[str, str]:
    """The node's labels after the operator's ``labelGPUNodes`` pass (a new dict; removed labels are absent)."""
    labels = dict(node_labels)
    if mark_gpu_present(labels) == "false":
        _remove_all_state_labels(labels)
    if labels.get(GPU_PRESENT_LABEL) != "true":
        return labels
    config = workload_config(labels, spec)
    if labels.get(OPERANDS_LABEL) == "false":
        _remove_all_state_labels(labels)
    else:
        effective = _effective_state_labels(config, spec.get("sandboxWorkloads", {}).get("mode"))
        for key in _all_state_keys() & set(labels):
            if key not in effective:
                del labels[key]
        if config != DEFAULT_WORKLOAD:
            labels.pop(MIG_MANAGER_LABEL, None)
        for key, value in effective.items():
            labels.setdefault(key, value)
        if config == DEFAULT_WORKLOAD and has_mig_capable_gpu(labels) and MIG_MANAGER_LABEL not in labels:
            labels[MIG_MANAGER_LABEL] = "true"
    mig_manager = spec.get("migManager", {})
    if (mig_manager.get("enabled", True) and has_mig_capable_gpu(labels) and not labels.get(MIG_CONFIG_LABEL)
            and (mig_manager.get("config") or {}).get("default") == MIG_CONFIG_DISABLED):
        labels[MIG_CONFIG_LABEL] = MIG_CONFIG_DISABLED
    return labels
