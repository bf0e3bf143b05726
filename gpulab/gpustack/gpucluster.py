"""The GPU Operator's GPUCluster controller (``nvidia.com/v1alpha1``, Technology Preview from v26.7.0).

A GPUCluster asks the operator for the DRA-based stack instead of ClusterPolicy's device-plugin stack: the
operator deploys NVIDIA's DRA driver (its DeviceClasses, the ``nvidia-dra-driver-kubelet-plugin`` DaemonSet and,
with compute domains, the ``nvidia-dra-driver-controller`` Deployment) and labels every GPU node for it. It
manages neither the NVIDIA driver nor the device plugin: the driver is the host's (or an NVIDIADriver's).

What NVIDIA/gpu-operator v26.7.0 does, and this module computes (the reconciler writes it through the API):

* ``controllers/gpucluster_controller.go``: a finalizer ``gpucluster.nvidia.com/dra-resourceclaim``; a
  ClusterPolicy in the cluster is an unmet prerequisite (state ``notReady``, condition ``Error`` with reason
  ``PrerequisiteNotMet``), as the two stacks may not coexist; the operator namespace gets the label
  ``resource.kubernetes.io/admin-access=true``; then the states, and ``ready`` once their workloads are;
* ``controllers/nodelabeling_controller.go`` with ``state_manager.go``: on every GPU node the device-plugin
  stack's ``nvidia.com/gpu.deploy.*`` labels are swept away and the GPUCluster stack's are set, so the device
  plugin and the DRA driver never serve one node;
* ``manifests/state-dra-driver``: the DeviceClasses and workloads, the DaemonSet scheduled by the
  ``nvidia.com/gpu.deploy.dra-driver=true`` label alone.

Not emulated: the DCGM, DCGM Exporter and DRA validator states of a GPUCluster, the NVIDIADriver path, RBAC and
the service accounts, the plugin's driver-validation init container (its containers run their binary directly,
where upstream's wrap it in ``bash -c``).
"""
from __future__ import annotations

from typing import Any

from .. import kubeclient
from . import dra
from .operands import (GPU_PRESENT_LABEL, KATA_DEVICE_PLUGIN_LABEL, MIG_MANAGER_LABEL,
                       OPERANDS_LABEL, GPU_STATE_LABELS, mark_gpu_present)
from .operator import PolicyStatus, daemonset_ready

GPUCLUSTERS = kubeclient.Resource("nvidia.com/v1alpha1", "gpuclusters", namespaced=False)
NAME = "gpu-cluster"            # the CRD's CEL rule pins the singleton's name
FINALIZER = "gpucluster.nvidia.com/dra-resourceclaim"
ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"
KUBELET_PLUGIN = "nvidia-dra-driver-kubelet-plugin"
CONTROLLER = "nvidia-dra-driver-controller"
DRA_DRIVER_LABEL = "nvidia.com/gpu.deploy.dra-driver"
VGPU_MANAGER_LABEL = "nvidia.com/gpu.deploy.vgpu-manager"
KUBEVIRT_DEVICE_PLUGIN_LABEL = "nvidia.com/gpu.deploy.sandbox-device-plugin"
# state_manager.go gpuClusterStateLabels: what a GPU node carries under a GPUCluster.
STATE_LABELS = {"nvidia.com/gpu.deploy.driver": "true", DRA_DRIVER_LABEL: "true",
                "nvidia.com/gpu.deploy.dra-validator": "true", "nvidia.com/gpu.deploy.dcgm-dra": "true",
                "nvidia.com/gpu.deploy.dcgm-exporter-dra": "true"}
IMAGE_DEFAULTS = {"repository": "nvcr.io/nvidia", "image": "dra-driver-nvidia-gpu", "version": "v0.5.0"}


def _device_plugin_stack_keys() -> set[str]:
    """``devicePluginOnlyStateLabelKeys``: ClusterPolicy's deploy labels minus those both stacks share."""
    keys = {key for labels in GPU_STATE_LABELS.values() for key in labels}
    keys |= {KUBEVIRT_DEVICE_PLUGIN_LABEL, KATA_DEVICE_PLUGIN_LABEL, MIG_MANAGER_LABEL}
    return keys - set(STATE_LABELS) - {VGPU_MANAGER_LABEL}


def state_labels(node_labels: dict[str, str]) -> dict[str, str]:
    """The node's labels after the node-labeling pass under a GPUCluster (a new dict)."""
    labels = dict(node_labels)
    mark_gpu_present(labels)
    if labels.get(GPU_PRESENT_LABEL) != "true" or labels.get(OPERANDS_LABEL) == "false":
        for key in _device_plugin_stack_keys() | set(STATE_LABELS):
            labels.pop(key, None)
        return labels
    for key in _device_plugin_stack_keys():
        labels.pop(key, None)
    for key, value in STATE_LABELS.items():
        if not labels.get(key):
            labels[key] = value
    return labels


def owner_reference(cluster: dict) -> dict:
    meta = cluster["metadata"]
    return {"apiVersion": GPUCLUSTERS.group_version, "kind": "GPUCluster", "name": meta["name"], "uid": meta["uid"],
            "controller": True, "blockOwnerDeletion": True}


def _image(spec: dict) -> str:
    parts = {key: spec.get(key) or default for key, default in IMAGE_DEFAULTS.items()}
    return f"{parts['repository']}/{parts['image']}:{parts['version']}"


def compute_domains_enabled(spec: dict) -> bool:
    """``IsComputeDomainsEnabled``: the CRD defaults ``computeDomains.enabled`` to true."""
    return bool(((spec.get("computeDomains") or {}).get("enabled", True)))


def desired_objects(cluster: dict, namespace: str) -> list[tuple[kubeclient.Resource, dict]]:
    """``manifests/state-dra-driver``: the DeviceClasses, the kubelet plugin DaemonSet, the controller."""
    spec = ((cluster.get("spec") or {}).get("draDriver")) or {}
    owner = [owner_reference(cluster)]
    domains = compute_domains_enabled(spec)
    classes = dra.device_classes(gpus=True, compute_domains=domains, extended_resource_name=False)
    out: list[tuple[kubeclient.Resource, dict]] = [
        (kubeclient.Resource("resource.k8s.io/v1", "deviceclasses", namespaced=False),
         {**c, "metadata": {**c["metadata"], "ownerReferences": owner}}) for c in classes]
    gates = ",".join(f"{k}={str(v).lower()}" for k, v in sorted((spec.get("featureGates") or {}).items()))
    image = _image(spec)
    daemonsets = (cluster.get("spec") or {}).get("daemonsets") or {}

    def container(name: str, command: str, block: dict) -> dict:
        env = [{"name": "FEATURE_GATES", "value": gates}, *((block.get("kubeletPlugin") or {}).get("env") or [])]
        return {"name": name, "image": image, "command": [command], "env": env,
                "securityContext": {"privileged": True}}

    def labels(app: str) -> dict[str, str]:
        return {"app.kubernetes.io/name": "nvidia-dra-driver", "app.kubernetes.io/component": app, "app": app}

    containers = [container("gpus", "gpu-kubelet-plugin", spec.get("gpus") or {})]
    if domains:
        containers.append(container("compute-domains", "compute-domain-kubelet-plugin",
                                    spec.get("computeDomains") or {}))
    pod_spec: dict[str, Any] = {
        "priorityClassName": daemonsets.get("priorityClassName") or "system-node-critical",
        "nodeSelector": {DRA_DRIVER_LABEL: "true"},
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]} for key, value in (
                ("feature.node.kubernetes.io/pci-10de.present", "true"),
                ("feature.node.kubernetes.io/cpu-model.vendor_id", "NVIDIA"), (GPU_PRESENT_LABEL, "true"))]}}},
        "containers": containers}
    if daemonsets.get("tolerations"):
        pod_spec["tolerations"] = list(daemonsets["tolerations"])
    out.append((kubeclient.DAEMONSETS, {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": KUBELET_PLUGIN, "namespace": namespace, "labels": labels(KUBELET_PLUGIN),
                     "ownerReferences": owner},
        "spec": {"selector": {"matchLabels": {"app": KUBELET_PLUGIN}},
                 "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "100%"}},
                 "template": {"metadata": {"labels": labels(KUBELET_PLUGIN)}, "spec": pod_spec}}}))
    if domains:
        out.append((kubeclient.DEPLOYMENTS, {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": CONTROLLER, "namespace": namespace, "labels": labels(CONTROLLER),
                         "ownerReferences": owner},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": CONTROLLER}},
                     "template": {"metadata": {"labels": labels(CONTROLLER)}, "spec": {
                         "priorityClassName": "system-node-critical",
                         "tolerations": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists",
                                          "effect": "NoSchedule"}],
                         "containers": [{"name": "compute-domain", "image": image,
                                         "command": ["compute-domain-controller"]}]}}}}))
    return out


def prerequisite(policies: list[dict]) -> str:
    """``validatePrerequisites``: why the GPUCluster cannot proceed ('' when it can)."""
    if not policies:
        return ""
    oldest = min(policies, key=lambda p: (p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"]))
    return (f'A ClusterPolicy CR "{oldest["metadata"]["name"]}" exists; a ClusterPolicy CR and GPUCluster CR may not '
            "exist at the same time")


def conflict(clusters: list[dict]) -> PolicyStatus:
    """What the ClusterPolicy controller reports while a GPUCluster exists (it deploys nothing meanwhile)."""
    return PolicyStatus("notReady", "ReconcileFailed",
                        f'conflicting GPUCluster resource "{clusters[0]["metadata"]["name"]}" detected; '
                        "ClusterPolicy and GPUCluster cannot co-exist")


def cluster_status(cluster: dict, workloads: dict[str, dict | None], policies: list[dict]) -> PolicyStatus:
    """The GPUCluster's verdict: a prerequisite, its workloads' readiness, or ``Reconciled``."""
    unmet = prerequisite(policies)
    if unmet:
        return PolicyStatus("notReady", "PrerequisiteNotMet", unmet)
    for name, obj in workloads.items():
        ready = daemonset_ready(obj) if name == KUBELET_PLUGIN else _deployment_ready(obj)
        if not ready:
            return PolicyStatus("notReady", "OperandNotReady", "Waiting for operand pods to be ready")
    return PolicyStatus("ready", "Reconciled", "All resources have been successfully reconciled")


def _deployment_ready(obj: dict | None) -> bool:
    if obj is None:
        return False
    status = obj.get("status") or {}
    return int(status.get("availableReplicas") or 0) >= int((obj.get("spec") or {}).get("replicas", 1))
