"""Lab 02's checks on a live cluster: the solution passes (spelled several ways), the start and wrong answers fail.

Each test first puts the cluster in the lab's starting state (the GPU Operator
installed, no pools, no taints, no workloads), then adds what earlier
exercises of the lab would have done.
"""
from __future__ import annotations

import re

import pytest

from tests.conftest import stop_cluster
from tests.test_checks_common import A100, H100, FakeGpuStack, eventually, run, start_plain_cluster


CPU = "gpulab-worker"
TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}


@pytest.fixture(scope="module")
def stack(tmp_path_factory, engine):
    cluster = start_plain_cluster(tmp_path_factory.mktemp("lab02"), engine)
    yield FakeGpuStack(cluster)
    stop_cluster(cluster)


def lab_start(stack, *, pools_done: bool = False) -> None:
    """The lab's starting state; with ``pools_done``, its first two exercises solved (pools labelled, tainted)."""
    stack.cluster.kubectl("delete", "deployment", "web", "--ignore-not-found", "--wait=true")
    stack.delete_pods("trainer")
    stack.operator()
    stack.standard()
    solved = {H100: "h100", A100: "a100"} if pools_done else {}
    for node in (CPU, H100, A100):
        stack.label(node, pool=solved.get(node))
        stack.taint(node, *([TAINT] if node in solved else []))


def test_pools_labelled(stack):
    stack.set_node(H100, {}, {})
    stack.set_node(A100, {}, {})
    result = run(stack, "lab02.pools_labelled")          # no GPU stack at all
    assert not result.passed
    assert result.reason == ("no node is known as a GPU node yet (none has nvidia.com/gpu.present=true or advertises "
                             "nvidia.com/gpu): the GPU Operator is not running")

    lab_start(stack)
    assert run(stack, "lab02.pools_labelled").reason == (
        "GPU node gpulab-worker2 (NVIDIA-H100-80GB-HBM3) has no pool label; "
        "GPU node gpulab-worker3 (NVIDIA-A100-SXM4-40GB) has no pool label")

    stack.cluster.kubectl("label", "nodes", H100, "pool=a100")
    stack.label(A100, pool="h100")
    assert run(stack, "lab02.pools_labelled").reason == (
        "GPU node gpulab-worker2 has pool=a100, but its GPUs are NVIDIA-H100-80GB-HBM3; "
        "GPU node gpulab-worker3 has pool=h100, but its GPUs are NVIDIA-A100-SXM4-40GB")

    stack.cluster.kubectl("label", "nodes", H100, "pool=h100", "--overwrite")   # by kubectl...
    stack.label(A100, pool="a100")                                               # ...and by the client
    stack.label(CPU, pool="h100")
    assert run(stack, "lab02.pools_labelled").reason == "node gpulab-worker has no GPUs but is labelled pool=h100"

    stack.cluster.kubectl("label", "nodes", CPU, "pool=cpu", "--overwrite")     # a CPU pool is fine
    result = run(stack, "lab02.pools_labelled")
    assert result.passed, result
    assert result.reason == ("pools match the GPUs (gpulab-worker2 pool=h100, gpulab-worker3 pool=a100) and no CPU "
                             "node claims a GPU pool")


def test_gpu_nodes_tainted(stack):
    lab_start(stack)
    assert run(stack, "lab02.gpu_nodes_tainted").reason == (
        "GPU node gpulab-worker2 has no nvidia.com/gpu taint; GPU node gpulab-worker3 has no nvidia.com/gpu taint")

    stack.taint(H100, {**TAINT, "value": "yes"})
    stack.taint(A100, {**TAINT, "effect": "PreferNoSchedule"})
    stack.taint(CPU, TAINT)
    result = run(stack, "lab02.gpu_nodes_tainted")
    assert not result.passed
    assert result.reason == (
        "GPU node gpulab-worker2 has nvidia.com/gpu=yes:NoSchedule: value 'yes', where the exercise's taint has "
        "'true'; GPU node gpulab-worker3 has nvidia.com/gpu=true:PreferNoSchedule: effect PreferNoSchedule, where "
        "the exercise asks for NoSchedule; node gpulab-worker has no GPUs but carries nvidia.com/gpu=true:NoSchedule")

    stack.taint(CPU)
    stack.taint(H100)
    stack.taint(A100)
    stack.cluster.kubectl("taint", "nodes", H100, A100, "nvidia.com/gpu=true:NoSchedule")
    result = run(stack, "lab02.gpu_nodes_tainted")
    assert result.passed, result
    assert result.reason == ("every GPU node (gpulab-worker2, gpulab-worker3) carries nvidia.com/gpu=true:NoSchedule "
                             "and no CPU node does")


WEB = """apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      terminationGracePeriodSeconds: 0
      containers: [{{name: nginx, image: nginx:1.29}}]
{extra}
"""


def _web(stack, replicas: int, extra: str = "") -> None:
    stack.cluster.kubectl("delete", "deployment", "web", "--ignore-not-found", "--wait=true")
    stack.cluster.kubectl("apply", "-f", "-", input=WEB.format(replicas=replicas, extra=extra))


def test_web_off_gpu_nodes(stack):
    lab_start(stack, pools_done=True)
    assert run(stack, "lab02.web_off_gpu_nodes").reason == "there is no Deployment web in namespace default"

    _web(stack, 2)
    assert run(stack, "lab02.web_off_gpu_nodes").reason == (
        "Deployment web asks for 2 replicas; the exercise asks for 3")

    # The wrong answer: web tolerates the GPU taint and is steered onto the H100 pool.
    _web(stack, 3, "      tolerations: [{key: nvidia.com/gpu, operator: Exists}]\n"
                   "      nodeSelector: {pool: h100}")
    eventually(lambda: run(stack, "lab02.web_off_gpu_nodes").reason.count(" on ") == 3)
    result = run(stack, "lab02.web_off_gpu_nodes")
    assert not result.passed
    assert re.fullmatch(r"web pods run on GPU nodes: (web-\w+-\w+ on gpulab-worker2(, )?){3}", result.reason), result
    assert "kubectl rollout restart deployment/web" in result.hint

    _web(stack, 3)                                        # the solution: no toleration, the taint does the rest
    eventually(lambda: run(stack, "lab02.web_off_gpu_nodes").passed)
    result = run(stack, "lab02.web_off_gpu_nodes")
    assert result.passed, result
    assert result.reason == "Deployment web has 3 ready replicas, all on nodes without GPUs (gpulab-worker)"


def _gpu_pod_count(stack) -> int:
    pods = stack.core.list_namespaced_pod("default", label_selector="app=web").items
    return sum(p.spec.node_name in (H100, A100) for p in pods if not p.metadata.deletion_timestamp)


def test_web_before_taint(stack):
    """Forgetting the taint: web, created on untainted GPU nodes, lands there; the learner counts how many."""
    lab_start(stack)
    stack.label(H100, pool="h100")
    stack.label(A100, pool="a100")
    assert run(stack, "lab02.web_before_taint", 0).reason == "there is no Deployment web in namespace default"

    _web(stack, 3)
    eventually(lambda: run(stack, "lab02.web_before_taint", 0).reason != "Deployment web has 0 of 3 replicas ready"
               and "replicas ready" not in run(stack, "lab02.web_before_taint", 0).reason)
    on_gpu = _gpu_pod_count(stack)
    assert on_gpu >= 1          # LeastAllocated: the GPU machines have the most free CPU and memory
    result = run(stack, "lab02.web_before_taint", on_gpu)
    assert result.passed, result
    assert re.fullmatch(rf"right: {on_gpu} of web's 3 pods run on GPU nodes \(gpulab-worker[23](, gpulab-worker3)?\): "
                        r"nothing kept them off, and the scheduler prefers the nodes with the most free CPU and "
                        r"memory \(LeastAllocated scoring\), which big GPU machines are; those pods now take room "
                        r"GPU work needs", result.reason), result.reason
    for wrong in ({on_gpu - 1, 0} - {on_gpu}) | {4}:
        result = run(stack, "lab02.web_before_taint", wrong)
        assert not result.passed
        assert result.reason == f"{wrong} is not how many of web's 3 pods run on GPU nodes now"
    assert run(stack, "lab02.web_before_taint", "most of them").reason == "'most of them' is not a whole number of pods"

    # Tainted first and web placed afterwards: the pods say nothing about a cluster without the taint.
    stack.taint(H100, TAINT)
    stack.taint(A100, TAINT)
    stack.cluster.kubectl("rollout", "restart", "deployment/web")
    stack.cluster.kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    assert eventually(lambda: _gpu_pod_count(stack) == 0)
    result = run(stack, "lab02.web_before_taint", 0)
    assert not result.passed
    assert result.reason.startswith("the GPU nodes are tainted (gpulab-worker2, gpulab-worker3) and none of web's "
                                    "pods runs on them")


def test_taint_kept_pods(stack):
    """What NoSchedule does not do: the pods already on the GPU nodes stay."""
    from gpulab.checks.lab02 import TAINT_EFFECT

    lab_start(stack)
    _web(stack, 3, "      nodeSelector: {pool: h100}")      # web on the H100 node, as it lands without the taint
    stack.label(H100, pool="h100")
    eventually(lambda: _gpu_pod_count(stack) == 3)
    stack.cluster.kubectl("taint", "nodes", H100, A100, "nvidia.com/gpu=true:NoSchedule")
    assert _gpu_pod_count(stack) == 3
    for answer in ("d", "(D)", TAINT_EFFECT.options["d"]):
        result = run(stack, "lab02.taint_kept_pods", answer)
        assert result.passed, (answer, result)
        assert result.reason == ("right: (d) Nothing: they keep running on the GPU nodes. NoSchedule only keeps new "
                                 "pods without a matching toleration from being scheduled there; it never moves pods "
                                 "that already run. Here 3 of web's pods still run on GPU nodes.")
    for option in "abc":
        result = run(stack, "lab02.taint_kept_pods", option)
        assert not result.passed and result.reason == f"({option}) is not it: {TAINT_EFFECT.why_not[option]}"
    # A sentence that names the right effect and the opposite meaning is not an option.
    result = run(stack, "lab02.taint_kept_pods", "NoSchedule evicted them, they did not keep running")
    assert result.reason == ("'noschedule evicted them, they did not keep running' is not one of the options "
                             "(a, b, c, d)")


def _trainer(stack, **kwargs) -> None:
    stack.delete_pods("trainer")
    stack.pod("trainer", **kwargs)


def test_trainer_tolerates(stack):
    lab_start(stack, pools_done=True)
    assert run(stack, "lab02.trainer_tolerates").reason == "there is no pod trainer in namespace default"

    _trainer(stack, gpus="1", wait="Unschedulable")      # the forgotten toleration
    result = run(stack, "lab02.trainer_tolerates")
    assert result.reason == ("pod trainer does not tolerate the GPU nodes' taint nvidia.com/gpu=true:NoSchedule: "
                             "it has no tolerations of its own")
    assert "toleration" in result.hint and "operator: Exists" not in result.hint

    _trainer(stack, gpus="1", wait="Unschedulable",
             tolerations=[{"key": "nvidia.com/gpu", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}])
    assert run(stack, "lab02.trainer_tolerates").reason == (
        "pod trainer does not tolerate the GPU nodes' taint nvidia.com/gpu=true:NoSchedule: its tolerations are "
        "nvidia.com/gpu=yes:NoSchedule")

    _trainer(stack, tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}],
             node_selector={"kubernetes.io/hostname": CPU})
    assert run(stack, "lab02.trainer_tolerates").reason == (
        "pod trainer runs on gpulab-worker, which has no GPUs: a toleration lets a pod onto a tainted node, it does "
        "not send it there")

    correct = [
        [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        [{"key": "nvidia.com/gpu", "operator": "Exists"}],
        [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
        [{"key": "nvidia.com/gpu", "value": "true"}],
        [{"operator": "Exists"}],
    ]
    for tolerations in correct:
        _trainer(stack, gpus="1", tolerations=tolerations)
        result = run(stack, "lab02.trainer_tolerates")
        assert result.passed, (tolerations, result)
        assert re.fullmatch(r"pod trainer tolerates the GPU taint and runs on GPU node gpulab-worker[23]",
                            result.reason)
