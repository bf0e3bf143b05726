"""lab04 exercise 1 on the real GPU stack, its check run at once after each change and again once it has settled.

The grader failed (0/2) a configuration whose test cell had printed PASS: the
check had read the device plugins before they restarted with the learner's
config. Here the learner's commands run as the exercise gives them, with the
mistakes (the time-slicing entry selected on the H100 node too by its label,
then by the ClusterPolicy's devicePlugin.config.default, which every unlabelled
node takes) and with the solution, and the check is run the moment the last command returns, and again
after the stack has settled. At once it may only say what the settled check says,
or that the cluster has not settled; it never passes the mistake, and it never
fails the solution with the mistake's words.
"""
from __future__ import annotations

import pytest

from gpulab import checks
from gpulab.learner.conditions import clusterpolicy_settled
from gpulab.learner.reader import ClusterReader
from tests.conftest import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("checks-settling")]

H100, A100 = "gpulab-worker2", "gpulab-worker3"
CONFIG = """apiVersion: v1
kind: ConfigMap
metadata: {name: time-slicing-config, namespace: gpu-operator}
data:
  a100-40gb: |-
    version: v1
    sharing:
      timeSlicing:
        resources:
        - name: nvidia.com/gpu
          replicas: 4
"""
MISTAKE = "the H100 node gpulab-worker2 is time-sliced too"
NOT_SETTLED = "not settled yet: "


@pytest.fixture(scope="module")
def lab04(cluster):
    cluster.gpulab("lab", "reset", "lab04-sharing", timeout=600)
    return cluster


def check(cluster) -> checks.Result:
    return checks.run("lab04.timeslicing_a100", client=cluster.client())


def settle(cluster) -> None:
    wait_for(lambda: clusterpolicy_settled(ClusterReader(cluster.client()))[0], timeout=300,
             what="the GPU stack to settle")


def fails_as_the_mistake_at_once_and_once_settled(cluster) -> None:
    """Run at once, the check never passes (the mistake, or not settled); once settled, it names the mistake."""
    at_once = check(cluster)
    assert not at_once.passed, at_once
    assert at_once.reason.startswith((MISTAKE, NOT_SETTLED)), at_once
    settle(cluster)
    settled = check(cluster)
    assert not settled.passed and settled.reason.startswith(MISTAKE), settled


def test_the_mistake_never_passes_at_once_and_fails_once_settled(lab04):
    lab04.kubectl("apply", "-f", "-", input=CONFIG)
    lab04.kubectl("patch", "clusterpolicies.nvidia.com/cluster-policy", "--type", "merge", "-p",
                  '{"spec":{"devicePlugin":{"config":{"name":"time-slicing-config"}}}}')
    lab04.kubectl("label", "node", A100, H100, "nvidia.com/device-plugin.config=a100-40gb", "--overwrite")
    fails_as_the_mistake_at_once_and_once_settled(lab04)


def test_the_default_entry_for_every_unlabelled_node_never_passes_at_once_and_fails_once_settled(lab04):
    lab04.kubectl("label", "node", H100, "nvidia.com/device-plugin.config-")
    lab04.kubectl("patch", "clusterpolicies.nvidia.com/cluster-policy", "--type", "merge", "-p",
                  '{"spec":{"devicePlugin":{"config":{"default":"a100-40gb"}}}}')
    fails_as_the_mistake_at_once_and_once_settled(lab04)


def test_the_solution_never_fails_as_the_mistake_at_once_and_passes_once_settled(lab04):
    """The H100 without the label and without a default: the operator's config-manager gives it the empty
    config (FALLBACK_STRATEGIES=empty), whole GPUs."""
    lab04.kubectl("label", "node", H100, "nvidia.com/device-plugin.config-")
    lab04.kubectl("patch", "clusterpolicies.nvidia.com/cluster-policy", "--type", "merge", "-p",
                  '{"spec":{"devicePlugin":{"config":{"default":null}}}}')
    at_once = check(lab04)
    assert at_once.passed or at_once.reason.startswith(NOT_SETTLED), at_once
    settle(lab04)
    settled = check(lab04)
    assert settled.passed, settled
    assert settled.reason == ("A100 time-sliced 4 ways: gpulab-worker3 16 nvidia.com/gpu "
                              "(NVIDIA-A100-SXM4-40GB-SHARED); H100 untouched: gpulab-worker2 8 whole GPUs")
