"""MIG through the MIG manager, seen through the real kubectl: ``nvidia.com/mig.config`` in, resources and labels out.

One embedded cluster, the operator installed with ``mig.strategy=mixed``; the
H100 node is split into 56 ``1g.10gb`` devices, a pod sees only its slice,
GPU pods block a change, ``single`` advertises the slices as ``nvidia.com/gpu``,
and a geometry that does not fit ends in ``failed`` with mig-parted's reason.
Upstream sources: docs/fidelity.md#gpustack.
"""
from __future__ import annotations

import json
import os

import pytest

from .conftest import start_cluster, stop_cluster, wait_for

H100_NODE = "gpulab-worker2"
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("gpustack-mig")]




@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    old = os.environ.get("GPULAB_DEVICE_PLUGIN_STOP_GRACE")
    os.environ["GPULAB_DEVICE_PLUGIN_STOP_GRACE"] = "3"
    try:
        c = start_cluster(tmp_path_factory.mktemp("gpustack-mig"))
    finally:
        if old is None:
            os.environ.pop("GPULAB_DEVICE_PLUGIN_STOP_GRACE")
        else:
            os.environ["GPULAB_DEVICE_PLUGIN_STOP_GRACE"] = old
    c.gpulab("install", "gpu-operator", "--set", "mig.strategy=mixed", timeout=180)
    yield c
    stop_cluster(c)


def node(cluster, name: str = H100_NODE) -> dict:
    return json.loads(cluster.kubectl("get", "node", name, "-o", "json").stdout)


def labels(cluster) -> dict[str, str]:
    return node(cluster)["metadata"]["labels"]


def allocatable(cluster, resource: str) -> str | None:
    return node(cluster)["status"]["allocatable"].get(resource)


def mig_state(cluster) -> str | None:
    return labels(cluster).get("nvidia.com/mig.config.state")


def split_all_1g(cluster) -> None:
    """Select all-1g.10gb (a no-op when the node already has it) and wait for its 56 devices."""
    wait_for(lambda: mig_state(cluster) in ("success", "failed"), what="a settled MIG manager")
    cluster.kubectl("label", "node", H100_NODE, "nvidia.com/mig.config=all-1g.10gb", "--overwrite")
    wait_for(lambda: settled(cluster) == "success", what="all-1g.10gb applied")


def settled(cluster) -> str | None:
    state = mig_state(cluster)
    return state if state in ("success", "failed") and "paused-for-mig-change" not in labels(cluster).values() \
        else None


def mig_pod(name: str, command: str, resource: str = "nvidia.com/mig-1g.10gb", restart: str = "Never") -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  restartPolicy: {restart}
  nodeSelector: {{kubernetes.io/hostname: {H100_NODE}}}
  containers:
  - name: main
    image: nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04
    command: [sh, -c, "{command}"]
    resources: {{limits: {{{resource}: "1"}}}}
"""


def phase(cluster, name: str) -> str:
    return cluster.kubectl("get", "pod", name, "-o", "jsonpath={.status.phase}", check=False).stdout


def test_all_1g_10gb_under_mixed(cluster):
    wait_for(lambda: allocatable(cluster, "nvidia.com/gpu") == "8", what="the H100 GPUs")
    wait_for(lambda: mig_state(cluster) == "success", what="the default all-disabled config")
    cluster.kubectl("label", "node", H100_NODE, "nvidia.com/mig.config=all-1g.10gb", "--overwrite")
    pending = wait_for(lambda: (lambda l: l if l.get("nvidia.com/mig.config.state") == "pending" else None)(
        labels(cluster)), timeout=30, interval=0.1, what="pending")
    assert pending["nvidia.com/gpu.deploy.device-plugin"] == "paused-for-mig-change"
    wait_for(lambda: settled(cluster) == "success", what="success")
    wait_for(lambda: allocatable(cluster, "nvidia.com/mig-1g.10gb") == "56", what="56 MIG devices")
    got = wait_for(lambda: (lambda l: l if l.get("nvidia.com/mig-1g.10gb.count") == "56" else None)(labels(cluster)),
                   what="GFD's MIG labels")
    assert {k: got[k] for k in ("nvidia.com/mig-1g.10gb.product", "nvidia.com/mig-1g.10gb.memory",
                                "nvidia.com/mig-1g.10gb.multiprocessors", "nvidia.com/mig.strategy",
                                "nvidia.com/gpu.deploy.device-plugin")} == {
        "nvidia.com/mig-1g.10gb.product": "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb",
        "nvidia.com/mig-1g.10gb.memory": "9984", "nvidia.com/mig-1g.10gb.multiprocessors": "16",
        "nvidia.com/mig.strategy": "mixed", "nvidia.com/gpu.deploy.device-plugin": "true"}


def test_a_mig_pod_sees_its_slice(cluster):
    split_all_1g(cluster)
    wait_for(lambda: allocatable(cluster, "nvidia.com/mig-1g.10gb") == "56", what="56 MIG devices")
    cluster.kubectl("apply", "-f", "-", input=mig_pod("smi-mig", "nvidia-smi -L; nvidia-smi"))
    wait_for(lambda: phase(cluster, "smi-mig") == "Succeeded", what="nvidia-smi to finish")
    out = cluster.kubectl("logs", "smi-mig").stdout.splitlines()
    assert out[0].startswith("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-")
    assert out[1].startswith("  MIG 1g.10gb     Device  0: (UUID: MIG-")
    assert sum(1 for line in out if line.startswith(("GPU ", "  MIG "))) == 2
    assert any(line.startswith("| MIG devices:") for line in out)
    assert sum(1 for line in out if "MiB /  9984MiB" in line) == 1
    latency = json.loads(cluster.kubectl("get", "pod", "smi-mig", "-o",
                                         "jsonpath={.metadata.annotations.gpulab\\.dev/expected-latency}").stdout)
    assert (latency["mode"], latency["migProfile"]) == ("mig", "1g.10gb")
    cluster.kubectl("delete", "pod", "smi-mig", "--wait=false")


def test_gpu_pods_on_the_node_block_a_change(cluster):
    split_all_1g(cluster)
    wait_for(lambda: allocatable(cluster, "nvidia.com/mig-1g.10gb") == "56", what="56 MIG devices")
    cluster.kubectl("apply", "-f", "-", input=mig_pod("busy", "sleep 3600"))
    wait_for(lambda: phase(cluster, "busy") == "Running", what="the busy pod")
    cluster.kubectl("label", "node", H100_NODE, "nvidia.com/mig.config=all-balanced", "--overwrite")
    wait_for(lambda: settled(cluster) == "failed" and
             labels(cluster)["nvidia.com/mig.config"] == "all-balanced", what="failed")
    events = cluster.kubectl("get", "events", "--field-selector",
                             f"involvedObject.name={H100_NODE},reason=MIGConfigFailed", "-o", "json").stdout
    messages = [e["message"] for e in json.loads(events)["items"]]
    assert any("In use by another client" in m for m in messages), messages
    assert phase(cluster, "busy") == "Running"            # the MIG manager never stops user workloads
    wait_for(lambda: allocatable(cluster, "nvidia.com/mig-1g.10gb") == "56", what="the plugin back after the pause")
    cluster.kubectl("delete", "pod", "busy", "--grace-period=0", "--force")
    cluster.kubectl("label", "node", H100_NODE, "nvidia.com/mig.config=all-1g.10gb", "--overwrite")
    wait_for(lambda: settled(cluster) == "success" and labels(cluster)["nvidia.com/mig.config"] == "all-1g.10gb",
             what="success again")


def test_single_strategy_advertises_slices_as_gpus(cluster):
    split_all_1g(cluster)
    cluster.kubectl("patch", "clusterpolicies.nvidia.com/cluster-policy", "--type=json",
                    "-p", '[{"op": "replace", "path": "/spec/mig/strategy", "value": "single"}]')
    wait_for(lambda: allocatable(cluster, "nvidia.com/gpu") == "56", what="56 nvidia.com/gpu")
    got = wait_for(lambda: (lambda l: l if l.get("nvidia.com/mig.strategy") == "single" else None)(labels(cluster)),
                   what="single strategy labels")
    assert (got["nvidia.com/gpu.product"], got["nvidia.com/gpu.count"], got["nvidia.com/gpu.memory"]) == (
        "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb", "56", "9984")
    assert not any(k.startswith("nvidia.com/mig-1g.10gb.") for k in got)


CUSTOM = """
apiVersion: v1
kind: ConfigMap
metadata: {name: custom-mig-config, namespace: gpu-operator}
data:
  config.yaml: |
    version: v1
    mig-configs:
      all-1g.10gb:
        - devices: all
          mig-enabled: true
          mig-devices:
            "1g.10gb": 7
      four-halves:
        - devices: all
          mig-enabled: true
          mig-devices:
            "3g.40gb": 4
"""


def nvidia_resources(cluster) -> dict[str, str]:
    return {k: v for k, v in node(cluster)["status"]["allocatable"].items() if k.startswith("nvidia.com/") and v != "0"}


def test_an_impossible_layout_fails_with_a_reason(cluster):
    wait_for(lambda: settled(cluster) and nvidia_resources(cluster), what="a settled node")
    before = nvidia_resources(cluster)
    cluster.kubectl("apply", "-f", "-", input=CUSTOM)
    cluster.kubectl("patch", "clusterpolicies.nvidia.com/cluster-policy", "--type=merge",
                    "-p", '{"spec":{"migManager":{"config":{"name":"custom-mig-config"}}}}')
    wait_for(lambda: "custom-mig-config" in cluster.kubectl(
        "get", "pods", "-n", "gpu-operator", "-l", "app=nvidia-mig-manager", "-o",
        "jsonpath={.items[*].spec.volumes[*].configMap.name}").stdout.split(), what="the MIG manager to restart")
    cluster.kubectl("label", "node", H100_NODE, "nvidia.com/mig.config=four-halves", "--overwrite")
    wait_for(lambda: settled(cluster) == "failed" and labels(cluster)["nvidia.com/mig.config"] == "four-halves",
             what="failed")
    events = json.loads(cluster.kubectl("get", "events", "--field-selector",
                                        f"involvedObject.name={H100_NODE},reason=MIGConfigFailed",
                                        "-o", "json").stdout)["items"]
    assert any("Error creating GPU instance for '3g.40gb': Insufficient Resources" in e["message"] and
               "all orderings failed" in e["message"] for e in events), [e["message"] for e in events]
    assert labels(cluster)["nvidia.com/gpu.deploy.device-plugin"] == "true"   # restored after the failure
    wait_for(lambda: nvidia_resources(cluster) == before, what="the old geometry still advertised")
