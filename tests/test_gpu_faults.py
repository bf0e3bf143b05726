"""A GPU that fails, on both engines: `gpulab fault inject|clear` and the lab-step API (gpulab/gpustack/faultcli.py),
and what each fault does to the stack, read as a learner reads it: the node's capacity and allocatable (the device
plugin's health check), the training pod's fate, its events and logs, `nvidia-smi` in the pod and the DCGM
metrics. One node with two H100s, the operator installed; a trainer holds both GPUs. KWOK's nodes run no
containers, so the pod's fate, nvidia-smi and the exporter's metrics are asserted on the embedded cluster only
(docs/engines.md). Upstream sources: docs/fidelity.md#gpu-faults.
"""
from __future__ import annotations

import json
import re
import time

import pytest

from .conftest import start_cluster, stop_cluster, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("gpu-faults")]

NODE = "gpulab-worker"
TOPOLOGY = """nodes:
- {name: "{cluster}-control-plane", role: control-plane, cpu: "4", memory: 8Gi,
   taints: [{key: node-role.kubernetes.io/control-plane, effect: NoSchedule}]}
- {name: "{cluster}-worker", cpu: "64", memory: 512Gi, gpu: {model: NVIDIA H100 80GB HBM3, count: 2}}
"""
TRAINER = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "trainer"},
           "spec": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                    "containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                                    "command": ["python", "train.py"],
                                    "resources": {"limits": {"nvidia.com/gpu": 2}}}]}}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, engine):
    tmp = tmp_path_factory.mktemp("gpu-faults")
    (tmp / "topology.yaml").write_text(TOPOLOGY)
    c = start_cluster(tmp, topology=tmp / "topology.yaml", engine=engine)
    c.engine = engine
    c.gpulab("install", "gpu-operator", timeout=240)
    wait_for(lambda: gpus(c) == ("2", "2"), timeout=240, what="two allocatable GPUs")
    yield c
    stop_cluster(c)


def gpus(cluster) -> tuple[str, str]:
    """(capacity, allocatable) of nvidia.com/gpu on the node, read through the official client."""
    from kubernetes import client

    status = client.CoreV1Api(cluster.client()).read_node(NODE).status
    return (status.capacity or {}).get("nvidia.com/gpu", ""), (status.allocatable or {}).get("nvidia.com/gpu", "")


def plugin_pod(cluster) -> str:
    pods = json.loads(cluster.kubectl("get", "pods", "-n", "gpu-operator", "-l", "app=nvidia-device-plugin-daemonset",
                                      "-o", "json").stdout)["items"]
    return next((p["metadata"]["name"] for p in pods if p["status"].get("phase") == "Running"
                 and not p["metadata"].get("deletionTimestamp")), "")


def start_trainer(cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=json.dumps(TRAINER))
    cluster.kubectl("wait", "--for=condition=Ready", "pod/trainer", "--timeout=120s")


def stop_trainer(cluster) -> None:
    cluster.kubectl("delete", "pod", "trainer", "--ignore-not-found", "--grace-period=1", timeout=120)


def restarts(cluster) -> int:
    pod = json.loads(cluster.kubectl("get", "pod", "trainer", "-o", "json").stdout)
    return sum(s.get("restartCount", 0) for s in pod["status"].get("containerStatuses") or [])


def metric(cluster, field: str, gpu: str, *, showing: str = "") -> str | None:
    """A DCGM sample of the exporter on the node (through the pod proxy), once the body contains ``showing``."""
    def scrape():
        pods = json.loads(cluster.kubectl("get", "pods", "-n", "gpu-operator", "-l", "app=nvidia-dcgm-exporter",
                                          "-o", "json").stdout)["items"]
        pod = next((p["metadata"]["name"] for p in pods if p["status"].get("phase") == "Running"), "")
        raw = cluster.kubectl("get", "--raw", f"/api/v1/namespaces/gpu-operator/pods/{pod}:9400/proxy/metrics",
                              check=False) if pod else None
        return raw.stdout if raw is not None and raw.returncode == 0 and showing in raw.stdout else None
    text = wait_for(scrape, timeout=120, what=f"metrics showing {showing!r}")
    match = re.search(rf'^{field}{{gpu="{gpu}",[^}}]*}} (\S+)$', text, re.M)
    return match.group(1) if match else None


def settle(seconds: float = 3.0) -> None:
    """Time for the stack to react to a change it should not react to (asserting that nothing changed)."""
    time.sleep(seconds)


def test_bad_faults_are_refused_with_what_to_do(cluster):
    bad = cluster.gpulab("fault", "inject", "--node", NODE, "--gpu", "0", "--xid", "13", check=False)
    assert bad.returncode == 1
    assert "XID 13 is not one gpulab emulates; choose one of 31 (GPU memory page fault)" in bad.stderr
    beyond = cluster.gpulab("fault", "inject", "--node", NODE, "--gpu", "2", "--xid", "79", check=False)
    assert f'node "{NODE}" has GPUs 0 to 1; --gpu 2 is not one of them' in beyond.stderr
    cpu = cluster.gpulab("fault", "inject", "--node", "gpulab-control-plane", "--gpu", "0", "--thermal", check=False)
    assert 'node "gpulab-control-plane" has no GPUs' in cpu.stderr
    missing = cluster.gpulab("fault", "clear", "--node", "nowhere", "--gpu", "0", check=False)
    assert 'node "nowhere" not found' in missing.stderr


def test_an_application_fault_kills_the_process_but_the_gpu_stays_healthy(cluster):
    start_trainer(cluster)
    cluster.gpulab("fault", "inject", "--node", NODE, "--gpu", "0", "--xid", "31")
    settle()
    assert gpus(cluster) == ("2", "2")              # XID 31 is among the plugin's ignored application errors
    if cluster.engine == "embedded":
        wait_for(lambda: restarts(cluster) >= 1, what="the trainer's restart")
        logs = cluster.kubectl("logs", "trainer", "--previous").stdout
        assert logs == "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        cluster.kubectl("wait", "--for=condition=Ready", "pod/trainer", "--timeout=60s")   # the restart runs on
        assert metric(cluster, "DCGM_FI_DEV_XID_ERRORS", "0") == "31"
    refused = cluster.gpulab("fault", "clear", "--node", NODE, "--gpu", "0", check=False)
    assert refused.returncode == 1 and f"GPU 0 of node {NODE} is in use by default/trainer" in refused.stderr
    stop_trainer(cluster)
    cleared = cluster.gpulab("fault", "clear", "--node", NODE, "--gpu", "0")
    assert "cleared XID 31 (GPU memory page fault)" in cleared.stdout
    if cluster.engine == "embedded":
        start_trainer(cluster)
        assert metric(cluster, "DCGM_FI_DEV_XID_ERRORS", "0", showing='pod="trainer"') == "0"
        stop_trainer(cluster)


def test_a_double_bit_ecc_error_marks_the_gpu_unhealthy_until_the_plugin_restarts(cluster):
    start_trainer(cluster)
    cluster.gpulab("fault", "inject", "--node", NODE, "--gpu", "1", "--xid", "48")
    wait_for(lambda: gpus(cluster) == ("2", "1"), what="allocatable 1 of capacity 2")
    if cluster.engine == "embedded":
        wait_for(lambda: restarts(cluster) >= 1, what="the trainer's restart")
        assert cluster.kubectl("logs", "trainer", "--previous").stdout == \
            "RuntimeError: CUDA error: uncorrectable ECC error encountered\n"
        cluster.kubectl("wait", "--for=condition=Ready", "pod/trainer", "--timeout=60s")
        ecc = cluster.kubectl("exec", "trainer", "--", "nvidia-smi",
                              "--query-gpu=index,ecc.errors.uncorrected.volatile.total", "--format=csv,noheader")
        assert ecc.stdout == "0, 0\n1, 1\n"
        table = cluster.kubectl("exec", "trainer", "--", "nvidia-smi").stdout
        assert [line.rstrip("|").split()[-1] for line in table.splitlines() if "00000000:" in line] == ["0", "1"]
        assert metric(cluster, "DCGM_FI_DEV_XID_ERRORS", "1") == "48"
    stop_trainer(cluster)
    reset = cluster.gpulab("fault", "clear", "--node", NODE, "--gpu", "1")
    assert "cleared XID 48 (double-bit ECC error); the device plugin still reports it Unhealthy" in reset.stdout
    settle()
    assert gpus(cluster) == ("2", "1")              # ListAndWatch never reports a device healthy again
    old = plugin_pod(cluster)
    cluster.kubectl("delete", "pod", "-n", "gpu-operator", old, timeout=120)
    wait_for(lambda: gpus(cluster) == ("2", "2") and plugin_pod(cluster) not in ("", old),
             timeout=180, what="a new plugin pod and both GPUs allocatable")


def gpu_of(cluster, pod: str) -> str:
    """The node's index of the one GPU a pod holds, from its bus ID as nvidia-smi shows it in the pod."""
    bus = cluster.kubectl("exec", pod, "--", "nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader").stdout
    return {"00000000:53:00.0": "0", "00000000:64:00.0": "1"}[bus.strip()]


def test_a_gpu_off_the_bus_needs_a_reboot(cluster):
    sleeper = json.loads(json.dumps(TRAINER))
    sleeper["metadata"]["name"] = "sleeper"
    sleeper["spec"]["containers"][0].update(image="nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                                            command=["sleep", "infinity"], resources={"limits": {"nvidia.com/gpu": 1}})
    trainer = json.loads(json.dumps(TRAINER))
    trainer["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 1}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                          "items": [sleeper, trainer]}))
    cluster.kubectl("wait", "--for=condition=Ready", "pod/sleeper", "pod/trainer", "--timeout=120s")
    if cluster.engine == "embedded":
        lost, other = gpu_of(cluster, "sleeper"), gpu_of(cluster, "trainer")
    else:
        lost, other = "0", "1"      # no container to ask; the fault's effects on the API do not depend on it
    # The sleeping pod's GPU falls off the bus: the trainer on the other GPU runs on.
    cluster.gpulab("fault", "inject", "--node", NODE, "--gpu", lost, "--xid", "79")
    wait_for(lambda: gpus(cluster) == ("2", "1"), what="allocatable 1 of capacity 2")
    bus = {"0": "0000:53:00.0", "1": "0000:64:00.0"}[lost]
    if cluster.engine == "embedded":
        smi = cluster.kubectl("exec", "sleeper", "--", "nvidia-smi", check=False)
        assert (smi.returncode, smi.stdout) == (15, f"Unable to determine the device handle for GPU {bus}: "
                                                    "GPU is lost.  Reboot the system to recover this GPU\n")
        assert restarts(cluster) == 0
        assert metric(cluster, "DCGM_FI_DEV_XID_ERRORS", lost) == "79"
        assert metric(cluster, "DCGM_FI_DEV_GPU_TEMP", lost) is None and metric(cluster, "DCGM_FI_DEV_GPU_TEMP", other)
    # Then the trainer's GPU: every CUDA call fails, the container crash-loops.
    cluster.gpulab("fault", "inject", "--node", NODE, "--gpu", other, "--xid", "79")
    wait_for(lambda: gpus(cluster) == ("2", "0"), what="allocatable 0 of capacity 2")
    if cluster.engine == "embedded":
        wait_for(lambda: restarts(cluster) >= 2, timeout=120, what="the trainer crash-looping")
        assert cluster.kubectl("logs", "trainer", "--previous").stdout == "RuntimeError: CUDA error: unknown error\n"
        events = cluster.kubectl("events", "--for", "pod/trainer").stdout
        assert "Back-off restarting failed container main in pod trainer" in events
    refused = cluster.gpulab("fault", "clear", "--node", NODE, "--gpu", lost, check=False)
    assert refused.returncode == 1
    assert (f"GPU {lost} of node {NODE} has fallen off the bus (XID 79): a GPU reset cannot reach it; reboot the "
            f"node: gpulab fault clear --node {NODE} --reboot") in refused.stderr
    old = plugin_pod(cluster)
    rebooted = cluster.gpulab("fault", "clear", "--node", NODE, "--reboot")
    assert "cleared XID 79 (GPU has fallen off the bus), XID 79 (GPU has fallen off the bus)" in rebooted.stdout
    wait_for(lambda: gpus(cluster) == ("2", "2") and plugin_pod(cluster) not in ("", old),
             timeout=180, what="both GPUs allocatable after the reboot")
    if cluster.engine == "embedded":
        cluster.kubectl("wait", "--for=condition=Ready", "pod/trainer", "--timeout=180s")
        assert cluster.kubectl("exec", "sleeper", "--", "nvidia-smi", "-L").stdout.startswith("GPU 0: NVIDIA H100")
    cluster.kubectl("delete", "pod", "sleeper", "trainer", "--grace-period=1", timeout=120)


def test_a_thermal_slowdown_slows_the_gpu_and_nothing_else(cluster):
    from gpulab import kubeclient
    from gpulab.gpustack import faultcli
    from gpulab.labs.steps import GpuFault

    start_trainer(cluster)
    before = restarts(cluster)
    step = GpuFault(NODE, 0, thermal=True)              # a lab's starting state: the API, no command
    assert step.describe() == f"make GPU 0 of node {NODE} fail: gpulab fault inject --node {NODE} --gpu 0 --thermal"
    step.apply(cluster.client())
    kube = kubeclient.Kube(cluster.client())
    fault = faultcli.inject(kube, NODE, 0, thermal=True)    # already slowed down: the same fault
    assert fault.thermal and fault.gpu == 0
    settle()
    assert gpus(cluster) == ("2", "2")              # no XID: the health check sees nothing
    assert restarts(cluster) == before
    if cluster.engine == "embedded":
        csv = cluster.kubectl("exec", "trainer", "--", "nvidia-smi", "--query-gpu=temperature.gpu,"
                              "clocks_event_reasons.hw_thermal_slowdown,clocks_event_reasons.active",
                              "--format=csv,noheader").stdout
        assert csv == "92, Active, 0x0000000000000048\n" + f"{csv.splitlines()[1]}\n"
        assert "Not Active, 0x0000000000000000" in csv.splitlines()[1]
        slowed, normal = (int(metric(cluster, "DCGM_FI_DEV_SM_CLOCK", gpu)) for gpu in ("0", "1"))
        assert slowed * 2 == normal
    stop_trainer(cluster)
    assert faultcli.clear(kube, NODE, 0) == (fault,)
    assert json.loads(cluster.kubectl("get", "node", NODE, "-o", "json").stdout)["metadata"].get(
        "annotations", {}).get("gpulab.dev/gpu-faults") is None


def patch_policy(cluster, spec: dict) -> None:
    cluster.kubectl("patch", "clusterpolicies.nvidia.com/cluster-policy", "--type", "merge", "-p",
                    json.dumps({"spec": spec}))


def plugin_env(cluster) -> dict:
    pods = json.loads(cluster.kubectl("get", "pods", "-n", "gpu-operator", "-l", "app=nvidia-device-plugin-daemonset",
                                      "-o", "json").stdout)["items"]
    running = [p for p in pods if p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")]
    if len(running) != 1:
        return {}
    main = next(c for c in running[0]["spec"]["containers"] if c["name"] == "nvidia-device-plugin")
    return {e["name"]: e.get("value") for e in main.get("env") or []}


def test_the_xids_the_plugin_ignores_are_its_environment(cluster):
    patch_policy(cluster, {"devicePlugin": {"env": [{"name": "DP_DISABLE_HEALTHCHECKS", "value": "48"}]}})
    wait_for(lambda: plugin_env(cluster).get("DP_DISABLE_HEALTHCHECKS") == "48" and gpus(cluster) == ("2", "2"),
             timeout=180, what="a plugin pod with DP_DISABLE_HEALTHCHECKS=48")
    cluster.gpulab("fault", "inject", "--node", NODE, "--gpu", "0", "--xid", "48")
    settle()
    assert gpus(cluster) == ("2", "2")
    cluster.gpulab("fault", "inject", "--node", NODE, "--gpu", "1", "--xid", "79")
    wait_for(lambda: gpus(cluster) == ("2", "1"), what="XID 79 still counted")
    cluster.gpulab("fault", "clear", "--node", NODE, "--reboot")
    patch_policy(cluster, {"devicePlugin": {"env": None}})
    wait_for(lambda: plugin_env(cluster) and "DP_DISABLE_HEALTHCHECKS" not in plugin_env(cluster)
             and gpus(cluster) == ("2", "2"), timeout=180, what="the plugin back to its defaults")


COUNTERS = """# the course's counters: the defaults' XID and SM clock, plus ECC and clock event reasons
DCGM_FI_DEV_SM_CLOCK, gauge, SM clock frequency (in MHz).
DCGM_FI_DEV_XID_ERRORS, gauge, Value of the last XID error encountered.
DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, Total number of double-bit volatile ECC errors.
DCGM_FI_DEV_CLOCKS_EVENT_REASONS, gauge, Current clock event reasons (bitmask).
"""


def test_a_custom_counters_file_exports_ecc_and_clock_event_reasons(cluster):
    cluster.kubectl("create", "configmap", "dcgm-metrics", "-n", "gpu-operator",
                    f"--from-literal=dcgm-metrics.csv={COUNTERS}")
    patch_policy(cluster, {"dcgmExporter": {"config": {"name": "dcgm-metrics"}}})

    def transformed():
        ds = json.loads(cluster.kubectl("get", "ds", "-n", "gpu-operator", "nvidia-dcgm-exporter", "-o", "json").stdout)
        pod = ds["spec"]["template"]["spec"]
        env = {e["name"]: e.get("value") for e in pod["containers"][0].get("env") or []}
        item = {"key": "dcgm-metrics.csv", "path": "dcgm-metrics.csv"}
        volume = {"name": "metrics-config", "configMap": {"name": "dcgm-metrics", "defaultMode": 420, "items": [item]}}
        return env.get("DCGM_EXPORTER_COLLECTORS") == "/etc/dcgm-exporter/dcgm-metrics.csv" and \
            pod.get("volumes") == [volume]
    wait_for(transformed, what="the exporter's DaemonSet with the counters file")
    cluster.gpulab("fault", "inject", "--node", NODE, "--gpu", "1", "--xid", "48")
    cluster.gpulab("fault", "inject", "--node", NODE, "--gpu", "0", "--thermal")
    if cluster.engine == "embedded":
        assert metric(cluster, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "1", showing="DCGM_FI_DEV_ECC_DBE_VOL_TOTAL") == "1"
        assert metric(cluster, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "0") == "0"
        assert metric(cluster, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "0") == str(0x48)
        assert metric(cluster, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "1") == "1"          # idle
        assert metric(cluster, "DCGM_FI_DEV_GPU_TEMP", "0") is None                     # not in the file
    cluster.gpulab("fault", "clear", "--node", NODE, "--reboot")
    patch_policy(cluster, {"dcgmExporter": {"config": None}})
