"""The GPU Operator's ClusterPolicy controller: operand objects, their pod specs and the ClusterPolicy status.

NVIDIA/gpu-operator ``controllers/state_manager.go`` walks a fixed list of
states (``pre-requisites``, ``state-operator-metrics``, ``state-driver``, ...),
creating each state's objects from ``assets/state-*`` and reporting ``ready``
or ``notReady``; ``clusterpolicy_controller.go`` then writes
``status.state`` (``ready``/``notReady``), ``status.namespace`` and the
``Ready``/``Error`` conditions (``internal/conditions``). The operand
DaemonSets themselves come from :mod:`gpulab.gpustack.operands`; this module
adds what ``controllers/object_controls.go`` transforms into them (owner
reference, commands, the environment the operands read, the config volumes)
and the other objects of each state (service accounts, the MIG ConfigMap, the
dcgm-exporter Service).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from .. import kubeclient
from . import standins
from .deviceplugin import CONFIG_LABEL, FALLBACK_STRATEGIES
from .mig import default_config_map
from .mpsdaemon import HOST_ROOT
from .operands import (MPS_CONTROL_DAEMON, NFD_OS_ID_LABEL, NFD_OS_VERSION_LABEL, OPERANDS, is_enabled,
                       operand_daemonset, os_tag)

# The operator's writes are recorded under this field manager; every Kube the GPU stack writes with names it.
FIELD_MANAGER = "gpu-operator"
# controllers/object_controls.go: a custom metrics file (dcgmExporter.config.name) is this key of the ConfigMap,
# mounted here, and named to the exporter by DCGM_EXPORTER_COLLECTORS.
DCGM_METRICS_FILE = "dcgm-metrics.csv"
DCGM_METRICS_PATH = "/etc/dcgm-exporter/" + DCGM_METRICS_FILE
CLUSTERPOLICIES = kubeclient.Resource("nvidia.com/v1", "clusterpolicies", namespaced=False)
RUNTIMECLASSES = kubeclient.Resource("node.k8s.io/v1", "runtimeclasses", namespaced=False)
DEFAULT_MIG_CONFIG = "default-mig-parted-config"
DEFAULT_RUNTIME_CLASS = "nvidia"   # object_controls.go DefaultRuntimeClass
DCGM_EXPORTER_PORT = 9400

# controllers/state_manager.go init(): every state in order, and the DaemonSet that makes it ready.
STATES: tuple[tuple[str, str | None], ...] = (
    ("pre-requisites", None),
    ("state-operator-metrics", None),
    ("state-driver", "nvidia-driver-daemonset"),
    ("state-container-toolkit", "nvidia-container-toolkit-daemonset"),
    ("state-operator-validation", "nvidia-operator-validator"),
    ("state-device-plugin", "nvidia-device-plugin-daemonset"),
    ("state-mps-control-daemon", MPS_CONTROL_DAEMON),
    ("state-dcgm", "nvidia-dcgm"),
    ("state-dcgm-exporter", "nvidia-dcgm-exporter"),
    ("gpu-feature-discovery", "gpu-feature-discovery"),
    ("state-mig-manager", "nvidia-mig-manager"),
    ("state-node-status-exporter", "nvidia-node-status-exporter"),
)

# assets/state-operator-validation/0500_daemonset.yaml: each init container validates one component.
_VALIDATION_COMPONENT = {"driver-validation": "driver", "toolkit-validation": "toolkit",
                         "cuda-validation": "cuda", "plugin-validation": "plugin"}


def owner_reference(policy: dict) -> dict:
    meta = policy["metadata"]
    return {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "name": meta["name"], "uid": meta["uid"],
            "controller": True, "blockOwnerDeletion": True}


def _env(pairs: dict[str, str]) -> list[dict]:
    return [{"name": k, "value": v} for k, v in pairs.items()]


NODE_NAME_ENV = {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}}


def driver_os_tag(gpu_node_labels: list[dict[str, str]]) -> str:
    """The OS tag of the driver image: the first GPU node's NFD os-release (``ubuntu22.04`` when none yet)."""
    for labels in gpu_node_labels:
        if NFD_OS_ID_LABEL in labels and NFD_OS_VERSION_LABEL in labels:
            return os_tag(labels)
    return "ubuntu22.04"


def _transform(ds: dict, spec: dict, namespace: str) -> dict:
    """``object_controls.go`` transforms: commands, environment and volumes of each operand."""
    name = ds["metadata"]["name"]
    pod = ds["spec"]["template"]["spec"]
    strategy = (spec.get("mig") or {}).get("strategy", "single")
    plugin_config = (spec.get("devicePlugin") or {}).get("config") or {}
    mig_config = (spec.get("migManager") or {}).get("config") or {}
    volumes: list[dict] = []
    for init in pod.get("initContainers", []):
        if init["name"] in _VALIDATION_COMPONENT:
            # The validator runs each validation; the other operands wait for one (upstream with a shell loop
            # on /run/nvidia/validations/<component>-ready, which the emulated nodes have no file for).
            init["command"] = ["sh", "-c"]
            init["args"] = ["nvidia-validator"]
            init["env"] = _env({"WITH_WAIT": "true", "COMPONENT": _VALIDATION_COMPONENT[init["name"]]}) + [
                NODE_NAME_ENV]
        elif init["name"] == "k8s-driver-manager":
            init["command"] = ["driver-manager"]
            init["args"] = ["uninstall_driver"]
            init["env"] = [NODE_NAME_ENV] + _env({"NVIDIA_VISIBLE_DEVICES": "void", "ENABLE_GPU_POD_EVICTION": "true",
                                                  "ENABLE_AUTO_DRAIN": "false"})
        elif init["name"] == "config-manager-init":
            init["command"] = ["config-manager"]
            init["env"] = _config_manager_env(plugin_config, oneshot=True)
        elif init["name"] == "mps-control-daemon-mounts":
            init["command"] = ["mps-control-daemon", "mount-shm"]
            init["securityContext"] = {"privileged": True}
            init["volumeMounts"] = [{"name": "mps-root", "mountPath": "/mps", "mountPropagation": "Bidirectional"}]
    signalled = "/usr/bin/mps-control-daemon" if name == MPS_CONTROL_DAEMON else "nvidia-device-plugin"
    for container in pod["containers"]:
        if container["name"] == "config-manager":
            container["command"] = ["config-manager"]
            container["env"] = _config_manager_env(plugin_config, oneshot=False, signalled=signalled)
        elif container["name"] == "mps-control-daemon-ctr":
            container["command"] = ["mps-control-daemon"]
            env = {"NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
                   "MIG_STRATEGY": strategy}
            if plugin_config.get("name"):
                env["CONFIG_FILE"] = "/config/config.yaml"
            container["env"] = [NODE_NAME_ENV] + _env(env)
            container["securityContext"] = {"privileged": True}
            container["volumeMounts"] = [{"name": "mps-shm", "mountPath": "/dev/shm"},
                                         {"name": "mps-root", "mountPath": "/mps"}]
            volumes += [{"name": "mps-root", "hostPath": {"path": HOST_ROOT, "type": "DirectoryOrCreate"}},
                        {"name": "mps-shm", "hostPath": {"path": HOST_ROOT + "/shm"}}]
        elif container["name"] == "nvidia-operator-validator":
            container["command"] = ["sh", "-c"]
            container["args"] = ["echo all validations are successful; while true; do sleep 86400; done"]
        elif container["name"] == "nvidia-device-plugin":
            container["command"] = ["nvidia-device-plugin"]
            env = {"PASS_DEVICE_SPECS": "true", "FAIL_ON_INIT_ERROR": "true", "DEVICE_LIST_STRATEGY": "envvar",
                   "DEVICE_ID_STRATEGY": "uuid", "NVIDIA_VISIBLE_DEVICES": "all", "NVIDIA_DRIVER_CAPABILITIES": "all",
                   "MIG_STRATEGY": strategy, "MPS_ROOT": HOST_ROOT}
            if plugin_config.get("name"):
                env["CONFIG_FILE"] = "/config/config.yaml"
            container["env"] = _with_env(_env(env), (spec.get("devicePlugin") or {}).get("env"))
        elif container["name"] == "nvidia-dcgm-exporter":
            metrics = (spec.get("dcgmExporter") or {}).get("config") or {}
            env_list: list[dict] = []
            if metrics.get("name"):
                container["volumeMounts"] = [{"name": "metrics-config", "readOnly": True,
                                              "mountPath": DCGM_METRICS_PATH, "subPath": DCGM_METRICS_FILE}]
                volumes.append({"name": "metrics-config", "configMap": {
                    "name": metrics["name"], "items": [{"key": DCGM_METRICS_FILE, "path": DCGM_METRICS_FILE}]}})
                env_list = _env({"DCGM_EXPORTER_COLLECTORS": DCGM_METRICS_PATH})
            env_list = _with_env((container.get("env") or []) + env_list, (spec.get("dcgmExporter") or {}).get("env"))
            if env_list:
                container["env"] = env_list
        elif container["name"] == "gpu-feature-discovery":
            container["command"] = ["gpu-feature-discovery"]
            env = {"GFD_SLEEP_INTERVAL": "60s", "GFD_FAIL_ON_INIT_ERROR": "true", "MIG_STRATEGY": strategy}
            if plugin_config.get("name"):
                env["CONFIG_FILE"] = "/config/config.yaml"
            container["env"] = _env(env) + [NODE_NAME_ENV]
        elif container["name"] == "nvidia-mig-manager":
            container["command"] = ["nvidia-mig-manager"]
            container["env"] = [NODE_NAME_ENV] + _env({
                "CONFIG_FILE": "/mig-parted-config/config.yaml", "DEFAULT_GPU_CLIENTS_NAMESPACE": namespace,
                "WITH_REBOOT": "false", "DEFAULT_MIG_CONFIG": mig_config.get("default", "all-disabled")})
            container["volumeMounts"] = [{"name": "mig-parted-config", "mountPath": "/mig-parted-config"}]
            volumes.append({"name": "mig-parted-config",
                            "configMap": {"name": mig_config.get("name") or DEFAULT_MIG_CONFIG}})
    if plugin_config.get("name") and name in ("nvidia-device-plugin-daemonset", "gpu-feature-discovery",
                                              MPS_CONTROL_DAEMON):
        volumes.append({"name": "available-configs", "configMap": {"name": plugin_config["name"]}})
        for container in pod["containers"] + pod.get("initContainers", []):
            if container["name"].startswith("config-manager"):
                container["volumeMounts"] = [{"name": "available-configs", "mountPath": "/available-configs"}]
    if volumes:
        pod["volumes"] = volumes
    return ds


def _with_env(env: list[dict], extra: list[dict] | None) -> list[dict]:
    """``setContainerEnv`` for each of a component's ``env`` in the ClusterPolicy: replace by name, else append."""
    out = [dict(e) for e in env]
    for item in extra or []:
        entry = {"name": item.get("name"), "value": str(item.get("value", ""))}
        index = next((i for i, e in enumerate(out) if e.get("name") == entry["name"]), None)
        if index is None:
            out.append(entry)
        else:
            out[index] = entry
    return out


def _config_manager_env(config: dict, *, oneshot: bool, signalled: str = "nvidia-device-plugin") -> list[dict]:
    return [NODE_NAME_ENV] + _env({
        "ONESHOT": "true" if oneshot else "false", "KUBECONFIG": "", "NODE_LABEL": CONFIG_LABEL,
        "CONFIG_FILE_SRCDIR": "/available-configs", "CONFIG_FILE_DST": "/config/config.yaml",
        "DEFAULT_CONFIG": config.get("default", ""), "FALLBACK_STRATEGIES": ",".join(FALLBACK_STRATEGIES),
        "SEND_SIGNAL": "false" if oneshot else "true", "SIGNAL": "1", "PROCESS_TO_SIGNAL": signalled})


def _stand_in_lines(spec: dict) -> dict[str, str]:
    """With stand-in images (:mod:`.standins`), what each init container echoes as it ends: k8s-driver-manager's
    unload step, the validator's ``... validation is successful`` wording, config-manager's last line."""
    default = ((spec.get("devicePlugin") or {}).get("config") or {}).get("default")
    lines = {name: f"{component} validation is successful" for name, component in _VALIDATION_COMPONENT.items()}
    lines["k8s-driver-manager"] = "Unloading NVIDIA driver kernel modules...done"
    lines["mps-control-daemon-mounts"] = ""       # mount-shm logs nothing when it succeeds
    lines["config-manager-init"] = (f"Successfully updated to config: {default}" if default
                                    else "Successfully updated to empty config")
    return lines


def runtime_classes(spec: dict, owner: list[dict]) -> list[dict]:
    """The pre-requisites state's RuntimeClasses (assets/pre-requisites/02*_runtime_class*.yaml,
    ``transformRuntimeClass``): ``operator.runtimeClass`` (default ``nvidia``) with the same handler, and with
    CDI enabled (the default) ``nvidia-legacy`` and ``nvidia-cdi``; labelled as the operator's, owned by the policy."""
    name = (spec.get("operator") or {}).get("runtimeClass") or DEFAULT_RUNTIME_CLASS
    names = [name] + (["nvidia-legacy", "nvidia-cdi"] if (spec.get("cdi") or {}).get("enabled", True) else [])
    return [{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "handler": n,
             "metadata": {"name": n, "labels": {"app.kubernetes.io/component": "gpu-operator"},
                          "ownerReferences": owner}} for n in names]


def desired_objects(policy: dict, namespace: str, gpu_node_labels: list[dict[str, str]], *,
                    stand_ins: bool = False) -> list[tuple[kubeclient.Resource, dict]]:
    """Every object the operator keeps in ``namespace`` for ``policy``, each owned by it; with ``stand_ins``, the
    operand pods run stand-in images (:mod:`.standins`)."""
    spec = policy.get("spec") or {}
    owner = [owner_reference(policy)]
    objects: list[tuple[kubeclient.Resource, dict]] = [
        (RUNTIMECLASSES, rc) for rc in runtime_classes(spec, owner)]
    # Each state's ServiceAccount (assets/state-*/0100_service_account.yaml); the MPS control daemon's state has
    # one of its own although its pods run as the device plugin's.
    accounts = [op.service_account for op in OPERANDS if is_enabled(spec, op)]
    if any(op.name == MPS_CONTROL_DAEMON and is_enabled(spec, op) for op in OPERANDS):
        accounts.append(MPS_CONTROL_DAEMON)
    for account in dict.fromkeys(accounts):
        objects.append((kubeclient.SERVICEACCOUNTS, {
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": account, "namespace": namespace, "ownerReferences": owner}}))
    mig_manager = spec.get("migManager") or {}
    if mig_manager.get("enabled", True) and ((mig_manager.get("config") or {}).get("name") or DEFAULT_MIG_CONFIG) \
            == DEFAULT_MIG_CONFIG:
        cm = copy.deepcopy(default_config_map())
        cm["metadata"] = {"name": DEFAULT_MIG_CONFIG, "namespace": namespace, "ownerReferences": owner}
        objects.append((kubeclient.CONFIGMAPS, cm))
    if (spec.get("dcgmExporter") or {}).get("enabled", True):
        objects.append((kubeclient.SERVICES, {
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "nvidia-dcgm-exporter", "namespace": namespace, "ownerReferences": owner,
                         "labels": {"app": "nvidia-dcgm-exporter"},
                         "annotations": {"prometheus.io/scrape": "true"}},
            "spec": {"type": "ClusterIP", "selector": {"app": "nvidia-dcgm-exporter"},
                     "ports": [{"name": "gpu-metrics", "port": DCGM_EXPORTER_PORT, "protocol": "TCP",
                                "targetPort": DCGM_EXPORTER_PORT}]}}))
    tag = driver_os_tag(gpu_node_labels)
    for op in OPERANDS:
        if not is_enabled(spec, op):
            continue
        ds = _transform(operand_daemonset(spec, op, namespace=namespace, node_os_tag=tag), spec, namespace)
        if stand_ins:
            ds = standins.stand_in_workload(ds, _stand_in_lines(spec))
        ds["metadata"]["ownerReferences"] = owner
        objects.append((kubeclient.DAEMONSETS, ds))
    return objects


# --- status ---------------------------------------------------------------------------------------

def daemonset_ready(ds: dict | None) -> bool:
    """``isDaemonSetReady`` (object_controls.go): nothing scheduled, or nothing unavailable and up to date."""
    if ds is None:
        return False
    status = ds.get("status") or {}
    if status.get("observedGeneration", 0) < ds["metadata"].get("generation", 1):
        return False
    desired = status.get("desiredNumberScheduled", 0)
    if desired == 0:
        return True
    if status.get("numberUnavailable", 0) != 0:
        return False
    return status.get("numberAvailable", 0) >= desired


@dataclass(frozen=True)
class PolicyStatus:
    state: str                    # "ready" | "notReady"
    reason: str
    message: str


def policy_status(policy: dict, daemonsets: dict[str, dict], *, has_nfd_labels: bool,
                  has_gpu_nodes: bool) -> PolicyStatus:
    """``ClusterPolicyReconciler.Reconcile``'s verdict once every state has stepped."""
    spec = policy.get("spec") or {}
    enabled = {op.name for op in OPERANDS if is_enabled(spec, op)}
    not_ready = [state for state, ds_name in STATES
                 if ds_name in enabled and not daemonset_ready(daemonsets.get(ds_name))]
    if not_ready:
        return PolicyStatus("notReady", "OperandNotReady",
                            f"ClusterPolicy is not ready, states not ready: [{' '.join(not_ready)}]")
    if not has_nfd_labels:
        return PolicyStatus("ready", "NFDLabelsMissing", "No NFD labels found")
    if not has_gpu_nodes:
        return PolicyStatus("ready", "NoGPUNodes", "No GPU node found, watching for new nodes to join the cluster.")
    return PolicyStatus("ready", "Reconciled",
                        "ClusterPolicy is ready as all resources have been successfully reconciled")


def status_object(current: dict[str, Any], verdict: PolicyStatus, namespace: str, now: str) -> dict[str, Any]:
    """``status`` after ``SetStatus`` and the conditions updater (``meta.SetStatusCondition`` semantics)."""
    conditions = {c["type"]: c for c in current.get("conditions") or []}
    if verdict.state == "ready":
        wanted = [("Ready", "True", verdict.reason, verdict.message), ("Error", "False", "Ready", "")]
    else:
        wanted = [("Ready", "False", "Error", ""), ("Error", "True", verdict.reason, verdict.message)]
    out = []
    for type_, status, reason, message in wanted:
        old = conditions.get(type_)
        changed = old is None or old.get("status") != status
        out.append({"type": type_, "status": status, "reason": reason, "message": message,
                    "lastTransitionTime": now if changed else old.get("lastTransitionTime", now)})
    return {"state": verdict.state, "namespace": namespace, "conditions": out}
