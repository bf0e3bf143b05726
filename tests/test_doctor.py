"""``gpulab doctor`` on the embedded cluster before and after ``gpulab install gpu-operator``, and its findings' rules.

The cluster-level tests run the real command against an embedded cluster (the
in-process GPU stack reconciling); the unit tests feed ``doctor`` node objects
shaped as the GPU Operator leaves them, for states the cluster test does not
reach (a failed MIG layout). The same report on a kind-like cluster without
annotations (the "real cluster" advice) is covered in tests/test_kind.py.
"""
from __future__ import annotations

import json
import time

import pytest

from gpulab.setup import doctor

INSTALL = "gpulab install gpu-operator --version v26.7.0 --set driver.version=580.105.08"


def run(cluster, *args: str):
    proc = cluster.gpulab("doctor", "--kubeconfig", str(cluster.kubeconfig), *args, check=False)
    return proc


def findings(proc) -> dict:
    return {(f["node"], f["subject"]): f for f in json.loads(proc.stdout)["findings"]}


@pytest.mark.slow
def test_before_install_the_operator_is_missing_with_the_command_to_install_it(cluster):
    proc = run(cluster, "-o", "json")
    assert proc.returncode == 1
    got = findings(proc)
    install = f"{INSTALL} --kubeconfig {cluster.kubeconfig}"
    assert got[(None, "GPU Operator")] == {
        "status": "missing", "subject": "GPU Operator", "node": None, "next": install,
        "detail": "no Deployment labelled app.kubernetes.io/component=gpu-operator in any namespace"}
    assert (got[(None, "ClusterPolicy")]["status"], got[(None, "ClusterPolicy")]["next"]) == ("missing", install)
    assert got[(None, "GPU hardware")]["detail"] == (
        "2 of 4 nodes have simulated GPUs: gpulab-worker2 (8x NVIDIA H100 80GB HBM3), gpulab-worker3 "
        "(4x NVIDIA A100-SXM4-40GB)")
    assert got[(None, "GPU stack emulation")]["detail"] == "starts with `gpulab install gpu-operator`"
    assert got[("gpulab-worker2", "GFD labels")]["status"] == "info"          # waiting for the operator, not a gap
    assert got[("gpulab-worker2", "taints")] == {
        "status": "warn", "subject": "taints", "node": "gpulab-worker2",
        "detail": "no nvidia.com/gpu taint: pods that need no GPU can take this node's CPU and memory",
        "next": "kubectl taint nodes gpulab-worker2 nvidia.com/gpu=true:NoSchedule"}
    assert [n for n, _ in got if n] == ["gpulab-worker2"] * 3 + ["gpulab-worker3"] * 3

    text = run(cluster).stdout
    assert text.splitlines()[0].endswith("(GPUs simulated by the gpulab emulation)")
    assert text.endswith(f"\n2 missing; start with: {install}\n")


@pytest.mark.slow
def test_after_install_everything_is_present(cluster):
    cluster.gpulab("install", "gpu-operator", timeout=300)
    deadline = time.monotonic() + 180
    while (proc := run(cluster, "-o", "json")).returncode != 0 and time.monotonic() < deadline:
        time.sleep(2)
    assert proc.returncode == 0, run(cluster).stdout
    got = findings(proc)
    assert got[(None, "ClusterPolicy")]["detail"] == (
        "cluster-policy: ready (driver 595.91.07, toolkit v1.20.0, device plugin v0.20.0, mig.strategy single)")
    assert got[(None, "GPU Operator")]["detail"] == "Deployment gpu-operator/gpu-operator: 1/1 ready"
    assert got[(None, "GPU stack emulation")]["detail"] == \
        "running (Lease kube-system/gpulab-gpustack held by embedded)"
    assert got[(None, "DaemonSet nvidia-device-plugin-daemonset")]["detail"] == "2/2 ready"
    assert got[("gpulab-worker2", "GFD labels")]["detail"] == \
        "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3, nvidia.com/gpu.count=8"
    assert got[("gpulab-worker2", "allocatable")]["detail"] == "nvidia.com/gpu: 8"
    assert got[("gpulab-worker3", "allocatable")]["detail"] == "nvidia.com/gpu: 4"
    assert got[("gpulab-worker2", "MIG")]["detail"] == "nvidia.com/mig.config=all-disabled, state success, strategy single"
    assert got[("gpulab-worker2", "sharing")]["detail"] == "none (one pod per GPU)"
    assert run(cluster).stdout.endswith("\nnothing missing\n")


@pytest.mark.slow
def test_taints_and_time_slicing_show_up(cluster, kubectl):
    kubectl("taint", "nodes", "gpulab-worker2", "nvidia.com/gpu=true:NoSchedule")
    kubectl("apply", "-f", "cluster-setup/real/time-slicing-config.yaml")
    kubectl("patch", "clusterpolicies.nvidia.com/cluster-policy", "--type", "merge", "-p",
            '{"spec":{"devicePlugin":{"config":{"name":"time-slicing-config","default":"any"}}}}')
    deadline = time.monotonic() + 120
    while True:
        got = findings(run(cluster, "-o", "json"))
        # the device plugin's and GFD's pods restart one after the other: capacity and labels need not move together
        settled = (got[("gpulab-worker2", "allocatable")]["detail"] == "nvidia.com/gpu: 32"
                   and got[("gpulab-worker2", "sharing")]["detail"] != "none (one pod per GPU)")
        if settled or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert got[("gpulab-worker2", "allocatable")]["detail"] == "nvidia.com/gpu: 32"
    assert got[("gpulab-worker2", "taints")] == {"status": "ok", "subject": "taints", "node": "gpulab-worker2",
                                                  "detail": "nvidia.com/gpu=true:NoSchedule", "next": None}
    assert got[("gpulab-worker2", "sharing")]["detail"] == "time-slicing, 4 replicas per GPU"
    assert got[(None, "time-slicing config")]["detail"] == \
        "device plugin config ConfigMap gpu-operator/time-slicing-config, default key any"


@pytest.mark.slow
def test_an_unreachable_cluster_is_reported(tmp_path, cluster):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(cluster.kubeconfig.read_text().replace(
        next(line.split("server: ")[1] for line in cluster.kubeconfig.read_text().splitlines() if "server: " in line),
        "https://127.0.0.1:9"))
    proc = cluster.gpulab("doctor", "--kubeconfig", str(kubeconfig), "-o", "json", check=False, timeout=180)
    got = findings(proc)
    assert proc.returncode == 1
    assert got[(None, "API server")]["detail"].startswith("cannot reach https://127.0.0.1:9: ")
    assert got[(None, "API server")]["next"] == \
        "gpulab cluster up (embedded cluster), gpulab kind up (kind), or check your kubeconfig"


# --- rules on node objects --------------------------------------------------------------------------------------

def gpu_node(labels: dict, taints: list | None = None, allocatable: dict | None = None) -> dict:
    return {"metadata": {"name": "n1", "labels": {"nvidia.com/gpu.present": "true", **labels}},
            "spec": {"taints": taints or []}, "status": {"allocatable": allocatable or {}}}


def node_findings(node: dict, operator_up: bool = True) -> dict:
    report = doctor.Report("https://x", "v1.36.0", False)
    doctor._node(report, node, "gpu-operator", operator_up)
    return {f.subject: f for f in report.findings}


def test_a_failed_mig_layout_is_missing_with_how_to_recover():
    got = node_findings(gpu_node({"nvidia.com/mig.capable": "true", "nvidia.com/mig.config": "h100-workshop",
                                  "nvidia.com/mig.config.state": "failed", "nvidia.com/mig.strategy": "mixed",
                                  "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
                                 allocatable={"nvidia.com/gpu": "0"}))
    assert (got["MIG"].status, got["MIG"].detail, got["MIG"].next) == (
        "missing", "nvidia.com/mig.config=h100-workshop, state failed, strategy mixed",
        "kubectl -n gpu-operator logs daemonset/nvidia-mig-manager; then kubectl label node n1 "
        "nvidia.com/mig.config=all-disabled --overwrite")
    assert (got["allocatable"].status, got["allocatable"].next) == (
        "missing", "kubectl -n gpu-operator get pods -l app=nvidia-device-plugin-daemonset "
                   "--field-selector spec.nodeName=n1")


def test_mixed_mig_resources_are_listed():
    got = node_findings(gpu_node({"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
                                 allocatable={"nvidia.com/gpu": "0", "nvidia.com/mig-1g.10gb": "14",
                                              "nvidia.com/mig-3g.40gb": "4", "cpu": "8"}))
    assert got["allocatable"].detail == "nvidia.com/gpu: 0, nvidia.com/mig-1g.10gb: 14, nvidia.com/mig-3g.40gb: 4"


def test_install_commands_pin_the_chart_and_driver():
    assert doctor.install_command(True, "/k") == f"{INSTALL} --kubeconfig /k"
    assert doctor.install_command(False, None).endswith(
        "nvidia/gpu-operator --version=v26.7.0 -f cluster-setup/real/gpu-operator-values.yaml")
