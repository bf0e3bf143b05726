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
def stack(tmp_path_factory, engine):
    cluster = start_plain_cluster(tmp_path_factory.mktemp("lab03"), engine)
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


def test_infer_worker_refused_by_the_api_server_says_so(stack):
    """A fractional request never becomes a pod: the check says the API server refused the manifest, and why."""
    from gpulab import checks

    stack.delete_pods("infer-worker")
    half = (ROOT / "course" / "manifests" / "infer-worker.yaml").read_text().replace("nvidia.com/gpu: 1\n",
                                                                                     "nvidia.com/gpu: 0.5\n")
    assert stack.cluster.kubectl("apply", "-f", "-", input=half, check=False).returncode != 0
    result = checks.run("lab03.infer_worker_running", half, client=stack.api)
    assert not result.passed
    assert result.reason == (
        'there is no pod infer-worker: the API server refused to create it (Invalid): Pod "infer-worker" is invalid: '
        '[spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "500m": must be an integer, '
        'spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: "500m": must be an integer]')
    assert not stack.core.list_namespaced_pod("default", field_selector="metadata.name=infer-worker").items
    whole = half.replace("nvidia.com/gpu: 0.5", "nvidia.com/gpu: 1")
    applied_nothing = checks.run("lab03.infer_worker_running", whole, client=stack.api)
    assert applied_nothing.reason == ("there is no pod infer-worker in namespace default: the API server accepts the "
                                      "manifest in infer_worker, but it was not applied")
    assert checks.run("lab03.infer_worker_running", None, client=stack.api).reason == \
        "there is no pod infer-worker in namespace default"


def test_pending_reason(stack):
    from gpulab.checks.lab03 import PENDING

    assert run(stack, "lab03.pending_reason", "a").reason == "there is no pod stuck-worker to look at"

    stack.cluster.kubectl("apply", "-f", str(STUCK_WORKER))     # the lab's starting state
    stack.cluster.kubectl("wait", "--for=condition=PodScheduled=False", "pod/stuck-worker", "--timeout=20s")
    message = stack.core.read_namespaced_pod("stuck-worker", "default").status.conditions[0].message
    assert message.startswith("0/4 nodes are available: ") and UNTOLERATED in message
    # The option's letter or text, or the scheduler's own words for the H100 node.
    # Quoting is quoting: the whole PodScheduled message, or kubectl describe's event line around it.
    event = f"  Warning  FailedScheduling  12s   default-scheduler  {message}"
    for answer in ("c", "(C)", "the pod does not tolerate the GPU nodes' taint", PENDING.options["c"],
                   "node(s) had untolerated taint(s)", "3 node(s) had untolerated taint(s).", message, event):
        result = run(stack, "lab03.pending_reason", answer)
        assert result.passed, (answer, result)
        assert result.reason == (f"right: (c) The pod does not tolerate the GPU nodes' taint. The scheduler reports "
                                 f"\"node(s) had untolerated taint(s)\" for stuck-worker: {message}")
    why_affinity = ("that is why the scheduler ruled out the nodes stuck-worker does not select; it is not what "
                    "stops it on the nodes it does select" if AFFINITY in message else
                    "the scheduler reports no node whose labels fail the pod's nodeSelector")
    wrong = {
        "b": f"(b) is not it: {why_affinity}",
        f"1 {AFFINITY}": f"(b) is not it: {why_affinity}" if AFFINITY in message else
                         f"'1 {AFFINITY.lower()}' is not one of the options (a, b, c, d)",
        "a": "(a) is not it: the scheduler does not report Insufficient nvidia.com/gpu for stuck-worker",
        "d": "(d) is not it: the pod exists: the API server stored it, and Pending with a FailedScheduling event is "
             "the scheduler's verdict",
        "Insufficient nvidia.com/gpu": "'insufficient nvidia.com/gpu' is not one of the options (a, b, c, d)",
        # Right words, contradictory meaning: not an option, so not a pass.
        "not the missing toleration: untolerated taints are fine here": "'not the missing toleration: untolerated "
                                                                        "taints are fine here' is not one of the "
                                                                        "options (a, b, c, d)",
        "the whole message": "'the whole message' is not one of the options (a, b, c, d)",
    }
    for answer, reason in wrong.items():
        result = run(stack, "lab03.pending_reason", answer)
        assert not result.passed and result.reason == reason, answer
        assert "untolerated" not in result.hint
    assert run(stack, "lab03.pending_reason", "").reason == "no answer yet: pending_reason is empty"


def test_fraction_refused(stack):
    from gpulab.checks.lab03 import FRACTION

    refusal = ('Pod "gpulab-half-gpu-probe" is invalid: [spec.containers[0].resources.limits[nvidia.com/gpu]: '
               'Invalid value: "500m": must be an integer, spec.containers[0].resources.requests[nvidia.com/gpu]: '
               'Invalid value: "500m": must be an integer]')
    kubectl_line = ('The Pod "half" is invalid: spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: '
                    '"500m": must be an integer')
    for answer in ("b", FRACTION.options["b"], "must be an integer", " Must be an integer. ",
                   'Invalid value: "500m": must be an integer', kubectl_line, refusal):
        result = run(stack, "lab03.fraction_refused", answer)
        assert result.passed, (answer, result)
        assert result.reason == (f"right: (b) The API server refuses it: nvidia.com/gpu must be whole. An extended "
                                 f"resource is counted in whole units: its request must be an integer. It refuses "
                                 f"the pod before it is stored: {refusal}")
    wrong = {
        "a": "(a) is not it: the pod never reaches the scheduler: the API server refuses it when it is created, "
             "before it is stored",
        "c": "(c) is not it: the pod never reaches a node: the API server refuses it before it is stored, so no "
             "kubelet or device plugin sees it",
        "d": "(d) is not it: fractions are not fine: the API server refuses the pod outright, whatever GPUs are free",
        # The contradictory answer, as free text and as the option it is.
        "fractions are fine, the node just has no free GPU": "'fractions are fine, the node just has no free gpu' is "
                                                             "not one of the options (a, b, c, d)",
        FRACTION.options["d"]: "(d) is not it: fractions are not fine: the API server refuses the pod outright, "
                               "whatever GPUs are free",
        "Insufficient nvidia.com/gpu": "'insufficient nvidia.com/gpu' is not one of the options (a, b, c, d)",
        "it must be an integer, not a fraction: fractions are fine really": "'it must be an integer, not a fraction: "
                                                                            "fractions are fine really' is not one "
                                                                            "of the options (a, b, c, d)",
    }
    for answer, reason in wrong.items():
        result = run(stack, "lab03.fraction_refused", answer)
        assert not result.passed and result.reason == reason, answer
    assert not stack.core.list_namespaced_pod("default", field_selector="metadata.name=gpulab-half-gpu-probe").items


def test_check_yourself_why_a_whole_gpu_and_not_memory():
    from gpulab import checks
    from gpulab.checks.lab03 import CHECK_YOURSELF

    right = checks.run("lab03.check_yourself", "d", client=object())       # judged without reading the cluster
    assert right.passed and right.reason == ("right: (d) The device plugin advertises whole GPUs, so the scheduler "
                                             "counts GPUs. It advertises them as an integer resource (nvidia.com/gpu), "
                                             "and Kubernetes knows nothing of GPU memory.")
    for option in "abc":
        result = checks.run("lab03.check_yourself", option, client=object())
        assert not result.passed and result.reason == f"({option}) is not it: {CHECK_YOURSELF.why_not[option]}"
        assert "(d)" not in result.reason + result.hint
