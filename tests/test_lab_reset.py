"""``gpulab lab reset LAB``: the embedded cluster is recreated in the lab's starting state; other clusters are not."""
from __future__ import annotations

import json
import subprocess

import pytest

from gpulab import checks, labs
from gpulab.labs import steps
from gpulab.learner import connection


LAB03_CHANGES = [
    "delete every object in the cluster and start it afresh",
    "install the GPU Operator: helm install --wait gpu-operator nvidia/gpu-operator -n gpu-operator "
    "--create-namespace --version=v26.7.0 --set driver.version=580.105.08",
    "label each GPU node pool=<its GPU family> (pool=h100, pool=a100)",
    "taint each GPU node nvidia.com/gpu=true:NoSchedule",
    "create pod/stuck-worker in namespace default (it stays Pending)",
]


@pytest.fixture(autouse=True)
def learner_env(monkeypatch, cluster):
    monkeypatch.setattr(connection, "_current", None)
    monkeypatch.setenv("GPULAB_HOME", str(cluster.home))
    monkeypatch.delenv(connection.MODE_ENV, raising=False)
    monkeypatch.delenv(connection.NAME_ENV, raising=False)


def _gpulab(cluster, *args, **env):
    return subprocess.run([*connection.gpulab_command(), *args], capture_output=True, text=True, timeout=600,
                          env={**cluster.env(), **env})


def test_labs_by_name_or_prefix_and_what_a_reset_changes():
    assert labs.resolve("lab03").name == labs.resolve("lab03-h100-pod").name == "lab03-h100-pod"
    assert [lab.short for lab in labs.LABS] == list(checks.LABS)
    assert labs.describe("lab03") == LAB03_CHANGES
    assert labs.describe("lab04-sharing")[1].endswith("--set driver.version=580.105.08 --set mig.strategy=mixed")
    assert labs.describe("lab05")[2] == (
        "create job/train-a and job/train-b in namespace default, each first with 2 workers, then raise each to 4 "
        "so both hold GPUs and neither can start")
    assert labs.describe("lab06")[2:] == [
        "label each GPU node gpu-allocation=dra and nvidia.com/gpu.deploy.device-plugin=false (no device plugin there)",
        "install NVIDIA's DRA driver for GPUs: helm install nvidia-dra-driver-gpu nvidia/nvidia-dra-driver-gpu "
        "-n nvidia-dra-driver-gpu --create-namespace --version=25.12.0 --set gpuResourcesEnabledOverride=true "
        "--set featureGates.DynamicMIG=true --set kubeletPlugin.nodeSelector.gpu-allocation=dra",
        "create resourceclaimtemplate/gpu-100gb, pod/too-big in namespace team-a (it stays Pending)"]
    with pytest.raises(KeyError, match="no lab 'lab9'; the labs are 00-setup \\(setup\\), lab01-gpu-operator"):
        labs.resolve("lab9")


def test_lab_list_cli(cluster):
    proc = _gpulab(cluster, "lab", "list")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[:3] == ["00-setup (setup): Setup: connect to a cluster", "  - a fresh cluster",
                                            "lab01-gpu-operator (lab01): The GPU Operator"]
    assert "lab03-h100-pod (lab03): The H100 pod\n" + "".join(f"  - {c}\n" for c in LAB03_CHANGES[1:]) in proc.stdout


def test_reset_refuses_a_cluster_of_the_learners_kubeconfig(cluster):
    cluster.kubectl("create", "configmap", "keep-me")
    proc = _gpulab(cluster, "lab", "reset", "lab03", GPULAB_CLUSTER="kubeconfig")
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == ("error: not resetting: GPULAB_CLUSTER=kubeconfig selects the cluster of your kubeconfig, "
                           "and gpulab lab reset only wipes the embedded cluster. To reach the starting state of "
                           "lab03-h100-pod it would:\n" + "".join(f"  - {c}\n" for c in LAB03_CHANGES))

    connection.connect(kubeconfig=cluster.kubeconfig)
    with pytest.raises(labs.ResetRefused, match="^not resetting: connected to https://127.0.0.1:\\d+ through a "
                                                "kubeconfig, and gpulab lab reset only wipes the embedded cluster"):
        labs.reset("lab01")
    cluster.kubectl("get", "configmap", "keep-me")                        # untouched
    assert _gpulab(cluster, "lab", "reset", "lab99").stderr.startswith("error: no lab 'lab99'; the labs are ")


def test_reset_recreates_the_embedded_cluster_on_its_port_and_reconnects(cluster, capsys):
    port = json.loads((cluster.home / "clusters" / "gpulab" / "cluster.json").read_text())["port"]
    learner = connection.connect()
    checks.run("lab01.allocatable_gpus", 1)
    assert "lab01.allocatable_gpus" in checks.progress.load()
    cluster.kubectl("create", "configmap", "gone-after-reset")

    path = labs.reset("lab01")
    assert path == cluster.kubeconfig
    assert capsys.readouterr().out == ("Resetting the embedded cluster 'gpulab' to the starting state of "
                                       "lab01-gpu-operator...\nlab01-gpu-operator is ready.\n")
    assert json.loads((cluster.home / "clusters" / "gpulab" / "cluster.json").read_text())["port"] == port
    # returned only once every node is Ready: a pod applied now meets no not-ready taint
    nodes = json.loads(cluster.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    assert len(nodes) == 4
    for node in nodes:
        assert {"type": "Ready", "status": "True"}.items() <= next(
            c for c in node["status"]["conditions"] if c["type"] == "Ready").items(), node["metadata"]["name"]
        assert all(t["key"] != "node.kubernetes.io/not-ready" for t in node["spec"].get("taints") or [])
    assert cluster.kubectl("get", "configmap", "gone-after-reset", check=False).returncode == 1
    assert connection.current() is not learner                              # new credentials, new client
    assert checks.run("setup.connected").passed
    assert "lab01.allocatable_gpus" not in checks.progress.load()


@pytest.mark.slow
def test_reset_lab03_builds_its_starting_state_with_the_real_gpu_stack(cluster, monkeypatch):
    """Integration: the GPU Operator installed by the GPU stack's own installer, then lab 03's steps."""
    monkeypatch.setattr(steps, "OPERATOR_TIMEOUT", 150.0)
    assert labs.reset("lab03", quiet=True) == cluster.kubeconfig
    api = cluster.client()
    for check_id, answer in (("lab01.operator_pinned", None), ("lab02.pools_labelled", None),
                             ("lab02.gpu_nodes_tainted", None), ("lab03.pending_reason", "c")):
        result = checks.run(check_id, checks.NO_ANSWER if answer is None else answer, client=api)
        assert result.passed, result
    assert checks.run("lab03.infer_worker_running", client=api).reason == \
        "there is no pod infer-worker in namespace default"
