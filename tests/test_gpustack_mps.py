"""MPS, the device plugin's third sharing strategy, as a learner drives it: kubectl and the official client.

One embedded cluster (a CPU node, a 1x H100 node, a 1x A100 node), the operator installed, then the device
plugin config of the course (the ConfigMap named by ``devicePlugin.config``) with an ``mps`` entry chosen on
the A100 node by its ``nvidia.com/device-plugin.config`` label. Upstream sources: docs/fidelity.md#mps
(k8s-device-plugin v0.17+ ``cmd/mps-control-daemon``, ``internal/plugin/mps.go``; gpu-operator
``assets/state-mps-control-daemon``).
"""
from __future__ import annotations

import json

import pytest

from .conftest import start_cluster, stop_cluster, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("gpustack-mps")]

H100 = "gpulab-worker2"
A100 = "gpulab-worker3"
DAEMON = "nvidia-device-plugin-mps-control-daemon"
TOPOLOGY = """nodes:
- {name: "{cluster}-control-plane", role: control-plane, cpu: "4", memory: 8Gi,
   taints: [{key: node-role.kubernetes.io/control-plane, effect: NoSchedule}]}
- {name: "{cluster}-worker", cpu: "16", memory: 64Gi}
- {name: "{cluster}-worker2", cpu: "64", memory: 512Gi, gpu: {model: NVIDIA H100 80GB HBM3, count: 1}}
- {name: "{cluster}-worker3", cpu: "32", memory: 256Gi, gpu: {model: NVIDIA A100-SXM4-40GB, count: 1}}
"""
SHARING = """apiVersion: v1
kind: ConfigMap
metadata: {name: sharing-config, namespace: gpu-operator}
data:
  default: |-
    version: v1
  a100-mps: |-
    version: v1
    sharing:
      mps:
        resources:
        - name: nvidia.com/gpu
          replicas: 4
"""
CLIENT = """apiVersion: v1
kind: Pod
metadata: {name: %(name)s}
spec:
  nodeSelector: {kubernetes.io/hostname: gpulab-worker3}
  containers:
  - name: client
    image: nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04
    command: [sleep, infinity]
    resources: {limits: {nvidia.com/gpu: %(gpus)d}}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gpustack-mps")
    (tmp / "topology.yaml").write_text(TOPOLOGY)
    c = start_cluster(tmp, topology=tmp / "topology.yaml")
    c.gpulab("install", "gpu-operator", timeout=180)
    c.kubectl("apply", "-f", "-", input=SHARING)
    c.kubectl("patch", "clusterpolicies.nvidia.com/cluster-policy", "--type", "merge", "-p",
              '{"spec":{"devicePlugin":{"config":{"name":"sharing-config","default":"default"}}}}')
    c.kubectl("label", "node", A100, "nvidia.com/device-plugin.config=a100-mps")
    wait_for(lambda: allocatable(c, A100) == "4", timeout=300, what="the A100's MPS replicas")
    wait_for(lambda: allocatable(c, H100) == "1" and
             node(c, H100)["metadata"]["labels"].get("nvidia.com/gpu.replicas") == "1",
             timeout=300, what="the H100's GPU, advertised and labelled")
    yield c
    stop_cluster(c)


def node(cluster, name: str) -> dict:
    return json.loads(cluster.kubectl("get", "node", name, "-o", "json").stdout)


def allocatable(cluster, name: str) -> str | None:
    return node(cluster, name)["status"].get("allocatable", {}).get("nvidia.com/gpu")


def daemon_pod(cluster) -> dict | None:
    pods = json.loads(cluster.kubectl("get", "pods", "-n", "gpu-operator", "-l", f"app={DAEMON}",
                                      "-o", "json").stdout)["items"]
    running = [p for p in pods if p["status"].get("phase") == "Running"]
    return running[0] if running else None


def test_the_a100_advertises_mps_replicas_and_the_h100_is_untouched(cluster):
    a100 = node(cluster, A100)["metadata"]["labels"]
    assert {k: a100[k] for k in ("nvidia.com/gpu.sharing-strategy", "nvidia.com/gpu.replicas",
                                 "nvidia.com/gpu.product", "nvidia.com/mps.capable", "nvidia.com/gpu.count")} == {
        "nvidia.com/gpu.sharing-strategy": "mps", "nvidia.com/gpu.replicas": "4",
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-SHARED", "nvidia.com/mps.capable": "true",
        "nvidia.com/gpu.count": "1"}
    h100 = node(cluster, H100)["metadata"]["labels"]
    assert (h100["nvidia.com/gpu.sharing-strategy"], h100["nvidia.com/gpu.replicas"],
            h100["nvidia.com/mps.capable"], h100["nvidia.com/gpu.product"]) == (
        "none", "1", "false", "NVIDIA-H100-80GB-HBM3")
    # The config change restarts every node's device plugin; the H100's re-registers with its one whole GPU.
    wait_for(lambda: allocatable(cluster, H100) == "1", timeout=120, what="the H100's one whole GPU")
    # The official client reads the same capacity.
    from kubernetes import client as k8s

    nodes = k8s.CoreV1Api(cluster.client()).read_node(A100)
    assert nodes.status.capacity["nvidia.com/gpu"] == "4"


def test_the_control_daemon_runs_only_where_mps_is_selected_and_logs_its_limits(cluster):
    ds = json.loads(cluster.kubectl("get", "daemonset", DAEMON, "-n", "gpu-operator", "-o", "json").stdout)
    assert ds["metadata"]["labels"] == {"app": DAEMON}
    assert ds["spec"]["template"]["spec"]["nodeSelector"] == {
        "nvidia.com/gpu.deploy.device-plugin": "true", "nvidia.com/mps.capable": "true"}
    pod = wait_for(lambda: daemon_pod(cluster), timeout=120, what="the MPS control daemon's pod")
    assert pod["spec"]["nodeName"] == A100
    wait_for(lambda: json.loads(cluster.kubectl("get", "daemonset", DAEMON, "-n", "gpu-operator", "-o", "json")
                                .stdout)["status"].get("numberReady") == 1, what="one ready daemon")
    logs = wait_for(lambda: cluster.kubectl("logs", "-n", "gpu-operator", pod["metadata"]["name"],
                                            "-c", "mps-control-daemon-ctr").stdout.count("Cmd:") >= 2 and
                    cluster.kubectl("logs", "-n", "gpu-operator", pod["metadata"]["name"],
                                    "-c", "mps-control-daemon-ctr").stdout, what="the daemon's limits in its log")
    assert '"Staring MPS daemon" resource="nvidia.com/gpu"' in logs
    assert "Starting control daemon using socket /mps/nvidia.com/gpu/pipe/control" in logs
    # 40960 MiB over 4 replicas, 100 % over 4 replicas.
    assert "Cmd:set_default_device_pinned_mem_limit 0 10240M" in logs
    assert "Cmd:set_default_active_thread_percentage 25" in logs
    from kubernetes import client as k8s

    ds_by_client = k8s.AppsV1Api(cluster.client()).read_namespaced_daemon_set(DAEMON, "gpu-operator")
    assert ds_by_client.status.desired_number_scheduled == 1


def test_a_client_gets_the_pipe_directory_and_shm(cluster):
    cluster.kubectl("apply", "-f", "-", input=CLIENT % {"name": "mps-client", "gpus": 1})
    cluster.kubectl("wait", "--for=condition=Ready", "pod/mps-client", "--timeout=120s")
    env = cluster.kubectl("exec", "mps-client", "--", "env").stdout
    assert "CUDA_MPS_PIPE_DIRECTORY=/mps/nvidia.com/gpu/pipe" in env.splitlines()
    probe = cluster.kubectl("exec", "mps-client", "--", "sh", "-c",
                            "test -d /mps/nvidia.com/gpu/pipe && test -d /dev/shm && echo both directories").stdout
    assert probe == "both directories\n"
    smi = cluster.kubectl("exec", "mps-client", "--", "nvidia-smi").stdout
    # The whole GPU (NVML knows nothing of the daemon's memory limit), in the compute mode the daemon set.
    assert "NVIDIA A100-SXM4-40GB" in smi and "/  40960MiB |" in smi
    assert "E. Process |" in smi
    cluster.kubectl("delete", "pod", "mps-client", "--wait=false")


def test_a_client_asking_for_two_shares_is_refused(cluster):
    cluster.kubectl("apply", "-f", "-", input=CLIENT % {"name": "mps-greedy", "gpus": 2})
    pod = wait_for(lambda: (lambda p: p if p["status"].get("reason") else None)(json.loads(
        cluster.kubectl("get", "pod", "mps-greedy", "-o", "json").stdout)), what="the refusal")
    assert pod["status"]["reason"] == "UnexpectedAdmissionError"
    assert 'maximum request size for shared resources is 1; found 2' in pod["status"]["message"]
    cluster.kubectl("delete", "pod", "mps-greedy", "--wait=false")


TRAINER = """apiVersion: v1
kind: Pod
metadata: {name: %(name)s}
spec:
  nodeSelector: {kubernetes.io/hostname: gpulab-worker3}
  restartPolicy: Never
  containers:
  - name: train
    image: nvcr.io/nvidia/pytorch:24.05-py3
    command: [python, train.py]
    resources: {limits: {nvidia.com/gpu: 1}}
"""


def test_a_trainer_over_its_memory_share_fails_as_cuda_does(cluster):
    # The workload model gives a training process 30 % of the GPU: 12288 MiB of 40960, over a quarter's 10240 MiB.
    cluster.kubectl("apply", "-f", "-", input=TRAINER % {"name": "mps-trainer"})
    pod = wait_for(lambda: (lambda p: p if p["status"].get("phase") == "Failed" else None)(json.loads(
        cluster.kubectl("get", "pod", "mps-trainer", "-o", "json").stdout)), timeout=120, what="the trainer failing")
    state = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (state["reason"], state["exitCode"]) == ("Error", 1)
    assert "RuntimeError: CUDA error: out of memory" in cluster.kubectl("logs", "mps-trainer").stdout
    cluster.kubectl("delete", "pod", "mps-trainer", "--wait=false")


def test_dcgm_shows_the_clients_on_their_one_gpu(cluster):
    for name in ("mps-a", "mps-b"):
        cluster.kubectl("apply", "-f", "-", input=CLIENT % {"name": name, "gpus": 1})
        cluster.kubectl("wait", "--for=condition=Ready", f"pod/{name}", "--timeout=120s")
    exporter = json.loads(cluster.kubectl("get", "pods", "-n", "gpu-operator", "-l", "app=nvidia-dcgm-exporter",
                                          "--field-selector", f"spec.nodeName={A100}", "-o", "json").stdout)["items"][0]
    path = f"/api/v1/namespaces/gpu-operator/pods/{exporter['metadata']['name']}:9400/proxy/metrics"

    def util_lines():
        text = cluster.kubectl("get", "--raw", path, check=False).stdout
        lines = [line for line in text.splitlines() if line.startswith("DCGM_FI_DEV_GPU_UTIL{")]
        return lines if lines and 'pod="mps-b"' in lines[0] else None

    lines = wait_for(util_lines, timeout=120, what="the exporter naming the second client")
    # Both clients hold replicas of the one GPU; dcgm-exporter names the last one it maps to the GPU.
    assert len(lines) == 1 and 'gpu="0"' in lines[0] and lines[0].endswith(" 0")
    a_env = cluster.kubectl("exec", "mps-a", "--", "env").stdout
    b_env = cluster.kubectl("exec", "mps-b", "--", "env").stdout
    visible = [line for line in a_env.splitlines() if line.startswith("NVIDIA_VISIBLE_DEVICES=")]
    assert visible and visible[0] in b_env.splitlines()       # the same physical GPU
    for name in ("mps-a", "mps-b"):
        cluster.kubectl("delete", "pod", name, "--wait=false")


def test_leaving_mps_stops_the_daemon(cluster):
    cluster.kubectl("label", "node", A100, "nvidia.com/device-plugin.config=default", "--overwrite")
    wait_for(lambda: allocatable(cluster, A100) == "1", timeout=300, what="the A100 back to one GPU")
    wait_for(lambda: node(cluster, A100)["metadata"]["labels"].get("nvidia.com/mps.capable") == "false",
             what="mps.capable=false")
    wait_for(lambda: daemon_pod(cluster) is None, timeout=120, what="the daemon's pod gone")
