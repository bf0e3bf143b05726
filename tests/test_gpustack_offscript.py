"""What learners type off the script on a GPU Operator cluster, through the real kubectl (embedded engine).

``kubectl exec`` into the driver pod runs the driver's own ``nvidia-smi`` (its table, ``topo -m``, ``-q -d
MEMORY``) and ends; a program the driver image lacks fails as runc says instead of hanging. Every operand logs
its start as the real component does: the driver container's install progress (gpu-driver-container
``nvidia-driver``), the device plugin's config and registration (k8s-device-plugin), GFD's label passes, the
toolkit installer's and the MIG manager's lines, dcgm-exporter's ``Starting webserver``. A GPU container has the
driver's ``/proc/driver/nvidia/version`` and a ``/dev`` with the runtime's default devices plus the NVIDIA nodes
the toolkit injects. On the upstream engine KWOK runs no containers (``gpulab/learner/nodeagent.py``'s note), so
this module runs on the embedded engine only. Upstream sources: docs/fidelity.md#gpu-offscript.
"""
from __future__ import annotations

import json
import re

import pytest

from .conftest import start_cluster, stop_cluster, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("gpu-offscript")]

H100 = "gpulab-worker2"
A100 = "gpulab-worker3"
TOPOLOGY = """nodes:
- {name: "{cluster}-control-plane", role: control-plane, cpu: "4", memory: 8Gi,
   taints: [{key: node-role.kubernetes.io/control-plane, effect: NoSchedule}]}
- {name: "{cluster}-worker", cpu: "16", memory: 64Gi}
- {name: "{cluster}-worker2", cpu: "64", memory: 512Gi, gpu: {model: NVIDIA H100 80GB HBM3, count: 2}}
- {name: "{cluster}-worker3", cpu: "32", memory: 256Gi, gpu: {model: NVIDIA A100-SXM4-40GB, count: 1}}
"""
GPU_POD = f"""apiVersion: v1
kind: Pod
metadata: {{name: cuda}}
spec:
  nodeSelector: {{kubernetes.io/hostname: {H100}}}
  containers:
  - name: main
    image: nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04
    command: [sleep, "3600"]
    resources: {{limits: {{nvidia.com/gpu: "2"}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: plain}}
spec:
  nodeSelector: {{kubernetes.io/hostname: {H100}}}
  containers:
  - name: main
    image: nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04
    command: [sleep, "3600"]
"""
RUNTIME_DEVICES = {"null", "zero", "full", "random", "urandom", "tty", "ptmx", "pts", "shm", "mqueue"}
NVIDIA_NODES = {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gpu-offscript")
    topology = tmp / "topology.yaml"
    topology.write_text(TOPOLOGY)
    c = start_cluster(tmp, topology=topology)
    c.gpulab("install", "gpu-operator", timeout=180)
    wait_for(lambda: all(pod_on(c, app, node) for app in ("nvidia-driver-daemonset", "nvidia-device-plugin-daemonset",
                                                          "nvidia-dcgm-exporter", "gpu-feature-discovery",
                                                          "nvidia-mig-manager", "nvidia-container-toolkit-daemonset")
                         for node in (H100, A100)), timeout=120, what="the operands running")
    yield c
    stop_cluster(c)


def pod_on(cluster, app: str, node: str) -> str | None:
    """The running pod of ``app`` on ``node``, or None."""
    items = json.loads(cluster.kubectl("get", "pods", "-n", "gpu-operator", "-l", f"app={app}", "--field-selector",
                                       f"spec.nodeName={node},status.phase=Running", "-o", "json").stdout)["items"]
    return items[0]["metadata"]["name"] if items else None


def driver_exec(cluster, node: str, *argv: str, check: bool = True):
    return cluster.kubectl("exec", "-n", "gpu-operator", pod_on(cluster, "nvidia-driver-daemonset", node), "--",
                           *argv, check=check, timeout=30)


def driver_version(cluster) -> str:
    ds = json.loads(cluster.kubectl("get", "ds", "-n", "gpu-operator", "nvidia-driver-daemonset", "-o", "json").stdout)
    image = ds["spec"]["template"]["spec"]["containers"][0]["image"]
    return image.rsplit(":", 1)[1].split("-")[0]


def logs(cluster, app: str, node: str) -> str:
    return cluster.kubectl("logs", "-n", "gpu-operator", pod_on(cluster, app, node)).stdout


# --- kubectl exec into the driver pod ----------------------------------------------------------------------------
def test_nvidia_smi_in_the_driver_daemonset_prints_the_nodes_gpus_and_ends(cluster):
    out = cluster.kubectl("exec", "-n", "gpu-operator", "ds/nvidia-driver-daemonset", "--", "nvidia-smi",
                          timeout=30).stdout
    version = driver_version(cluster)
    assert f"| NVIDIA-SMI {version}" in out and f"Driver Version: {version}" in out
    rows = re.findall(r"^\|\s+(\d+)  (NVIDIA [^|]+?)\s+(?:On|Off)\s+\|", out, re.M)
    assert rows in ([("0", "NVIDIA H100 80GB HBM3"), ("1", "NVIDIA H100 80GB HBM3")],
                    [("0", "NVIDIA A100-SXM4-40GB")])
    assert "No running processes found" in out


def test_a_program_the_driver_image_lacks_fails_as_runc_says(cluster):
    proc = driver_exec(cluster, H100, "nvidia-foo", check=False)
    assert proc.returncode != 0
    assert 'exec: "nvidia-foo": executable file not found in $PATH' in proc.stderr


def test_topo_matrix_links_sxm_gpus_by_nvlink(cluster):
    out = driver_exec(cluster, H100, "nvidia-smi", "topo", "-m").stdout
    lines = out.split("\n")
    assert lines[0] == "\t\x1b[4mGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m"
    assert lines[1] == "GPU0\t X \tNV18\t0-15,32-47\t0\t\tN/A"
    assert lines[2] == "GPU1\tNV18\t X \t16-31,48-63\t1\t\tN/A"
    assert "  NV#  = Connection traversing a bonded set of # NVLinks" in lines
    assert driver_exec(cluster, A100, "nvidia-smi", "topo", "-m").stdout.split("\n")[1] == \
        "GPU0\t X \t0-15,16-31\t0\t\tN/A"


def test_query_memory_shows_each_gpus_framebuffer_and_bar1(cluster):
    out = driver_exec(cluster, H100, "nvidia-smi", "-q", "-d", "MEMORY").stdout
    assert out.startswith("\n==============NVSMI LOG==============\n\nTimestamp                                 : ")
    assert f"Driver Version                            : {driver_version(cluster)}\n" in out
    assert "Attached GPUs                             : 2\n" in out
    first = out[out.index("GPU 00000000:53:00.0"):out.index("GPU 00000000:64:00.0")]
    assert first.split("\n")[1:8] == [
        "    FB Memory Usage",
        "        Total                             : 81559 MiB",
        "        Reserved                          : 551 MiB",
        "        Used                              : 0 MiB",
        "        Free                              : 81008 MiB",
        "    BAR1 Memory Usage",
        "        Total                             : 131072 MiB"]


# --- every operand's log -------------------------------------------------------------------------------------------
def test_the_driver_container_logs_its_install_progress(cluster):
    kernel = json.loads(cluster.kubectl("get", "node", H100, "-o", "json").stdout)["status"]["nodeInfo"]["kernelVersion"]
    out = logs(cluster, "nvidia-driver-daemonset", H100)
    assert f"Starting installation of NVIDIA driver version {driver_version(cluster)} for Linux kernel version " \
           f"{kernel}\n" in out
    steps = ["DRIVER_ARCH is x86_64", "========== NVIDIA Software Installer ==========",
             "Installing NVIDIA driver kernel modules...", "Loading NVIDIA driver kernel modules...",
             "+ modprobe nvidia", "Starting NVIDIA persistence daemon...", "Mounting NVIDIA driver rootfs...",
             "Done, now waiting for signal"]
    positions = [out.index(step + "\n") for step in steps]
    assert positions == sorted(positions)


def test_the_device_plugin_logs_its_config_and_registration(cluster):
    out = logs(cluster, "nvidia-device-plugin-daemonset", H100)
    assert re.search(r'^I\d{4} [\d:.]{15}       1 main\.go:244\] "Starting NVIDIA Device Plugin"', out, re.M)
    config = out[out.index("Running with config:\n") + len("Running with config:\n"):out.index("\nI", out.index(
        "Running with config:"))]
    assert json.loads(config)["flags"]["migStrategy"] == "single"
    assert re.search(r"server\.go:148\] Registered device plugin for 'nvidia\.com/gpu' with Kubelet$", out, re.M)
    assert "Starting to serve 'nvidia.com/gpu' on /var/lib/kubelet/device-plugins/nvidia-gpu.sock\n" in out


def test_gfd_logs_each_label_pass(cluster):
    out = logs(cluster, "gpu-feature-discovery", A100)
    assert re.search(r"main\.go:213\] Start running\n.*main\.go:277\] Creating Labels\n"
                     r".*output\.go:82\] Writing labels to output file "
                     r"/etc/kubernetes/node-feature-discovery/features\.d/gfd\n.*main\.go:286\] Sleeping for 1m0s\n",
                     out)
    assert '"sleepInterval": "1m0s"' in out


def test_dcgm_exporter_logs_its_start(cluster):
    out = logs(cluster, "nvidia-dcgm-exporter", H100)
    assert re.search(r'^time=\S+Z level=INFO msg="Starting dcgm-exporter" Version=\S+$', out, re.M)
    assert re.search(r'^time=\S+Z level=INFO msg="Starting webserver"$', out, re.M)


def test_toolkit_and_mig_manager_log_their_start(cluster):
    toolkit = logs(cluster, "nvidia-container-toolkit-daemonset", H100)
    assert re.search(r'^time="\S+Z" level=info msg="Installing NVIDIA container toolkit to '
                     r"'/usr/local/nvidia/toolkit'\"$", toolkit, re.M)
    assert toolkit.rstrip().endswith('level=info msg="Waiting for signal"')
    def applied() -> str | None:
        text = logs(cluster, "nvidia-mig-manager", H100)
        return text if "Successfully" in text else None

    mig = wait_for(applied, timeout=60, what="the MIG manager's first config")
    assert 'msg="Updating to MIG config: all-disabled"\n' in mig
    assert 'msg="Successfully updated to MIG config: all-disabled"\n' in mig


# --- a GPU container's /proc and /dev ------------------------------------------------------------------------------
def test_a_gpu_container_has_the_driver_version_and_its_devices(cluster):
    cluster.kubectl("apply", "-f", "-", input=GPU_POD)
    cluster.kubectl("wait", "--for=condition=Ready", "pod/cuda", "pod/plain", "--timeout=90s", timeout=100)
    version = cluster.kubectl("exec", "cuda", "--", "cat", "/proc/driver/nvidia/version").stdout
    assert version.startswith(f"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {driver_version(cluster)}  ")
    dev = set(cluster.kubectl("exec", "cuda", "--", "ls", "/dev").stdout.split())
    assert RUNTIME_DEVICES | NVIDIA_NODES | {"nvidia0", "nvidia1"} <= dev
    plain = set(cluster.kubectl("exec", "plain", "--", "ls", "/dev").stdout.split())
    assert RUNTIME_DEVICES <= plain and not any(name.startswith("nvidia") for name in plain)


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


def test_the_device_plugin_logs_the_nodes_sharing_config_and_restarts_on_a_change(cluster):
    cluster.kubectl("apply", "-f", "-", input=TIME_SLICING)
    cluster.kubectl("patch", "clusterpolicies.nvidia.com/cluster-policy", "--type", "merge", "-p",
                    '{"spec":{"devicePlugin":{"config":{"name":"time-slicing-config"}}}}')
    cluster.kubectl("label", "node", A100, "nvidia.com/device-plugin.config=a100")

    def plugin_log(showing: str) -> str | None:
        pod = pod_on(cluster, "nvidia-device-plugin-daemonset", A100)
        if pod is None:
            return None
        text = cluster.kubectl("logs", "-n", "gpu-operator", pod, "-c", "nvidia-device-plugin", check=False).stdout
        return text if showing in text else None

    sliced = wait_for(lambda: plugin_log('"replicas": 2'), timeout=180, what="the plugin's time-slicing config")
    config = sliced[sliced.rindex("Running with config:\n") + len("Running with config:\n"):]
    config = json.loads(config[:config.index("\nI")])
    assert config["sharing"] == {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "devices": "all",
                                                                 "replicas": 2}]}}
    cluster.kubectl("label", "node", A100, "nvidia.com/device-plugin.config=default", "--overwrite")
    restarted = wait_for(lambda: plugin_log("Received SIGHUP, restarting."), timeout=120, what="the plugin's restart")
    after = restarted[restarted.index("Received SIGHUP, restarting."):]
    assert re.search(r"main\.go:398\] Stopping plugins\.\n.*server\.go:166\] Stopping to serve 'nvidia\.com/gpu' on "
                     r"/var/lib/kubelet/device-plugins/nvidia-gpu\.sock\n", after)
    wait_for(lambda: '"timeSlicing": {}' in (plugin_log("Stopping plugins.") or "").split("Received SIGHUP")[-1],
             timeout=60, what="the default config logged again")
