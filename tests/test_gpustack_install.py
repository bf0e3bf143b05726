"""`gpulab install gpu-operator` on the default topology, seen through the real kubectl.

One embedded cluster for the module: install, the operator reaching ``ready``,
GFD labels and ``nvidia.com/gpu`` on the H100 and A100 nodes, the seed's
infer-worker landing on the H100 node, ``nvidia-smi`` in a GPU pod, time-slicing
(replicas, ``-SHARED``, admission refusal), then uninstall taking capacity and
labels away. Upstream sources: docs/fidelity.md#gpustack.
"""
from __future__ import annotations

import json
import os
import time
from functools import partial

import pytest

from .conftest import ROOT, start_cluster, stop_cluster, wait_for

H100_NODE = "gpulab-worker2"
A100_NODE = "gpulab-worker3"
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("gpustack-install")]


wait_for = partial(wait_for, timeout=60)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    old = os.environ.get("GPULAB_DEVICE_PLUGIN_STOP_GRACE")
    os.environ["GPULAB_DEVICE_PLUGIN_STOP_GRACE"] = "3"   # the kubelet's 5 minutes, shortened for the test
    try:
        c = start_cluster(tmp_path_factory.mktemp("gpustack-install"))
    finally:
        if old is None:
            os.environ.pop("GPULAB_DEVICE_PLUGIN_STOP_GRACE")
        else:
            os.environ["GPULAB_DEVICE_PLUGIN_STOP_GRACE"] = old
    yield c
    stop_cluster(c)


@pytest.fixture(scope="module")
def installed(cluster):
    # The course's default chart with the driver pinned to 580.105.08, whose real nvidia-smi output the tests
    # compare with (the chart's own default is 595.91.07).
    out = cluster.gpulab("install", "gpu-operator", "--set", "driver.version=580.105.08", timeout=180)
    return out


def node(cluster, name: str) -> dict:
    return json.loads(cluster.kubectl("get", "node", name, "-o", "json").stdout)


def allocatable(cluster, name: str, resource: str = "nvidia.com/gpu") -> str | None:
    return node(cluster, name)["status"]["allocatable"].get(resource)


def apply(cluster, manifest: str) -> None:
    cluster.kubectl("apply", "-f", "-", input=manifest)


def gpu_pod(name: str, command: str, resource: str = "nvidia.com/gpu", count: int = 1,
            node_name: str = H100_NODE) -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  restartPolicy: Never
  nodeSelector: {{kubernetes.io/hostname: {node_name}}}
  containers:
  - name: main
    image: nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04
    command: [{command}]
    resources: {{limits: {{{resource}: "{count}"}}}}
"""


def pod_phase(cluster, name: str) -> str:
    return cluster.kubectl("get", "pod", name, "-o", "jsonpath={.status.phase}", check=False).stdout


def test_install_prints_the_helm_summary(installed):
    lines = installed.stdout.splitlines()
    assert lines[0] == "NAME: gpu-operator"
    assert lines[1].startswith("LAST DEPLOYED: ")
    assert lines[2:] == ["NAMESPACE: gpu-operator", "STATUS: deployed", "REVISION: 1", "TEST SUITE: None"]


def test_cluster_policy_becomes_ready_and_gpu_nodes_are_advertised(cluster, installed):
    wait_for(lambda: allocatable(cluster, H100_NODE) == "8" and allocatable(cluster, A100_NODE) == "4",
             timeout=90, what="nvidia.com/gpu allocatable on both GPU nodes")
    # ready can flap while late operands (the MIG manager, once GFD says mig.capable) come up, as upstream
    table = wait_for(lambda: (lambda t: t if t[1].split()[:2] == ["cluster-policy", "ready"] and
                              node(cluster, H100_NODE)["metadata"]["labels"].get("nvidia.com/mig.config.state") ==
                              "success" else None)(cluster.kubectl("get", "clusterpolicy").stdout.splitlines()),
                     timeout=90, what="cluster-policy ready")
    assert table[0].split() == ["NAME", "STATUS", "AGE"]
    h100 = node(cluster, H100_NODE)["metadata"]["labels"]
    assert {k: h100[k] for k in ("nvidia.com/gpu.product", "nvidia.com/gpu.count", "nvidia.com/gpu.memory",
                                 "nvidia.com/gpu.family", "nvidia.com/gpu.compute.major",
                                 "nvidia.com/gpu.present", "nvidia.com/mig.capable", "nvidia.com/mig.config",
                                 "nvidia.com/mig.config.state", "feature.node.kubernetes.io/pci-10de.present",
                                 "nvidia.com/gpu.deploy.device-plugin", "nvidia.com/cuda.driver-version.full")} == {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8",
        "nvidia.com/gpu.memory": "81559", "nvidia.com/gpu.family": "hopper", "nvidia.com/gpu.compute.major": "9",
        "nvidia.com/gpu.present": "true", "nvidia.com/mig.capable": "true", "nvidia.com/mig.config": "all-disabled",
        "nvidia.com/mig.config.state": "success", "feature.node.kubernetes.io/pci-10de.present": "true",
        "nvidia.com/gpu.deploy.device-plugin": "true", "nvidia.com/cuda.driver-version.full": "580.105.08"}
    a100 = node(cluster, A100_NODE)["metadata"]["labels"]
    assert (a100["nvidia.com/gpu.product"], a100["nvidia.com/gpu.memory"], a100["nvidia.com/gpu.family"]) == (
        "NVIDIA-A100-SXM4-40GB", "40960", "ampere")
    cpu = node(cluster, "gpulab-worker")["metadata"]["labels"]
    assert "nvidia.com/gpu.present" not in cpu and "nvidia.com/gpu" not in node(cluster, "gpulab-worker")[
        "status"]["allocatable"]


OPERANDS = ("nvidia-driver-daemonset", "nvidia-device-plugin-daemonset", "gpu-feature-discovery",
            "nvidia-operator-validator", "nvidia-mig-manager", "nvidia-container-toolkit-daemonset",
            "nvidia-dcgm-exporter")


def pod_statuses(cluster) -> dict[str, list[str]]:
    """``kubectl get pods -n gpu-operator`` STATUS column, grouped by the name before the random suffix."""
    rows = [line.split() for line in cluster.kubectl("get", "pods", "-n", "gpu-operator").stdout.splitlines()[1:]]
    by_prefix: dict[str, list[str]] = {}
    for name, _ready, status, *_ in rows:
        by_prefix.setdefault(name.rsplit("-", 1)[0], []).append(status)
    return by_prefix


def test_operand_pods_look_like_a_real_cluster(cluster, installed):
    statuses = wait_for(lambda: (lambda s: s if s.get("nvidia-cuda-validator") == ["Completed", "Completed"] and all(
        s.get(ds) == ["Running", "Running"] for ds in OPERANDS) else None)(pod_statuses(cluster)),
        timeout=90, what="operands Running and the cuda validators Completed")
    assert statuses["gpu-operator-node-feature-discovery-worker"] == ["Running"] * 4
    spec = json.loads(cluster.kubectl("get", "ds", "-n", "gpu-operator", "nvidia-device-plugin-daemonset",
                                      "-o", "json").stdout)["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"nvidia.com/gpu.deploy.device-plugin": "true"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]


def test_seed_infer_worker_lands_on_the_h100_node(cluster, installed):
    wait_for(lambda: allocatable(cluster, H100_NODE) == "8", timeout=90, what="H100 capacity")
    cluster.kubectl("apply", "-f", str(ROOT / "course" / "manifests" / "infer-worker.yaml"))
    bound = wait_for(lambda: cluster.kubectl("get", "pod", "infer-worker", "-o",
                                             "jsonpath={.spec.nodeName}").stdout, what="binding")
    assert bound == H100_NODE
    notes = wait_for(lambda: json.loads(cluster.kubectl("get", "pod", "infer-worker", "-o", "json").stdout)[
        "metadata"].get("annotations", {}).get("gpulab.dev/device-allocation"), what="allocation")
    devices = json.loads(notes)["containers"]["server"]["devices"]["nvidia.com/gpu"]
    assert len(devices) == 1 and devices[0].startswith("GPU-")
    cluster.kubectl("delete", "pod", "infer-worker", "--wait=false")


def test_nvidia_smi_in_an_exclusive_pod(cluster, installed):
    wait_for(lambda: allocatable(cluster, H100_NODE) == "8", timeout=90, what="H100 capacity")
    apply(cluster, gpu_pod("smi-exclusive", "nvidia-smi"))
    wait_for(lambda: pod_phase(cluster, "smi-exclusive") == "Succeeded", what="nvidia-smi to finish")
    out = cluster.kubectl("logs", "smi-exclusive").stdout.splitlines()
    assert out[1] == "+" + "-" * 89 + "+"
    assert out[2] == ("| NVIDIA-SMI 580.105.08             Driver Version: 580.105.08     CUDA Version: 13.0     |")
    assert "NVIDIA H100 80GB HBM3" in out[8] and out[9].endswith("|       0MiB /  81559MiB |      0%      Default |")
    assert sum(1 for line in out if "NVIDIA H100 80GB HBM3" in line) == 1
    latency = json.loads(cluster.kubectl("get", "pod", "smi-exclusive", "-o",
                                         "jsonpath={.metadata.annotations.gpulab\\.dev/expected-latency}").stdout)
    assert latency["mode"] == "exclusive" and latency["p99_ms"] > latency["p50_ms"] > 0
    cluster.kubectl("delete", "pod", "smi-exclusive", "--wait=false")


def test_nvidia_smi_by_exec_shows_the_allocated_gpu(cluster, installed):
    wait_for(lambda: allocatable(cluster, H100_NODE) == "8", timeout=90, what="H100 capacity")
    apply(cluster, gpu_pod("smi-exec", "sleep, infinity"))
    wait_for(lambda: pod_phase(cluster, "smi-exec") == "Running", what="the GPU pod to run")
    uuid = cluster.kubectl("exec", "smi-exec", "--", "sh", "-c", "echo $NVIDIA_VISIBLE_DEVICES").stdout.strip()
    assert cluster.kubectl("exec", "smi-exec", "--", "nvidia-smi", "-L").stdout == (
        f"GPU 0: NVIDIA H100 80GB HBM3 (UUID: {uuid})\n")
    cluster.kubectl("delete", "pod", "smi-exec", "--wait=false")
    cluster.kubectl("run", "no-gpu", "--image=busybox", "--", "sleep", "3600")
    wait_for(lambda: pod_phase(cluster, "no-gpu") == "Running", what="the CPU pod to run")
    cpu = cluster.kubectl("exec", "no-gpu", "--", "nvidia-smi", check=False)
    assert cpu.returncode == 1 and cpu.stderr.endswith('exec: "nvidia-smi": executable file not found in $PATH\n')
    cluster.kubectl("delete", "pod", "no-gpu", "--wait=false")


TIME_SLICING = """
apiVersion: v1
kind: ConfigMap
metadata: {name: time-slicing-config, namespace: gpu-operator}
data:
  any: |-
    version: v1
    flags:
      migStrategy: none
    sharing:
      timeSlicing:
        resources:
        - name: nvidia.com/gpu
          replicas: 4
  strict: |-
    version: v1
    sharing:
      timeSlicing:
        renameByDefault: true
        failRequestsGreaterThanOne: true
        resources:
        - name: nvidia.com/gpu
          replicas: 4
"""


def per_pool_config(replicas_by_key: dict[str, int]) -> str:
    """ConfigMap ``per-pool-config`` in the operator's namespace: a time-slicing entry per key, with its replicas."""
    data = {key: json.dumps({"version": "v1", "sharing": {"timeSlicing": {"resources": [
        {"name": "nvidia.com/gpu", "replicas": replicas}]}}}) for key, replicas in replicas_by_key.items()}
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "data": data,
                       "metadata": {"name": "per-pool-config", "namespace": "gpu-operator"}})


def settled(cluster) -> None:
    from gpulab.learner.conditions import clusterpolicy_settled
    from gpulab.learner.reader import ClusterReader

    wait_for(lambda: clusterpolicy_settled(ClusterReader(cluster.client()))[0], timeout=120,
             what="the GPU stack to settle")


def config_manager_init_log(cluster, node_name: str) -> list[str]:
    """What the running device plugin pod's config-manager-init wrote on ``node_name``, past klog's header."""
    pods = json.loads(cluster.kubectl("get", "pods", "-n", "gpu-operator", "-l", "app=nvidia-device-plugin-daemonset",
                                      "--field-selector", f"spec.nodeName={node_name},status.phase=Running",
                                      "-o", "json").stdout)["items"]
    if len(pods) != 1 or not any(c["name"] == "config-manager-init" for c in pods[0]["spec"]["initContainers"]):
        return []
    log = cluster.kubectl("logs", "-n", "gpu-operator", pods[0]["metadata"]["name"], "-c", "config-manager-init",
                          check=False).stdout
    return [line.split("] ", 1)[1] for line in log.splitlines()]


def test_an_unlabelled_node_keeps_whole_gpus_whatever_keys_the_config_has(cluster, installed):
    """Under the operator config-manager falls back to the empty config only (gpu-operator object_controls.go
    sets FALLBACK_STRATEGIES=empty): a node without the label, with no devicePlugin.config.default, keeps whole
    GPUs although the ConfigMap's only key time-slices, and although a key is called `default`."""
    wait_for(lambda: allocatable(cluster, H100_NODE) == "8", timeout=90, what="H100 capacity")
    apply(cluster, per_pool_config({"a100-40gb": 4}))
    cluster.kubectl("label", "node", A100_NODE, "nvidia.com/device-plugin.config=a100-40gb")
    try:
        cluster.kubectl("patch", "clusterpolicies.nvidia.com/cluster-policy", "--type", "merge",
                        "-p", '{"spec":{"devicePlugin":{"config":{"name":"per-pool-config"}}}}')
        fallback = ["Waiting for change to 'nvidia.com/device-plugin.config' label",
                    "Label change detected: nvidia.com/device-plugin.config=",
                    "No value set and no default set. Attempting fallback strategies: [empty]",
                    "Falling back to an empty configuration", "Updating to empty config",
                    "Successfully updated to empty config"]
        assert wait_for(lambda: config_manager_init_log(cluster, H100_NODE), timeout=120,
                        what="the H100's config-manager-init") == fallback
        wait_for(lambda: allocatable(cluster, A100_NODE) == "16", timeout=90, what="the A100 time-sliced")
        settled(cluster)
        assert allocatable(cluster, H100_NODE) == "8"
        assert node(cluster, H100_NODE)["metadata"]["labels"]["nvidia.com/gpu.sharing-strategy"] == "none"

        apply(cluster, per_pool_config({"a100-40gb": 4, "default": 2}))  # a key called `default` is not picked either
        cluster.kubectl("rollout", "restart", "-n", "gpu-operator", "daemonset/nvidia-device-plugin-daemonset")
        cluster.kubectl("rollout", "status", "-n", "gpu-operator", "daemonset/nvidia-device-plugin-daemonset",
                        "--timeout=120s")
        assert wait_for(lambda: config_manager_init_log(cluster, H100_NODE), timeout=60,
                        what="the H100's config-manager-init") == fallback
        settled(cluster)
        assert allocatable(cluster, H100_NODE) == "8" and allocatable(cluster, A100_NODE) == "16"
    finally:
        cluster.kubectl("label", "node", A100_NODE, "nvidia.com/device-plugin.config-")


def test_time_slicing_with_four_replicas(cluster, installed):
    wait_for(lambda: allocatable(cluster, H100_NODE) == "8", timeout=90, what="H100 capacity")
    use_time_slicing(cluster)
    wait_for(lambda: allocatable(cluster, H100_NODE) == "32", timeout=90, what="32 time-sliced GPUs")
    labels = wait_for(lambda: (lambda l: l if l.get("nvidia.com/gpu.product", "").endswith("-SHARED") else None)(
        node(cluster, H100_NODE)["metadata"]["labels"]), what="-SHARED product label")
    assert (labels["nvidia.com/gpu.product"], labels["nvidia.com/gpu.replicas"],
            labels["nvidia.com/gpu.sharing-strategy"]) == ("NVIDIA-H100-80GB-HBM3-SHARED", "4", "time-slicing")
    wait_for(lambda: allocatable(cluster, A100_NODE) == "16", what="16 time-sliced A100s")

    apply(cluster, gpu_pod("smi-shared", "nvidia-smi"))
    wait_for(lambda: pod_phase(cluster, "smi-shared") == "Succeeded", what="nvidia-smi to finish")
    out = cluster.kubectl("logs", "smi-shared").stdout
    assert out.count("NVIDIA H100 80GB HBM3") == 1 and "0MiB /  81559MiB" in out   # a whole GPU
    notes = json.loads(cluster.kubectl("get", "pod", "smi-shared", "-o", "json").stdout)["metadata"]["annotations"]
    device = json.loads(notes["gpulab.dev/device-allocation"])["containers"]["main"]["devices"]["nvidia.com/gpu"][0]
    assert device.startswith("GPU-") and device.rsplit("::", 1)[1].isdigit()
    assert json.loads(notes["gpulab.dev/expected-latency"])["mode"] == "time-slicing"


def use_time_slicing(cluster) -> None:
    apply(cluster, TIME_SLICING)
    cluster.kubectl("patch", "clusterpolicies.nvidia.com/cluster-policy", "-n", "gpu-operator", "--type", "merge",
                    "-p", '{"spec":{"devicePlugin":{"config":{"name":"time-slicing-config","default":"any"}}}}')


def test_config_edits_need_a_rollout_restart_and_the_node_label_picks_a_config(cluster, installed):
    use_time_slicing(cluster)
    wait_for(lambda: allocatable(cluster, H100_NODE) == "32", timeout=90, what="32 time-sliced GPUs")
    cluster.kubectl("label", "node", H100_NODE, "nvidia.com/device-plugin.config=strict")
    wait_for(lambda: allocatable(cluster, H100_NODE, "nvidia.com/gpu.shared") == "32", timeout=60,
             what="renameByDefault: nvidia.com/gpu.shared")
    assert allocatable(cluster, H100_NODE) in ("0", None)   # unhealthy, then gone after the grace period
    labels = node(cluster, H100_NODE)["metadata"]["labels"]
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"      # renamed: no -SHARED suffix

    apply(cluster, gpu_pod("greedy", "nvidia-smi", resource="nvidia.com/gpu.shared", count=2))
    wait_for(lambda: pod_phase(cluster, "greedy") == "Failed", what="admission refusal")
    status = json.loads(cluster.kubectl("get", "pod", "greedy", "-o", "json").stdout)["status"]
    assert status["reason"] == "UnexpectedAdmissionError"
    assert status["message"] == (
        'Pod was rejected: Allocate failed due to rpc error: code = Unknown desc = invalid allocation request for '
        '"nvidia.com/gpu.shared": invalid request: maximum request size for shared resources is 1; found 2, '
        'which is unexpected')

    # A label naming a config that does not exist: the config-manager sidecar exits 1 and restarts (upstream
    # CrashLoopBackOff), the plugin keeps the config it loaded.
    plugin = cluster.kubectl("get", "pods", "-n", "gpu-operator", "-l", "app=nvidia-device-plugin-daemonset",
                             "--field-selector", f"spec.nodeName={H100_NODE}", "-o", "name").stdout.strip()
    cluster.kubectl("label", "node", H100_NODE, "nvidia.com/device-plugin.config=nope", "--overwrite")
    restarts = "jsonpath={.status.containerStatuses[?(@.name=='config-manager')].restartCount}"
    wait_for(lambda: cluster.kubectl("get", "-n", "gpu-operator", plugin, "-o", restarts).stdout not in ("", "0"),
             timeout=30, what="the config-manager sidecar to exit and restart")
    previous = cluster.kubectl("logs", "-n", "gpu-operator", plugin, "-c", "config-manager", "--previous").stdout
    assert previous.splitlines()[-2].endswith(" 1 main.go:248] Label change detected: "
                                              "nvidia.com/device-plugin.config=nope")
    last = previous.splitlines()[-1]
    assert last.startswith("E") and last.endswith(" 1 main.go:208] specified config nope does not exist")
    assert allocatable(cluster, H100_NODE, "nvidia.com/gpu.shared") == "32"

    cluster.kubectl("label", "node", H100_NODE, "nvidia.com/device-plugin.config-")
    wait_for(lambda: allocatable(cluster, H100_NODE) == "32", timeout=60, what="back to the default config")
    edited = TIME_SLICING.replace("replicas: 4\n  strict", "replicas: 2\n  strict")
    apply(cluster, edited)
    time.sleep(3)
    assert allocatable(cluster, H100_NODE) == "32"       # the running plugin keeps the config it loaded
    cluster.kubectl("rollout", "restart", "-n", "gpu-operator", "daemonset/nvidia-device-plugin-daemonset")
    wait_for(lambda: allocatable(cluster, H100_NODE) == "16", timeout=90, what="the edited config after restart")


def test_an_upgrade_puts_back_what_kubectl_patch_changed_and_keeps_the_releases_values(cluster, installed):
    """The ClusterPolicy is the release's: an upgrade renders it from the chart and the release's values and writes
    it back whole (helm pkg/kube/client.go: a custom resource is merge-patched into the rendered one), so the
    devicePlugin.config the earlier tests set with kubectl patch goes, even with --reuse-values; set as a value of
    the release, it stays."""
    def plugin_config():
        return json.loads(cluster.kubectl("get", "clusterpolicy", "cluster-policy", "-o", "json").stdout)[
            "spec"]["devicePlugin"].get("config")

    use_time_slicing(cluster)                                    # kubectl patch
    assert plugin_config() == {"name": "time-slicing-config", "default": "any"}
    cluster.gpulab("upgrade", "gpu-operator", "--reuse-values", "--no-wait", timeout=180)
    assert plugin_config() is None
    cluster.gpulab("upgrade", "gpu-operator", "--reuse-values", "--no-wait", "--set",
                   "devicePlugin.config.name=time-slicing-config", timeout=180)
    cluster.gpulab("upgrade", "gpu-operator", "--reuse-values", "--no-wait", timeout=180)
    assert plugin_config() == {"name": "time-slicing-config", "default": ""}


def test_install_errors_are_helms(cluster, installed):
    again = cluster.gpulab("install", "gpu-operator", check=False)
    assert again.returncode == 1
    assert again.stderr.strip() == "Error: INSTALLATION FAILED: cannot re-use a name that is still in use"
    unknown = cluster.gpulab("install", "gpu-operator", "--name", "other", "--version", "v1.0.0", check=False)
    assert unknown.stderr.startswith('Error: INSTALLATION FAILED: chart "gpu-operator" version "v1.0.0" not found '
                                     "in https://helm.ngc.nvidia.com/nvidia repository")
    typo = cluster.gpulab("install", "gpu-operator", "--name", "other", "--set", "drivr.version=1", check=False)
    assert 'unknown value "drivr.version"' in typo.stderr and 'did you mean "driver.version"?' in typo.stderr


def nodefeatures(cluster) -> dict[str, dict]:
    listed = json.loads(cluster.kubectl("get", "nodefeatures.nfd.k8s-sigs.io", "-n", "gpu-operator", "-o", "json").stdout)
    return {item["metadata"]["name"]: item for item in listed["items"]}


def test_nfd_worker_publishes_one_nodefeature_per_node_and_the_labels_are_its(cluster, installed):
    workers = json.loads(cluster.kubectl("get", "pods", "-n", "gpu-operator", "-l", "role=worker", "-o", "json").stdout)
    on = {p["spec"]["nodeName"]: p for p in workers["items"]}
    assert len(on) == 4
    published = wait_for(lambda: (lambda found: found if set(found) == set(on) else None)(nodefeatures(cluster)),
                         what="a NodeFeature for each node with an nfd-worker")
    h100 = published[H100_NODE]
    assert h100["metadata"]["labels"] == {"nfd.node.kubernetes.io/node-name": H100_NODE}
    assert h100["metadata"]["annotations"] == {"nfd.node.kubernetes.io/worker.version": "v0.19.0"}
    worker = on[H100_NODE]["metadata"]
    assert h100["metadata"]["ownerReferences"] == [
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "gpu-operator-node-feature-discovery-worker",
         "uid": worker["ownerReferences"][0]["uid"], "controller": True, "blockOwnerDeletion": False},
        {"apiVersion": "v1", "kind": "Pod", "name": worker["name"], "uid": worker["uid"]}]
    features = h100["spec"]["features"]
    assert features["instances"]["pci.device"]["elements"] == \
        [{"attributes": {"class": "0302", "vendor": "10de", "device": "2330"}}] * 8
    assert set(features["attributes"]) == {"kernel.version", "system.osrelease"}
    assert "pci.device" not in nodefeatures(cluster)["gpulab-worker"]["spec"]["features"]["instances"]
    for name, feature in published.items():
        labels = node(cluster, name)["metadata"]["labels"]
        assert feature["spec"]["labels"] == {k: v for k, v in labels.items()
                                             if k.startswith("feature.node.kubernetes.io/")}, name
    assert h100["spec"]["labels"]["feature.node.kubernetes.io/pci-10de.present"] == "true"
    assert h100["spec"]["labels"]["feature.node.kubernetes.io/kernel-version.full"] == \
        features["attributes"]["kernel.version"]["elements"]["full"]
    printed = cluster.kubectl("get", "nodefeatures", "-n", "gpu-operator").stdout.splitlines()
    assert printed[0].split() == ["NAME", "AGE"] and len(printed) == 5


def test_uninstall_removes_capacity_and_labels(cluster, installed):
    wait_for(lambda: allocatable(cluster, H100_NODE) is not None, timeout=90, what="capacity")
    out = cluster.gpulab("uninstall", "gpu-operator", timeout=180)
    assert out.stdout.strip() == 'release "gpu-operator" uninstalled'
    wait_for(lambda: not any(k.startswith("nvidia.com/") for k in node(cluster, H100_NODE)["status"]["capacity"]),
             timeout=60, what="nvidia.com resources to leave the node")
    labels = node(cluster, H100_NODE)["metadata"]["labels"]
    assert "nvidia.com/gpu.product" not in labels and "feature.node.kubernetes.io/pci-10de.present" not in labels
    assert cluster.kubectl("get", "clusterpolicy", check=False).stdout == ""
    # The NodeFeatures go with their owners, the worker DaemonSet and its pods (the garbage collector).
    wait_for(lambda: nodefeatures(cluster) == {}, what="the NodeFeatures to be collected")
    # The prune ran as the chart's post-delete hook Job, which completed and was then deleted (hook-succeeded).
    prune = "gpu-operator-node-feature-discovery-prune"
    events = cluster.kubectl("get", "events", "-n", "gpu-operator", "--field-selector",
                             f"involvedObject.kind=Job,involvedObject.name={prune}",
                             "-o", "custom-columns=REASON:.reason,MESSAGE:.message", "--no-headers").stdout
    created, completed = [line.split(None, 1) for line in events.splitlines()]
    assert created[0] == "SuccessfulCreate" and created[1].startswith(f"Created pod: {prune}-"), events
    assert completed == ["Completed", "Job completed"], events
    for kind in ("job", "serviceaccount"):
        assert cluster.kubectl("get", kind, "-n", "gpu-operator", prune, check=False).returncode == 1
    for kind in ("clusterrole", "clusterrolebinding"):
        assert cluster.kubectl("get", kind, prune, check=False).returncode == 1
    missing = cluster.gpulab("uninstall", "gpu-operator", check=False)
    assert missing.stderr.strip() == "Error: uninstall: Release not loaded: gpu-operator: release: not found"
