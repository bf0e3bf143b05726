"""What a learner sees of the GPUs' use: dcgm-exporter's metrics and nvidia-smi inside pods, through kubectl.

One embedded cluster (a CPU node, a 2x H100 node, a 1x A100 node time-sliced 2 ways, later MIG on the H100),
the operator installed. Metrics are read as on a real cluster, through the service proxy and
``kubectl port-forward``, and compared with dcgm-exporter 4.5.3-4.8.2's default counters
(etc/default-counters.csv) and label template (internal/pkg/rendermetrics/render_metrics.go); nvidia-smi
runs by ``kubectl exec``. Upstream sources: docs/fidelity.md#gpu-observe.
"""
from __future__ import annotations

import json
import re
import socket
import subprocess
import urllib.request

import pytest

from .conftest import start_cluster, stop_cluster, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("gpu-observe")]

H100 = "gpulab-worker2"
A100 = "gpulab-worker3"
PROXY = "/api/v1/namespaces/gpu-operator/services/nvidia-dcgm-exporter:gpu-metrics/proxy/metrics"
TOPOLOGY = """nodes:
- {name: "{cluster}-control-plane", role: control-plane, cpu: "4", memory: 8Gi,
   taints: [{key: node-role.kubernetes.io/control-plane, effect: NoSchedule}]}
- {name: "{cluster}-worker", cpu: "16", memory: 64Gi}
- {name: "{cluster}-worker2", cpu: "64", memory: 512Gi, gpu: {model: NVIDIA H100 80GB HBM3, count: 2}}
- {name: "{cluster}-worker3", cpu: "32", memory: 256Gi, gpu: {model: NVIDIA A100-SXM4-40GB, count: 1}}
"""
TIME_SLICING = """apiVersion: v1
kind: ConfigMap
metadata: {name: time-slicing-config, namespace: gpu-operator}
data:
  default: |-
    version: v1
  a100: |-
    version: v1
    sharing:
      timeSlicing:
        resources:
        - name: nvidia.com/gpu
          replicas: 2
"""
# dcgm-exporter 4.5.3-4.8.2 etc/default-counters.csv: every counter it collects, with its Prometheus type.
DEFAULT_COUNTERS = {
    "DCGM_FI_DEV_SM_CLOCK": "gauge", "DCGM_FI_DEV_MEM_CLOCK": "gauge", "DCGM_FI_DEV_MEMORY_TEMP": "gauge",
    "DCGM_FI_DEV_GPU_TEMP": "gauge", "DCGM_FI_DEV_POWER_USAGE": "gauge",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "counter", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": "counter",
    "DCGM_FI_DEV_GPU_UTIL": "gauge", "DCGM_FI_DEV_MEM_COPY_UTIL": "gauge", "DCGM_FI_DEV_ENC_UTIL": "gauge",
    "DCGM_FI_DEV_DEC_UTIL": "gauge", "DCGM_FI_DEV_XID_ERRORS": "gauge", "DCGM_FI_DEV_FB_FREE": "gauge",
    "DCGM_FI_DEV_FB_USED": "gauge", "DCGM_FI_DEV_FB_RESERVED": "gauge",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": "counter", "DCGM_FI_DEV_VGPU_LICENSE_STATUS": "gauge",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": "counter", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": "counter",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": "gauge", "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "gauge",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "gauge", "DCGM_FI_PROF_DRAM_ACTIVE": "gauge",
    "DCGM_FI_PROF_PCIE_TX_BYTES": "gauge", "DCGM_FI_PROF_PCIE_RX_BYTES": "gauge",
}
SAMPLE = re.compile(r'^(\w+)\{((?:\w+="[^"]*",?)*)\} (\S+)$')


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gpu-observe")
    (tmp / "topology.yaml").write_text(TOPOLOGY)
    c = start_cluster(tmp, topology=tmp / "topology.yaml")
    c.gpulab("install", "gpu-operator", "--set", "mig.strategy=mixed", timeout=180)
    c.kubectl("apply", "-f", "-", input=TIME_SLICING)
    c.kubectl("patch", "clusterpolicies.nvidia.com/cluster-policy", "--type", "merge", "-p",
              '{"spec":{"devicePlugin":{"config":{"name":"time-slicing-config"}}}}')
    c.kubectl("label", "node", A100, "nvidia.com/device-plugin.config=a100")
    wait_for(lambda: node_labels(c, A100).get("nvidia.com/gpu.replicas") == "2", timeout=300, what="time-slicing")
    yield c
    stop_cluster(c)


def node_labels(cluster, name: str) -> dict:
    return json.loads(cluster.kubectl("get", "node", name, "-o", "json").stdout)["metadata"]["labels"]


def node_allocatable(cluster, name: str) -> dict:
    return json.loads(cluster.kubectl("get", "node", name, "-o", "json").stdout)["status"].get("allocatable") or {}


def samples(text: str) -> list[tuple[str, dict, str]]:
    out = []
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        m = SAMPLE.match(line)
        assert m, f"not a Prometheus sample: {line!r}"
        out.append((m.group(1), dict(re.findall(r'(\w+)="([^"]*)"', m.group(2))), m.group(3)))
    return out


def exporter_pod(cluster, node: str) -> str:
    pods = json.loads(cluster.kubectl("get", "pods", "-n", "gpu-operator", "-l", "app=nvidia-dcgm-exporter",
                                      "--field-selector", f"spec.nodeName={node}", "-o", "json").stdout)["items"]
    running = [p["metadata"]["name"] for p in pods
               if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]
    return running[0] if running else ""


def scrape(cluster, node: str, *, showing: str = "") -> str:
    """/metrics of the exporter on ``node``, through the API server's pod proxy, once it shows ``showing`` (the
    exporter, like the real one, reports what it last saw of the node's pods)."""
    def once():
        pod = exporter_pod(cluster, node)
        raw = cluster.kubectl("get", "--raw", f"/api/v1/namespaces/gpu-operator/pods/{pod}:9400/proxy/metrics",
                              check=False) if pod else None
        return raw.stdout if raw is not None and raw.returncode == 0 and showing in raw.stdout else None
    return wait_for(once, timeout=180, what=f"dcgm-exporter metrics on {node} showing {showing!r}")


def value(text: str, field: str, **labels) -> float:
    found = [v for name, lab, v in samples(text) if name == field and all(lab.get(k) == w for k, w in labels.items())]
    assert len(found) == 1, f"{field} {labels}: {found}"
    return float(found[0])


def run_pod(cluster, name: str, *, image: str, command: list[str], resource: str = "nvidia.com/gpu",
            node: str = H100, count: int = 1) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"nodeSelector": {"kubernetes.io/hostname": node},
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                    "containers": [{"name": "main", "image": image, "command": command,
                                    "resources": {"limits": {resource: count}}}]}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(pod))
    cluster.kubectl("wait", "--for=condition=Ready", f"pod/{name}", "--timeout=120s")


def test_metrics_names_types_and_labels_match_the_default_counters(cluster):
    wait_for(lambda: exporter_pod(cluster, H100) and exporter_pod(cluster, A100), timeout=180, what="exporters")
    text = wait_for(lambda: cluster.kubectl("get", "--raw", PROXY, check=False).stdout, timeout=60,
                    what="metrics through the service proxy")
    types = dict(re.findall(r"^# TYPE (\w+) (\w+)$", text, re.M))
    assert types == DEFAULT_COUNTERS
    helps = dict(re.findall(r"^# HELP (\w+) (.+)$", text, re.M))
    assert helps["DCGM_FI_DEV_FB_USED"] == "Framebuffer memory used (in MiB)."
    assert helps["DCGM_FI_DEV_POWER_USAGE"] == "Power draw (in W)."
    name, labels, _ = samples(text)[0]
    assert list(labels)[:5] == ["gpu", "UUID", "pci_bus_id", "device", "modelName"]
    assert labels["Hostname"] in (H100, A100)
    assert re.fullmatch(r"\d+\.\d+\.\d+", labels["DCGM_FI_DRIVER_VERSION"])
    assert re.fullmatch(r"GPU-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", labels["UUID"])
    # Idle GPUs read 0; doubles print with %f, integers with %d.
    assert re.search(r'^DCGM_FI_DEV_GPU_UTIL\{gpu="0",.*\} 0$', text, re.M)
    assert re.search(r'^DCGM_FI_PROF_GR_ENGINE_ACTIVE\{gpu="0",.*\} 0\.000000$', text, re.M)
    assert re.search(r'^DCGM_FI_DEV_POWER_USAGE\{.*\} \d+\.\d{6}$', text, re.M)
    assert "pod=" not in text


def test_port_forward_reads_the_same_exporter(cluster):
    port = _free_port()
    forward = subprocess.Popen(["kubectl", "port-forward", "-n", "gpu-operator", "svc/nvidia-dcgm-exporter",
                                f"{port}:9400"], env=cluster.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        def get():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
                    return response.headers.get("Content-Type"), response.read().decode()
            except OSError:
                return None
        content_type, text = wait_for(get, timeout=30, what="port-forward")
    finally:
        forward.terminate()
        forward.wait(10)
    assert content_type == "text/plain; version=0.0.4; charset=utf-8"
    assert value(text, "DCGM_FI_DEV_FB_USED", gpu="0") == 0
    assert value(text, "DCGM_FI_DEV_FB_FREE", gpu="0") in (81559, 40960)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_training_pod_keeps_its_gpu_busy_and_is_named_on_its_metrics(cluster):
    run_pod(cluster, "trainer", image="nvcr.io/nvidia/pytorch:24.05-py3", command=["python", "train.py"])
    run_pod(cluster, "sleeper", image="nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", command=["sleep", "infinity"])
    text = scrape(cluster, H100, showing='pod="sleeper"')
    busy = {lab["gpu"] for name, lab, v in samples(text) if name == "DCGM_FI_DEV_GPU_UTIL" and v == "100"}
    assert len(busy) == 1
    gpu = busy.pop()
    idle = "1" if gpu == "0" else "0"
    assert value(text, "DCGM_FI_DEV_GPU_UTIL", gpu=gpu, pod="trainer", namespace="default", container="main") == 100
    assert value(text, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", gpu=gpu) == 1.0
    assert value(text, "DCGM_FI_DEV_FB_USED", gpu=gpu) > 0
    assert value(text, "DCGM_FI_DEV_POWER_USAGE", gpu=gpu) > value(text, "DCGM_FI_DEV_POWER_USAGE", gpu=idle)
    # The sleeping pod holds the other GPU: named on it, and it reads 0.
    assert value(text, "DCGM_FI_DEV_GPU_UTIL", gpu=idle, pod="sleeper") == 0
    assert value(text, "DCGM_FI_DEV_FB_USED", gpu=idle) == 0


def test_nvidia_smi_in_a_pod_shows_its_gpu_and_memory_in_use(cluster):
    out = cluster.kubectl("exec", "trainer", "--", "nvidia-smi").stdout
    assert re.search(r"\|\s+[1-9]\d*MiB /\s+81559MiB \|\s+100%\s+Default \|", out), out
    assert "No running processes found" in out
    assert out.count("NVIDIA H100 80GB HBM3") == 1    # the pod's one GPU, renumbered 0
    listed = cluster.kubectl("exec", "trainer", "--", "nvidia-smi", "-L").stdout
    assert re.fullmatch(r"GPU 0: NVIDIA H100 80GB HBM3 \(UUID: GPU-[0-9a-f-]{36}\)\n", listed)
    csv = cluster.kubectl("exec", "trainer", "--", "nvidia-smi",
                          "--query-gpu=index,name,memory.total,memory.used,utilization.gpu", "--format=csv").stdout
    header, row = csv.splitlines()
    assert header == "index, name, memory.total [MiB], memory.used [MiB], utilization.gpu [%]"
    assert re.fullmatch(r"0, NVIDIA H100 80GB HBM3, 81559 MiB, [1-9]\d* MiB, 100 %", row), row
    bare = cluster.kubectl("exec", "sleeper", "--", "nvidia-smi", "--query-gpu=memory.used,utilization.gpu",
                           "--format=csv,noheader,nounits").stdout
    assert bare == "0, 0\n"
    bad = cluster.kubectl("exec", "sleeper", "--", "nvidia-smi", "--query-gpu=bogus", "--format=csv", check=False)
    assert bad.returncode == 2 and 'Field "bogus" is not a valid field to query.' in bad.stdout


def test_nvidia_smi_is_not_there_without_a_gpu(cluster):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "cpu-only"},
           "spec": {"nodeSelector": {"kubernetes.io/hostname": "gpulab-worker"},
                    "containers": [{"name": "main", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                                    "command": ["sleep", "infinity"]}]}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(pod))
    cluster.kubectl("wait", "--for=condition=Ready", "pod/cpu-only", "--timeout=120s")
    result = cluster.kubectl("exec", "cpu-only", "--", "nvidia-smi", check=False)
    assert result.returncode != 0
    assert "executable file not found in $PATH" in result.stderr + result.stdout


def test_time_sliced_replicas_share_one_gpu(cluster):
    run_pod(cluster, "shared-a", image="nvcr.io/nvidia/pytorch:24.05-py3", command=["python", "train.py"], node=A100)
    run_pod(cluster, "shared-b", image="nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", command=["sleep", "infinity"],
            node=A100)
    text = scrape(cluster, A100, showing='pod="shared-')
    gpus = [lab for name, lab, _ in samples(text) if name == "DCGM_FI_DEV_GPU_UTIL"]
    assert len(gpus) == 1 and gpus[0]["pod"] in ("shared-a", "shared-b")   # one GPU, one pod named on it
    assert value(text, "DCGM_FI_DEV_GPU_UTIL", gpu="0") == 100
    used = value(text, "DCGM_FI_DEV_FB_USED", gpu="0")
    # The idle neighbour sees the whole GPU, busy, with the trainer's memory in use.
    csv = cluster.kubectl("exec", "shared-b", "--", "nvidia-smi", "--query-gpu=memory.used,utilization.gpu",
                          "--format=csv,noheader,nounits").stdout
    assert csv == f"{int(used)}, 100\n"


def test_a_mig_slice_has_its_own_memory_and_instance_labels(cluster):
    cluster.kubectl("delete", "pod", "trainer", "sleeper", "--ignore-not-found", "--grace-period=1", timeout=120)
    cluster.kubectl("label", "node", H100, "nvidia.com/mig.config=all-1g.10gb", "--overwrite")
    # Until the MIG manager reacts, the state label still reads the previous config's "success": wait for what the
    # new layout gives, its 14 slices advertised by the restarted device plugin (or the manager's "failed").
    wait_for(lambda: node_allocatable(cluster, H100).get("nvidia.com/mig-1g.10gb") == "14"
             or node_labels(cluster, H100).get("nvidia.com/mig.config.state") == "failed",
             timeout=300, what="all-1g.10gb applied and its slices advertised")
    assert node_labels(cluster, H100).get("nvidia.com/mig.config.state") == "success", \
        cluster.kubectl("get", "events", "-A", "--field-selector", f"involvedObject.name={H100}").stdout
    wait_for(lambda: exporter_pod(cluster, H100), timeout=180, what="the exporter back")
    run_pod(cluster, "slice", image="nvcr.io/nvidia/pytorch:24.05-py3", command=["python", "train.py"],
            resource="nvidia.com/mig-1g.10gb")
    text = scrape(cluster, H100, showing='pod="slice"')
    instances = [lab for name, lab, _ in samples(text) if name == "DCGM_FI_DEV_FB_USED"]
    assert len(instances) == 14 and all("GPU_I_PROFILE" in lab and lab["GPU_I_PROFILE"] == "1g.10gb"
                                        for lab in instances)
    mine = [lab for lab in instances if lab.get("pod") == "slice"]
    assert len(mine) == 1
    used = value(text, "DCGM_FI_DEV_FB_USED", pod="slice", GPU_I_ID=mine[0]["GPU_I_ID"], gpu=mine[0]["gpu"])
    free = value(text, "DCGM_FI_DEV_FB_FREE", pod="slice", GPU_I_ID=mine[0]["GPU_I_ID"], gpu=mine[0]["gpu"])
    assert used + free == 9984 and used > 15
    assert not [lab for name, lab, _ in samples(text) if name == "DCGM_FI_DEV_GPU_UTIL"]   # not on MIG GPUs
    out = cluster.kubectl("exec", "slice", "--", "nvidia-smi").stdout
    assert out.count("MiB /  9984MiB") == 1 and f"{int(used)}MiB /  9984MiB" in out
    assert re.search(r"\|\s+N/A\s+\|\s+N/A\s+Default \|", out)
