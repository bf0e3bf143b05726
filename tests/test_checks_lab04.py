"""Lab 04's checks: time-slicing the A100 node, MIG mixed on the H100 node, a pod on a slice, choosing one.

Each test first sets the node it works on to the lab's starting state (MIG strategy mixed, MIG off, no sharing).
"""
from __future__ import annotations

import pytest

from gpulab.checks import settled
from tests.conftest import stop_cluster
from tests.test_checks_common import A100, H100, FakeGpuStack, run, start_plain_cluster


A100_MODEL = "A100-SXM4-40GB"


def time_slicing(replicas: int, **extra) -> dict:
    return {"version": "v1", "sharing": {"timeSlicing": {
        **extra, "resources": [{"name": "nvidia.com/gpu", "replicas": replicas}]}}}


@pytest.fixture(scope="module")
def stack(tmp_path_factory, engine):
    cluster = start_plain_cluster(tmp_path_factory.mktemp("lab04"), engine)
    stack = FakeGpuStack(cluster)
    stack.operator(sets=("driver.version=580.105.08", "mig.strategy=mixed"))     # the lab's starting state
    yield stack
    stop_cluster(cluster)


def test_timeslicing_a100(stack):
    stack.gpu_node(A100, A100_MODEL, 4, mig_strategy="mixed", mig_config="all-disabled")
    assert run(stack, "lab04.timeslicing_a100").reason == (
        "A100 node gpulab-worker3 is not time-sliced (nvidia.com/gpu.sharing-strategy=none)")

    stack.gpu_node(A100, A100_MODEL, 4, mig_strategy="mixed", sharing=time_slicing(2))
    assert run(stack, "lab04.timeslicing_a100").reason == (
        "A100 node gpulab-worker3 is time-sliced 2 ways (nvidia.com/gpu.replicas=2); the exercise asks for 4")

    stack.gpu_node(A100, A100_MODEL, 4, mig_strategy="mixed", sharing=time_slicing(4, renameByDefault=True))
    assert run(stack, "lab04.timeslicing_a100").reason == (
        "A100 node gpulab-worker3 advertises nvidia.com/gpu.shared: the config renames the shared resource "
        "(renameByDefault: true), and the exercise keeps the name nvidia.com/gpu")

    stack.gpu_node(A100, A100_MODEL, 4, mig_strategy="mixed", sharing=time_slicing(4))
    # The mistake: the config time-slices the H100 node as well (the H100's label, or the ClusterPolicy's
    # devicePlugin.config.default naming the time-slicing entry, which every unlabelled node then takes).
    stack.gpu_node(H100, "H100", 8, mig_strategy="mixed", mig_config="all-disabled", sharing=time_slicing(4))
    result = run(stack, "lab04.timeslicing_a100")
    assert not result.passed
    assert result.reason == (
        "the H100 node gpulab-worker2 is time-sliced too (nvidia.com/gpu.sharing-strategy=time-slicing, "
        "nvidia.com/gpu.replicas=4, nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3-SHARED, 32 nvidia.com/gpu for its 8 "
        "GPUs); the exercise time-slices the A100 node only and leaves the H100's GPUs whole")
    # Under the operator an unlabelled node without a default keeps whole GPUs (FALLBACK_STRATEGIES=empty): the
    # hint names the two ways a node is shared, and never the false one of an entry called `default`.
    assert result.hint.startswith("an entry applies to the nodes whose nvidia.com/device-plugin.config label names "
                                  "it, and the ClusterPolicy's devicePlugin.config.default, when set, to every other "
                                  "node; without one, those nodes keep whole GPUs")
    stack.gpu_node(H100, "H100", 8, mig_strategy="mixed", mig_config="all-disabled",
                   sharing=time_slicing(4, renameByDefault=True))
    assert run(stack, "lab04.timeslicing_a100").reason.startswith(
        "the H100 node gpulab-worker2 is time-sliced too (nvidia.com/gpu.sharing-strategy=time-slicing, "
        "nvidia.com/gpu.replicas=4, 32 nvidia.com/gpu.shared)")

    stack.gpu_node(H100, "H100", 8, mig_strategy="mixed", mig_config="all-disabled")      # the solution
    result = run(stack, "lab04.timeslicing_a100")
    assert result.passed, result
    assert result.reason == ("A100 time-sliced 4 ways: gpulab-worker3 16 nvidia.com/gpu "
                             "(NVIDIA-A100-SXM4-40GB-SHARED); H100 untouched: gpulab-worker2 8 whole GPUs")


def test_timeslicing_a100_is_not_judged_before_the_operator_has_restarted_the_device_plugins(stack, monkeypatch):
    """The grader's 0/2 after a learner's PASS: the ClusterPolicy names a config and a default entry (the A100's
    time-slicing, which every unlabelled node then takes) that the operator has not yet written into the device
    plugin's DaemonSet, so no plugin has restarted with it and the H100 still looks whole. The check says it has not settled, never PASS; once the DaemonSet
    carries the config it judges."""
    monkeypatch.setattr(settled, "SETTLE_SECONDS", 1.0)
    stack.gpu_node(A100, A100_MODEL, 4, mig_strategy="mixed", sharing=time_slicing(4))
    stack.gpu_node(H100, "H100", 8, mig_strategy="mixed", mig_config="all-disabled")
    stack.operator(sets=("driver.version=580.105.08", "mig.strategy=mixed", "devicePlugin.config.name=sharing",
                         "devicePlugin.config.default=a100-40gb"))
    try:
        stack.device_plugin_daemonset(config=None)                    # the template before the policy's change
        result = run(stack, "lab04.timeslicing_a100")
        assert not result.passed
        assert result.reason == (
            "not settled yet: the ClusterPolicy is ready, the operator has not applied devicePlugin.config.name, "
            "devicePlugin.config.default to nvidia-device-plugin-daemonset yet; this check judges the cluster once "
            "it has settled, run it again")
        stack.device_plugin_daemonset(config="sharing", default="a100-40gb")  # rendered; the plugins restarted
        stack.gpu_node(H100, "H100", 8, mig_strategy="mixed", mig_config="all-disabled", sharing=time_slicing(4))
        assert run(stack, "lab04.timeslicing_a100").reason.startswith("the H100 node gpulab-worker2 is time-sliced too")
    finally:
        stack.operator(sets=("driver.version=580.105.08", "mig.strategy=mixed"))     # the lab's starting state
        stack.device_plugin_daemonset(config=None)


def test_timeslicing_a100_holds_while_a_loaded_device_plugin_keeps_restarting(stack, monkeypatch):
    """Under load the verdict holds: 8 learners on 2 cores saw a correct lab04 fail because a device plugin
    restarted again a second after the answer cell had seen its GPUs. Here the A100's device plugin restarts
    over and over (advertising nothing, then its 16 replicas for a moment) for several times the check's settle
    wait, as on a loaded machine, before it settles on the solution: the check keeps waiting while the stack
    keeps changing, and passes, instead of calling a stack that is getting there not settled."""
    import threading
    import time

    monkeypatch.setattr(settled, "SETTLE_SECONDS", 1.0)     # a stack that changes nothing for 1 s has stalled
    stack.gpu_node(H100, "H100", 8, mig_strategy="mixed", mig_config="all-disabled")
    stack.gpu_node(A100, A100_MODEL, 4, mig_strategy="mixed", sharing=time_slicing(4))
    labels = stack.core.read_node(A100).metadata.labels

    def restarting() -> None:
        for _ in range(6):                                   # 6 x 0.8 s: about five times the settle wait
            stack.set_node(A100, labels, {})                 # between two plugin pods: nothing advertised
            time.sleep(0.7)
            stack.gpu_node(A100, A100_MODEL, 4, mig_strategy="mixed", sharing=time_slicing(4))
            time.sleep(0.1)

    restarts = threading.Thread(target=restarting)
    stack.set_node(A100, labels, {})
    restarts.start()
    try:
        result = run(stack, "lab04.timeslicing_a100")
    finally:
        restarts.join()
    assert result.passed, result
    assert result.reason.startswith("A100 time-sliced 4 ways: gpulab-worker3 16 nvidia.com/gpu")


def test_mig_mixed_h100(stack, monkeypatch):
    stack.gpu_node(H100, "H100", 8, mig_strategy="mixed", mig_config="all-disabled")
    assert run(stack, "lab04.mig_mixed_h100").reason == (
        "MIG is off on H100 node gpulab-worker2 (nvidia.com/mig.config=all-disabled)")

    stack.gpu_node(H100, "H100", 8, mig_strategy="mixed", mig_config="all-1g.10gb")
    assert run(stack, "lab04.mig_mixed_h100").reason == (
        "H100 node gpulab-worker2 is partitioned as all-1g.10gb; the exercise asks for all-balanced")

    # While the MIG manager applies the layout the check does not judge: it waits, then says it has not settled.
    stack.gpu_node(H100, "H100", 8, mig_strategy="mixed", mig_config="all-balanced", mig_state="pending")
    monkeypatch.setattr(settled, "SETTLE_SECONDS", 1.0)
    assert run(stack, "lab04.mig_mixed_h100").reason == (
        "not settled yet: the ClusterPolicy is ready, operands still starting on gpulab-worker2 (MIG manager); this "
        "check judges the cluster once it has settled, run it again")

    stack.gpu_node(H100, "H100", 8, mig_strategy="mixed", mig_config="all-balanced", mig_state="failed")
    assert run(stack, "lab04.mig_mixed_h100").reason == (
        "the MIG manager failed to apply all-balanced on gpulab-worker2 (nvidia.com/mig.config.state=failed)")

    stack.gpu_node(H100, "H100", 8, mig_strategy="mixed", mig_config="all-balanced")
    stack.label(H100, **{"nvidia.com/mig.strategy": "single"})
    assert run(stack, "lab04.mig_mixed_h100").reason == (
        "H100 node gpulab-worker2 runs MIG strategy single: with single, every slice is advertised as nvidia.com/gpu "
        "and a balanced layout cannot be advertised; the exercise asks for mixed")

    stack.gpu_node(H100, "H100", 8, mig_strategy="mixed", mig_config="all-balanced")
    result = run(stack, "lab04.mig_mixed_h100")
    assert result.passed, result
    assert result.reason == ("H100 node gpulab-worker2 runs all-balanced under the mixed strategy "
                             "(nvidia.com/mig-1g.10gb: 16, nvidia.com/mig-2g.20gb: 8, nvidia.com/mig-3g.40gb: 8)")


def test_mig_pod_running(stack):
    stack.gpu_node(H100, "H100", 8, mig_strategy="mixed", mig_config="all-balanced")    # lab04.mig_mixed_h100 done
    assert run(stack, "lab04.mig_pod_running").reason == "no pod requests nvidia.com/mig-1g.10gb"

    stack.pod("slice-2g", gpus="1", resource="nvidia.com/mig-2g.20gb")
    assert run(stack, "lab04.mig_pod_running").reason == (
        "pod slice-2g requests nvidia.com/mig-2g.20gb, not a 1g.10gb slice")

    stack.pod("too-many", gpus="17", resource="nvidia.com/mig-1g.10gb", wait="Unschedulable")
    result = run(stack, "lab04.mig_pod_running")
    assert result.reason.startswith("pod too-many requests nvidia.com/mig-1g.10gb but is Pending (not scheduled: "
                                    "0/4 nodes are available: ")
    assert "Insufficient nvidia.com/mig-1g.10gb" in result.reason

    stack.pod("mig-worker", gpus="1", resource="nvidia.com/mig-1g.10gb")
    result = run(stack, "lab04.mig_pod_running")
    assert result.passed, result
    assert result.reason == "pod default/mig-worker runs on a 1g.10gb MIG slice on gpulab-worker2"


def test_choose_sharing():
    from gpulab import checks

    def judge(answer):
        return checks.run("lab04.choose_sharing", answer, client=object())   # judged without reading the cluster

    for answer in ("MIG", "mig", " Multi-Instance GPU "):
        result = judge(answer)
        assert result.passed, (answer, result)
        assert result.reason == ("right: mig keeps p99 at about 4.0 ms, within the 5 ms budget, and each tenant gets "
                                 "its own memory, SMs and L2")
    for answer in ("time-slicing", "Time slicing", "timeslicing"):
        result = judge(answer)
        assert not result.passed
        assert result.reason == ("time-slicing does not fit this scenario: its p99 in the latency model is about "
                                 "7.5 ms, over the 5 ms budget (time-slicing latency-sensitive serving is the "
                                 "mistake: each busy neighbour adds about one time slice to the tail); time-sliced "
                                 "replicas share the GPU's memory, with no isolation between tenants")
        assert "mig" not in result.reason.lower()
    assert judge("MPS").reason == "'mps' is neither MIG nor time-slicing"


def test_latency_sensitive_service_on_a_time_sliced_gpu_is_the_mistake():
    from gpulab import checks
    from gpulab.checks.lab04 import latency_sensitive_question

    question = latency_sensitive_question()

    right = checks.run("lab04.latency_sensitive", "c", client=object())
    assert right.passed
    assert right.reason == ("right: (c) p99 climbs to about 7.6 ms, over budget: each busy neighbour adds a slice. "
                            "Time-slicing is the wrong way to share a GPU with latency-sensitive serving; give it a "
                            "MIG slice or a GPU of its own.")
    assert question.options["a"] == ("p99 stays near 0.6 ms: each replica has a quarter of the GPU to "
                                              "itself.")
    for option in "abd":
        result = checks.run("lab04.latency_sensitive", option, client=object())
        assert not result.passed and result.reason == f"({option}) is not it: {question.why_not[option]}"
        assert "(c)" not in result.reason + result.hint


def test_check_yourself_what_mig_gives():
    from gpulab import checks
    from gpulab.checks.lab04 import CHECK_YOURSELF

    right = checks.run("lab04.check_yourself", CHECK_YOURSELF.options["a"], client=object())
    assert right.passed and right.reason == ("right: (a) Each slice owns its memory, compute and cache, isolated in "
                                             "hardware. So one tenant cannot touch or crowd another's; time-slicing "
                                             "shares one GPU in software, with weaker isolation.")
    for option in "bcd":
        result = checks.run("lab04.check_yourself", option, client=object())
        assert not result.passed and result.reason == f"({option}) is not it: {CHECK_YOURSELF.why_not[option]}"
    assert checks.run("lab04.check_yourself", "MIG isolates", client=object()).reason == \
        "'mig isolates' is not one of the options (a, b, c, d)"


def mps(replicas: int, **extra) -> dict:
    return {"version": "v1", "sharing": {"mps": {**extra, "resources": [{"name": "nvidia.com/gpu",
                                                                         "replicas": replicas}]}}}


def test_mps_a100(stack):
    # The mistake: MPS selected while the ClusterPolicy keeps mig.strategy=mixed. GFD labels the MPS config, the
    # plugin refuses it and its devices turn unhealthy (allocatable 0), as the embedded cluster shows it.
    stack.gpu_node(A100, A100_MODEL, 4, sharing=mps(4))
    stack.set_node(A100, {**stack.core.read_node(A100).metadata.labels}, {"nvidia.com/gpu": 0})
    stack.device_plugin_failed(A100, "using --mig-strategy=mixed is not supported with MPS")
    result = run(stack, "lab04.mps_a100")
    assert not result.passed
    assert result.reason == (
        "A100 node gpulab-worker3 advertises 0 nvidia.com/gpu (nvidia.com/gpu.sharing-strategy=mps) while the "
        "ClusterPolicy runs mig.strategy=mixed, under which the device plugin refuses MPS (using "
        "--mig-strategy=mixed is not supported with MPS)")
    stack.gpu_node(A100, A100_MODEL, 4, mig_strategy="mixed", sharing=time_slicing(4))      # before: exercise 1
    assert run(stack, "lab04.mps_a100").reason.startswith(
        "A100 node gpulab-worker3 advertises 16 nvidia.com/gpu (nvidia.com/gpu.sharing-strategy=time-slicing) while "
        "the ClusterPolicy runs mig.strategy=mixed")
    stack.operator(sets=("driver.version=580.105.08", "mig.strategy=single"))
    try:
        assert run(stack, "lab04.mps_a100").reason == (
            "A100 node gpulab-worker3 is not shared with MPS (nvidia.com/gpu.sharing-strategy=time-slicing)")
        stack.gpu_node(A100, A100_MODEL, 4, sharing=mps(2))
        assert run(stack, "lab04.mps_a100").reason == (
            "A100 node gpulab-worker3 is shared with MPS 2 ways (nvidia.com/gpu.replicas=2); the exercise asks for 4")
        stack.gpu_node(A100, A100_MODEL, 4, sharing=mps(4, renameByDefault=True))
        assert run(stack, "lab04.mps_a100").reason == (
            "A100 node gpulab-worker3 advertises nvidia.com/gpu.shared: the config renames the shared resource "
            "(renameByDefault: true), and the exercise keeps the name nvidia.com/gpu")
        stack.gpu_node(A100, A100_MODEL, 4, sharing=mps(4))
        # The mistake of exercise 1 again: devicePlugin.config.default (or its label) shares the H100 as well.
        stack.gpu_node(H100, "H100", 8, sharing=mps(4))
        result = run(stack, "lab04.mps_a100")
        assert not result.passed
        assert result.reason == (
            "the H100 node gpulab-worker2 is shared too (nvidia.com/gpu.sharing-strategy=mps, "
            "nvidia.com/gpu.replicas=4, nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3-SHARED, 32 nvidia.com/gpu for its "
            "8 GPUs, nvidia.com/mps.capable=true); the exercise shares the A100 node only and leaves the H100's GPUs "
            "unshared")
        assert "select the MPS entry on the A100 node alone" in result.hint
        stack.gpu_node(H100, "H100", 8, mig_config="all-disabled")          # the solution
        result = run(stack, "lab04.mps_a100")
        assert result.passed, result
        assert result.reason == ("A100 shared with MPS 4 ways: gpulab-worker3 16 nvidia.com/gpu "
                                 "(NVIDIA-A100-SXM4-40GB-SHARED); H100 not shared: gpulab-worker2")
    finally:
        stack.operator(sets=("driver.version=580.105.08", "mig.strategy=mixed"))     # the lab's starting state


def test_choose_strategy():
    from gpulab import checks

    def judge(answer):
        return checks.run("lab04.choose_strategy", answer, client=object())   # judged without reading the cluster

    for answer in ("MPS", "mps", " CUDA MPS ", "Multi-Process Service"):
        result = judge(answer)
        assert result.passed, (answer, result)
        assert result.reason.startswith("right: MPS runs the 8 servers' kernels at the same time (p99 about ")
        assert result.reason.endswith(" ms in the latency model), each capped at 5120 MiB and 12 % of the threads, "
                                      "and the team accepts that they share faults and that the device plugin's MPS "
                                      "support is experimental")
    mig = judge("MIG")
    assert not mig.passed and mig.reason == (
        "mig does not fit this scenario: an A100 40GB has at most 7 MIG slices, not 8 (and a slice's fixed share "
        "isolates tenants, which one team does not need)")
    sliced = judge("time-slicing")
    assert not sliced.passed
    assert sliced.reason.startswith("time-slicing does not fit this scenario: with 7 busy neighbours its p99 in the "
                                    "latency model is about ")
    assert sliced.reason.endswith(" ms, over the 8 ms budget: each waits for the others' time slices")
    for wrong in (mig, sliced):
        assert "mps" not in (wrong.reason + wrong.hint).lower()
    assert judge("DRA").reason == "'dra' is none of MIG, time-slicing and MPS"
