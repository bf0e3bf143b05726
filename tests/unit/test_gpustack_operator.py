"""The operator's objects and ClusterPolicy status (gpulab.gpustack.operator; docs/fidelity.md#gpustack)."""
from gpulab import kubeclient as client
from gpulab.gpustack.chart import cluster_policy, parse_set, values_for
from gpulab.gpustack.operator import daemonset_ready, desired_objects, policy_status, status_object


def policy(*sets):
    p = cluster_policy(values_for(None, parse_set(list(sets))))
    p["metadata"]["uid"] = "uid-1"
    return p


UBUNTU = [{"feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
           "feature.node.kubernetes.io/system-os_release.VERSION_ID": "22.04"}]


def by_name(objects, resource):
    return {o["metadata"]["name"]: o for r, o in objects if r is resource}


def test_every_object_is_owned_by_the_cluster_policy():
    objects = desired_objects(policy(), "gpu-operator", UBUNTU)
    for _, obj in objects:
        assert obj["metadata"]["ownerReferences"] == [{"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
                                                       "name": "cluster-policy", "uid": "uid-1", "controller": True,
                                                       "blockOwnerDeletion": True}]
    assert "default-mig-parted-config" in by_name(objects, client.CONFIGMAPS)
    service = by_name(objects, client.SERVICES)["nvidia-dcgm-exporter"]
    assert service["spec"]["ports"] == [{"name": "gpu-metrics", "port": 9400, "protocol": "TCP", "targetPort": 9400}]


def test_operand_pod_specs():
    daemonsets = by_name(desired_objects(policy("mig.strategy=mixed"), "gpu-operator", UBUNTU), client.DAEMONSETS)
    toolkit = daemonsets["nvidia-container-toolkit-daemonset"]["spec"]["updateStrategy"]
    assert toolkit == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}
    driver = daemonsets["nvidia-driver-daemonset"]["spec"]["template"]["spec"]
    assert driver["containers"][0]["image"] == "nvcr.io/nvidia/driver:595.91.07-ubuntu22.04"
    assert (driver["initContainers"][0]["command"], driver["initContainers"][0]["args"]) == (
        ["driver-manager"], ["uninstall_driver"])
    plugin = daemonsets["nvidia-device-plugin-daemonset"]["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "MIG_STRATEGY", "value": "mixed"} in plugin["env"]
    validator = daemonsets["nvidia-operator-validator"]["spec"]["template"]["spec"]
    assert validator["initContainers"][2]["args"] == ["nvidia-validator"]
    assert {"name": "COMPONENT", "value": "cuda"} in validator["initContainers"][2]["env"]


def test_device_plugin_config_mounts_the_config_map():
    daemonsets = by_name(desired_objects(policy("devicePlugin.config.name=time-slicing-config",
                                                "devicePlugin.config.default=any"), "gpu-operator", UBUNTU),
                         client.DAEMONSETS)
    spec = daemonsets["nvidia-device-plugin-daemonset"]["spec"]["template"]["spec"]
    assert spec["volumes"] == [{"name": "available-configs", "configMap": {"name": "time-slicing-config"}}]
    manager = next(c for c in spec["containers"] if c["name"] == "config-manager")
    assert {"name": "DEFAULT_CONFIG", "value": "any"} in manager["env"]
    assert {"name": "NODE_LABEL", "value": "nvidia.com/device-plugin.config"} in manager["env"]
    # object_controls.go sets FALLBACK_STRATEGIES=empty on the init container and the sidecar alike.
    init = next(c for c in spec["initContainers"] if c["name"] == "config-manager-init")
    for container in (init, manager):
        assert {"name": "FALLBACK_STRATEGIES", "value": "empty"} in container["env"]


def ds(desired, unavailable=0, available=None, generation=1, observed=1):
    return {"metadata": {"generation": generation},
            "status": {"observedGeneration": observed, "desiredNumberScheduled": desired,
                       "numberUnavailable": unavailable,
                       "numberAvailable": desired - unavailable if available is None else available}}


def test_daemonset_readiness():
    assert daemonset_ready(ds(0)) and daemonset_ready(ds(2))
    assert not daemonset_ready(ds(2, unavailable=1)) and not daemonset_ready(None)
    assert not daemonset_ready(ds(2, generation=2))


def test_status_names_the_states_not_ready():
    p = policy()
    ready = {name: ds(2) for name in ("nvidia-driver-daemonset", "nvidia-container-toolkit-daemonset",
                                      "nvidia-operator-validator", "nvidia-device-plugin-daemonset",
                                      "nvidia-dcgm-exporter", "gpu-feature-discovery", "nvidia-mig-manager")}
    ready["nvidia-device-plugin-mps-control-daemon"] = ds(0)     # no node selects MPS: scheduled nowhere, ready
    verdict = policy_status(p, {**ready, "nvidia-driver-daemonset": ds(2, unavailable=2)}, has_nfd_labels=True,
                            has_gpu_nodes=True)
    assert (verdict.state, verdict.reason, verdict.message) == (
        "notReady", "OperandNotReady", "ClusterPolicy is not ready, states not ready: [state-driver]")
    verdict = policy_status(p, ready, has_nfd_labels=True, has_gpu_nodes=True)
    assert (verdict.state, verdict.message) == (
        "ready", "ClusterPolicy is ready as all resources have been successfully reconciled")
    status = status_object({}, verdict, "gpu-operator", "2025-01-01T00:00:00Z")
    assert status["state"] == "ready" and status["namespace"] == "gpu-operator"
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("Ready", "True", "Reconciled"), ("Error", "False", "Ready")]
    assert policy_status(p, {}, has_nfd_labels=False, has_gpu_nodes=False).state == "notReady"
