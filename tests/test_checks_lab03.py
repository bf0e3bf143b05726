"""Lab 03's checks on a live cluster in the lab's starting state (operator, pools labelled and tainted)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, stop_cluster
from tests.test_checks_common import A100, H100, FakeGpuStack, run, start_plain_cluster


H100_PRODUCT = "NVIDIA-H100-80GB-HBM3"
TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
TOLERATE = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
STUCK_WORKER = Path(ROOT, "gpulab", "labs", "data", "stuck-worker.yaml")
# The scheduler's verdict on the course manifest here: the CPU worker is not an H100, every other node is tainted.
# (A node the node lifecycle controller finds late with its heartbeat is tainted too, so counts may shift.)
AFFINITY = "node(s) didn't match Pod's node affinity/selector"
UNTOLERATED = "node(s) had untolerated taint(s)"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    cluster = start_plain_cluster(tmp_path_factory.mktemp("lab03"))
    stack = FakeGpuStack(cluster)
    stack.operator()
    stack.standard()
    stack.label(H100, pool="h100")
    stack.label(A100, pool="a100")
    stack.taint(H100, TAINT)
    stack.taint(A100, TAINT)
    yield stack
    stop_cluster(cluster)


def _infer(stack, wait: str | None = "Running", **kwargs) -> None:
    stack.delete_pods("infer-worker")
    stack.pod("infer-worker", wait=wait, **kwargs)


def test_infer_worker_running(stack):
    assert run(stack, "lab03.infer_worker_running").reason == "there is no pod infer-worker in namespace default"

    # The course's manifest with its toleration forgotten.
    pod = yaml.safe_load((ROOT / "course" / "manifests" / "infer-worker.yaml").read_text())
    del pod["spec"]["tolerations"]
    stack.cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(pod))
    stack.cluster.kubectl("wait", "--for=condition=PodScheduled=False", "pod/infer-worker", "--timeout=20s")
    result = run(stack, "lab03.infer_worker_running")
    assert result.reason.startswith("infer-worker is Pending (not scheduled: 0/4 nodes are available: ")
    assert UNTOLERATED in result.reason
    assert result.hint == "the GPU nodes are tainted (lab 02): the pod needs a toleration for the taint"

    wrong = [
        ({"gpus": "2", "node_selector": {"nvidia.com/gpu.product": H100_PRODUCT}},
         "infer-worker requests 2 nvidia.com/gpu; the exercise asks for one whole GPU"),
        ({"node_selector": {"nvidia.com/gpu.product": H100_PRODUCT}},
         "infer-worker does not request nvidia.com/gpu; the exercise asks for one whole GPU"),
        ({"gpus": "1", "node_selector": {"kubernetes.io/hostname": H100}},
         "infer-worker is tied to a node by its name; the exercise selects the node by its GPU product (the "
         "nvidia.com/gpu.product label), which keeps working when nodes are replaced"),
        ({"gpus": "1"},
         "infer-worker does not select a GPU product: without a nvidia.com/gpu.product selector it may run on any "
         "node with a free GPU"),
        ({"gpus": "1", "node_selector": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}},
         "infer-worker selects nvidia.com/gpu.product=NVIDIA-A100-SXM4-40GB, which is not an H100"),
        ({"gpus": "1", "node_selector": {"nvidia.com/gpu.product": "NVIDIA-H100-PCIe"}},
         "infer-worker selects nvidia.com/gpu.product=NVIDIA-H100-PCIe, and no node has that value"),
    ]
    for kwargs, reason in wrong:
        _infer(stack, wait=None, tolerations=TOLERATE, **kwargs)
        result = run(stack, "lab03.infer_worker_running")
        assert not result.passed and result.reason == reason, kwargs

    by_affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": [H100_PRODUCT]}]}]}}}
    for kwargs, how in (({"node_selector": {"nvidia.com/gpu.product": H100_PRODUCT}, "tolerations": TOLERATE},
                         "selector"),
                        ({"affinity": by_affinity, "tolerations": [{**TAINT, "operator": "Equal"}]}, "affinity")):
        _infer(stack, gpus="1", **kwargs)
        result = run(stack, "lab03.infer_worker_running")
        assert result.passed, (kwargs, result)
        assert result.reason == (f"infer-worker runs on H100 node gpulab-worker2 with one whole nvidia.com/gpu, "
                                 f"selected by nvidia.com/gpu.product ({how})")


def test_pending_reason(stack):
    assert run(stack, "lab03.pending_reason", "untolerated taint").reason == "there is no pod stuck-worker to look at"

    stack.cluster.kubectl("apply", "-f", str(STUCK_WORKER))     # the lab's starting state
    stack.cluster.kubectl("wait", "--for=condition=PodScheduled=False", "pod/stuck-worker", "--timeout=20s")
    message = stack.core.read_namespaced_pod("stuck-worker", "default").status.conditions[0].message
    assert message.startswith("0/4 nodes are available: ") and UNTOLERATED in message
    for answer in ("node(s) had untolerated taint(s)", "3 node(s) had untolerated taint(s).", "Untolerated taint",
                   message):
        result = run(stack, "lab03.pending_reason", answer)
        assert result.passed, (answer, result)
        assert result.reason == (f"right: the scheduler reports \"node(s) had untolerated taint(s)\" for "
                                 f"stuck-worker: {message}")
    wrong = {
        f"1 {AFFINITY}": (
            "\"1 node(s) didn't match pod's node affinity/selector\" is why the scheduler ruled out the nodes "
            "stuck-worker does not select; it is not what stops it on the nodes it does select" if AFFINITY in message
            else "\"1 node(s) didn't match pod's node affinity/selector\" is not one of the reasons the scheduler "
                 "gives for stuck-worker"),
        "Insufficient nvidia.com/gpu": "'insufficient nvidia.com/gpu' is not one of the reasons the scheduler gives "
                                       "for stuck-worker",
        "the GPU nodes refuse it": "'the gpu nodes refuse it' is not one of the reasons the scheduler gives for "
                                   "stuck-worker",
        "": "the answer is empty",
    }
    for answer, reason in wrong.items():
        result = run(stack, "lab03.pending_reason", answer)
        assert not result.passed and result.reason == reason, answer
        assert "untolerated" not in result.reason + result.hint


def test_fraction_refused(stack):
    refusal = ('Pod "gpulab-half-gpu-probe" is invalid: [spec.containers[0].resources.limits[nvidia.com/gpu]: '
               'Invalid value: "500m": must be an integer, spec.containers[0].resources.requests[nvidia.com/gpu]: '
               'Invalid value: "500m": must be an integer]')
    for answer in ("must be an integer", "GPUs are requested in whole numbers", "fractions of a GPU are refused",
                   "nvidia.com/gpu has to be an integer"):
        result = run(stack, "lab03.fraction_refused", answer)
        assert result.passed, (answer, result)
        assert result.reason == f"right: the API server refuses it before it is stored: {refusal}"
    result = run(stack, "lab03.fraction_refused", "Insufficient nvidia.com/gpu")
    assert result.reason == ("'insufficient nvidia.com/gpu' describes scheduling, but the pod never reaches the "
                             "scheduler: the API server refuses it when it is created")
    result = run(stack, "lab03.fraction_refused", "the GPU is too small")
    assert result.reason == "'the gpu is too small' is not why the API server refuses the pod"
    assert "integer" not in result.reason + result.hint
    assert not stack.core.list_namespaced_pod("default", field_selector="metadata.name=gpulab-half-gpu-probe").items
