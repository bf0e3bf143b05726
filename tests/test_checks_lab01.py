"""setup.connected and lab 01's checks: passing on the solution's state, failing with their reasons otherwise.

Each test starts from the lab's starting state (a cluster without the GPU stack), then walks to the solution.
"""
from __future__ import annotations

import json

import pytest

from gpulab.checks import settled
from tests.conftest import stop_cluster
from tests.test_checks_common import A100, H100, FakeGpuStack, run, start_plain_cluster


@pytest.fixture(scope="module")
def stack(tmp_path_factory, engine):
    cluster = start_plain_cluster(tmp_path_factory.mktemp("lab01"), engine)
    yield FakeGpuStack(cluster)
    stop_cluster(cluster)


def _client_for(stack, *, host: str | None = None, token: str | None = None):
    """A client like the kubeconfig's, with another server address, or a bearer token instead of its credentials
    (a token on the embedded cluster, a client certificate on the upstream engine); no credential refresh."""
    from kubernetes import client

    good = stack.api.configuration
    configuration = client.Configuration(host=host or good.host)
    if token:
        configuration.api_key = {"BearerToken": f"Bearer {token}"}
    else:
        configuration.api_key = dict(good.api_key)
        configuration.cert_file, configuration.key_file = good.cert_file, good.key_file
    configuration.ssl_ca_cert = good.ssl_ca_cert
    configuration.retries = False
    return client.ApiClient(configuration)


def test_setup_connected(stack):
    from gpulab import checks

    result = run(stack, "setup.connected")
    host = stack.api.configuration.host
    served = json.loads(stack.cluster.kubectl("version", "-o", "json").stdout)["serverVersion"]["gitVersion"]
    assert result.passed, result
    assert result.reason == (f"connected to Kubernetes {served} at {host}: 4 nodes (gpulab-control-plane, "
                             "gpulab-worker, gpulab-worker2, gpulab-worker3)")
    refused = checks.run("setup.connected", client=_client_for(stack, token="not-the-token"))
    assert not refused.passed
    assert refused.reason == ("the API server refused the request (401 Unauthorized): the kubeconfig's credentials "
                              "are not valid for this cluster")
    unreachable = checks.run("setup.connected", client=_client_for(stack, host="https://127.0.0.1:9"))
    assert not unreachable.passed
    assert unreachable.reason == "cannot reach the API server at https://127.0.0.1:9 ([Errno 111] Connection refused)"
    assert "gpulab cluster status" in unreachable.hint


def test_operator_pinned(stack, monkeypatch):
    stack.remove_operator()
    result = run(stack, "lab01.operator_pinned")        # the lab's starting state: a fresh cluster
    assert not result.passed
    assert result.reason == ("the GPU Operator is not installed: the API server does not serve ClusterPolicy "
                             "(clusterpolicies.nvidia.com)")

    # The mistake: an install that never pinned the driver. Chart v25.10.1's default driver *is* 580.105.08, so
    # the ClusterPolicy alone cannot tell; the release's user-supplied values can.
    stack.operator(sets=(), version="v25.10.1")
    policy = stack.custom.get_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", "cluster-policy")
    assert policy["spec"]["driver"]["version"] == "580.105.08"
    result = run(stack, "lab01.operator_pinned")
    assert not result.passed
    assert result.reason == (
        "the driver is not pinned: release gpu-operator-1764547200 was installed without driver.version among its "
        "values (`helm get values gpu-operator-1764547200 -n gpu-operator` shows none), so it runs whatever driver "
        "the chart defaults to (580.105.08 for this chart) and the next chart upgrade replaces it under running GPU "
        "pods")
    assert result.hint == ("set the driver version explicitly when you install (or upgrade) the chart: "
                           "--set driver.version=...")

    stack.operator(sets=())                             # unpinned, on the course's chart v26.7.0: its driver
    assert run(stack, "lab01.operator_pinned").reason.startswith(
        "the driver is not pinned: release gpu-operator-1764547200 was installed without driver.version among its "
        "values (`helm get values gpu-operator-1764547200 -n gpu-operator` shows none), so it runs whatever driver "
        "the chart defaults to (595.91.07 for this chart)")

    stack.operator(sets=("driver.version=580.126.20",))
    assert run(stack, "lab01.operator_pinned").reason == (
        "release gpu-operator-1764547200 pins driver.version=580.126.20; the exercise pins 580.105.08")

    stack.operator(release=False)                       # a ClusterPolicy that no Helm release installed
    assert run(stack, "lab01.operator_pinned").reason == (
        "ClusterPolicy cluster-policy exists, but no Helm release of the gpu-operator chart is deployed, so nothing "
        "records which driver version was asked for")

    stack.operator(sets=("driver.enabled=false",))
    assert run(stack, "lab01.operator_pinned").reason == (
        "ClusterPolicy cluster-policy has spec.driver.enabled=false: the operator does not manage the driver, so "
        "nothing pins its version")

    stack.operator(state="notReady")                    # the operator still deploying: not judged, never passed
    monkeypatch.setattr(settled, "SETTLE_SECONDS", 1.0)
    assert run(stack, "lab01.operator_pinned").reason == (
        "not settled yet: the ClusterPolicy is notReady; this check judges the cluster once it has settled, run it "
        "again")

    stack.operator()                                    # the solution: --set driver.version=580.105.08, ready
    result = run(stack, "lab01.operator_pinned")
    assert result.passed, result
    assert result.reason == ("GPU Operator installed: release gpu-operator-1764547200 pins driver.version=580.105.08 "
                             "and ClusterPolicy cluster-policy is ready with it")


def test_allocatable_gpus(stack):
    from gpulab import checks

    stack.set_node(H100, {}, {})
    stack.set_node(A100, {}, {})
    result = run(stack, "lab01.allocatable_gpus", 12)   # before the device plugin advertises anything
    assert not result.passed
    assert result.reason == "no node advertises nvidia.com/gpu yet, so there is nothing to count"

    stack.standard()
    for answer in (12, "12", 12.0, " 12 "):
        result = run(stack, "lab01.allocatable_gpus", answer)
        assert result.passed, (answer, result)
        assert result.reason == "right: 12 nvidia.com/gpu allocatable (gpulab-worker2 8, gpulab-worker3 4)"
    wrong = {
        8: "8 is what a single node advertises; the question asks for the whole cluster",
        2: "2 is the number of GPU nodes; the question asks for GPUs",
        13: "13 is not the cluster's total allocatable nvidia.com/gpu",
        "many": "'many' is not a whole number of GPUs",
    }
    for answer, reason in wrong.items():
        result = run(stack, "lab01.allocatable_gpus", answer)
        assert not result.passed and result.reason == reason, answer
        assert "12" not in result.reason + result.hint
    for unanswered, state in ((None, "is still None"), (" ", "is empty"), (checks.NO_ANSWER, "is not set yet")):
        result = checks.run("lab01.allocatable_gpus", unanswered, client=stack.api)   # never judged as "None"
        assert not result.passed
        assert result.reason == f"no answer yet: allocatable_gpus {state}"
        assert result.hint.startswith("in this exercise's answer cell (the one that says YOUR CODE HERE), set "
                                      "allocatable_gpus = your answer")


def test_gpu_product_labels(stack):
    stack.set_node(H100, {}, {})
    stack.set_node(A100, {}, {})
    result = run(stack, "lab01.gpu_product_labels", "NVIDIA-H100-80GB-HBM3")
    assert not result.passed
    assert result.reason == ("no node has the label nvidia.com/gpu.product yet: GPU Feature Discovery labels nodes "
                             "once the GPU Operator runs")

    stack.standard()
    for answer in ("NVIDIA-H100-80GB-HBM3", " `NVIDIA-H100-80GB-HBM3` "):
        result = run(stack, "lab01.gpu_product_labels", answer)
        assert result.passed, result
        assert result.reason == "right: gpulab-worker2 carries nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3"
    wrong = {
        "NVIDIA H100 80GB HBM3": "'NVIDIA H100 80GB HBM3' is not a label value: label values cannot contain "
                                 "spaces, so GFD rewrites the GPU's name",
        "nvidia-h100-80gb-hbm3": "'nvidia-h100-80gb-hbm3' differs from the label on gpulab-worker2 in upper/lower "
                                 "case; label values are case-sensitive",
        "NVIDIA-A100-SXM4-40GB": "'NVIDIA-A100-SXM4-40GB' is the product of gpulab-worker3, not of the H100 node",
        "H100": "'H100' is not the value of nvidia.com/gpu.product on the H100 node gpulab-worker2",
    }
    for answer, reason in wrong.items():
        result = run(stack, "lab01.gpu_product_labels", answer)
        assert not result.passed and result.reason == reason, answer
        assert "NVIDIA-H100-80GB-HBM3" not in result.reason + result.hint
