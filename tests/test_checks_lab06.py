"""Lab 06's checks on a live cluster: each fails on the mistake it exists to catch and passes on the solution.

The cluster runs without the GPU stack; the test publishes, through the API, a DeviceClass and ResourceSlices
shaped as NVIDIA's DRA driver publishes them (one pool per node, memory as a capacity, productName as an
attribute), so the checks are judged on what the scheduler allocates from them. No driver prepares the claims
here: the checks judge allocation and placement, which come before preparation.
"""
from __future__ import annotations

import pytest
import yaml

from gpulab.checks import lab06
from tests.conftest import stop_cluster
from tests.test_checks_common import A100, H100, FakeGpuStack, eventually, run, start_plain_cluster

NS = lab06.NAMESPACE
PAUSE = "registry.k8s.io/pause:3.10.1"


def gpu(index: int, product: str, memory: str) -> dict:
    return {"name": f"gpu-{index}", "attributes": {"type": {"string": "gpu"}, "productName": {"string": product}},
            "capacity": {"memory": {"value": memory}}}


def published(node: str, product: str, memory: str, count: int) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-gpu"},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [gpu(i, product, memory) for i in range(count)]}}


DEVICE_CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.nvidia.com"},
                "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && "
                                                              "device.attributes['gpu.nvidia.com'].type == 'gpu'"}}]}}
AT_LEAST_40GI = "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"


def template(expression: str | None = AT_LEAST_40GI, namespace: str = NS, name: str = lab06.TEMPLATE) -> dict:
    exactly = {"deviceClassName": "gpu.nvidia.com"}
    if expression:
        exactly["selectors"] = [{"cel": {"expression": expression}}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}}


def pod(name: str, claim: dict, containers: int = 1, using: int | None = None) -> dict:
    using = containers if using is None else using
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"terminationGracePeriodSeconds": 0,
                     "containers": [{"name": f"c{i}", "image": PAUSE,
                                     **({"resources": {"claims": [{"name": "gpu"}]}} if i < using else {})}
                                    for i in range(containers)],
                     "resourceClaims": [{"name": "gpu", **claim}]}}


def shared(namespace: str = NS) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": lab06.SHARED_CLAIM, "namespace": namespace},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}


@pytest.fixture(scope="module")
def stack(tmp_path_factory, engine):
    cluster = start_plain_cluster(tmp_path_factory.mktemp("lab06"), engine)
    stack = FakeGpuStack(cluster)
    cluster.kubectl("create", "namespace", NS)
    apply(stack, DEVICE_CLASS, published(H100, "NVIDIA H100 80GB HBM3", "81559Mi", 8),
          published(A100, "NVIDIA A100-SXM4-40GB", "40Gi", 4))
    yield stack
    stop_cluster(cluster)


def apply(stack, *objects: dict) -> None:
    stack.cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(objects))


def clear(stack) -> None:
    for namespace in (NS, "default"):
        stack.cluster.kubectl("delete", "pods,resourceclaims,resourceclaimtemplates", "--all", "-n", namespace,
                              "--grace-period=0", "--force", "--wait=true", check=False)


def scheduled_or_refused(stack, name: str) -> None:
    def settled() -> bool:
        out = stack.cluster.kubectl("get", "pod", name, "-n", NS, "-o",
                                    "jsonpath={.spec.nodeName}{.status.conditions[0].reason}", check=False)
        return bool(out.stdout)
    assert eventually(settled), f"the scheduler did not decide on {name}"


# --- lab06.big_gpu_template ---------------------------------------------------------------------------------

def test_big_gpu_template_fails_on_a_template_in_the_wrong_namespace(stack):
    clear(stack)
    apply(stack, template(namespace="default"))
    result = run(stack, "lab06.big_gpu_template")
    assert not result.passed and "is in namespace default, not team-a" in result.reason


def test_big_gpu_template_fails_on_a_selector_over_a_missing_attribute(stack):
    clear(stack)
    missing = "device.attributes['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"
    apply(stack, template(missing), pod(lab06.BIG_POD, {"resourceClaimTemplateName": lab06.TEMPLATE}))
    result = run(stack, "lab06.big_gpu_template")
    assert not result.passed
    assert "device.attributes['gpu.nvidia.com'].memory, which no device publishes" in result.reason
    assert "device.capacity['gpu.nvidia.com'].memory" in result.reason


def test_big_gpu_template_fails_on_a_request_the_cluster_cannot_satisfy(stack):
    clear(stack)
    apply(stack, template(AT_LEAST_40GI.replace("40Gi", "100Gi")),
          pod(lab06.BIG_POD, {"resourceClaimTemplateName": lab06.TEMPLATE}))
    scheduled_or_refused(stack, lab06.BIG_POD)
    result = run(stack, "lab06.big_gpu_template")
    assert not result.passed and "its claim is not allocated" in result.reason
    assert lab06.CANNOT_ALLOCATE in result.reason


def test_big_gpu_template_fails_when_any_gpu_would_do(stack):
    clear(stack)
    apply(stack, template(None), pod(lab06.BIG_POD, {"resourceClaimTemplateName": lab06.TEMPLATE}))
    result = run(stack, "lab06.big_gpu_template")
    assert not result.passed and "does not select by memory" in result.reason


def test_big_gpu_template_passes_on_the_solution(stack):
    clear(stack)
    apply(stack, template(), pod(lab06.BIG_POD, {"resourceClaimTemplateName": lab06.TEMPLATE}))
    result = eventually(lambda: run(stack, "lab06.big_gpu_template"))
    assert result.passed, result
    assert "gpu-" in result.reason and ("81559Mi" in result.reason or "40Gi" in result.reason)


# --- lab06.shared_claim -------------------------------------------------------------------------------------

def test_shared_claim_fails_on_a_claim_in_the_wrong_namespace(stack):
    clear(stack)
    apply(stack, shared("default"), pod(lab06.PAIR_POD, {"resourceClaimName": lab06.SHARED_CLAIM}, containers=2))
    result = run(stack, "lab06.shared_claim")
    assert not result.passed and "ResourceClaim shared-gpu is in namespace default, not team-a" in result.reason
    assert "a pod can use only claims and templates of its own namespace" in result.reason


def test_shared_claim_fails_when_one_container_does_not_use_it(stack):
    clear(stack)
    apply(stack, shared(), pod(lab06.PAIR_POD, {"resourceClaimName": lab06.SHARED_CLAIM}, containers=2, using=1))
    result = run(stack, "lab06.shared_claim")
    assert not result.passed and "1 of pair's 2 containers use the claim" in result.reason


def test_shared_claim_passes_on_the_solution(stack):
    clear(stack)
    apply(stack, shared(), pod(lab06.PAIR_POD, {"resourceClaimName": lab06.SHARED_CLAIM}, containers=2))
    result = eventually(lambda: run(stack, "lab06.shared_claim"))
    assert result.passed, result
    assert result.reason.startswith("c0, c1 share gpu-") and "reserved for pair" in result.reason


# --- lab06.pending_reason -----------------------------------------------------------------------------------

def test_pending_reason_judges_the_answer_against_the_scheduler(stack):
    clear(stack)
    apply(stack, template(AT_LEAST_40GI.replace("40Gi", "100Gi"), name="too-big-gpu"),
          pod(lab06.TOO_BIG_POD, {"resourceClaimTemplateName": "too-big-gpu"}))
    scheduled_or_refused(stack, lab06.TOO_BIG_POD)
    wrong = run(stack, "lab06.pending_reason", "a")
    assert not wrong.passed and "asks for no nvidia.com/gpu" in wrong.reason
    assert not run(stack, "lab06.pending_reason", "c").passed
    right = run(stack, "lab06.pending_reason", "d")
    assert right.passed and lab06.CANNOT_ALLOCATE in right.reason
    assert run(stack, "lab06.pending_reason", lab06.CANNOT_ALLOCATE).passed     # the scheduler's own words


def test_pending_reason_fails_when_there_is_nothing_pending(stack):
    clear(stack)
    result = run(stack, "lab06.pending_reason", "d")
    assert not result.passed and "there is no pod too-big" in result.reason
