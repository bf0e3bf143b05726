"""The final assessment's check-yourself questions: the right option passes, each wrong one says why it is wrong."""
from __future__ import annotations

import pytest

from gpulab import checks
from gpulab.checks.final import QUESTIONS


def judge(check_id: str, answer):
    return checks.run(check_id, answer, client=object())      # multiple choice: the cluster is not read


@pytest.mark.parametrize("check_id", sorted(QUESTIONS))
def test_right_option_passes_however_written(check_id):
    question = QUESTIONS[check_id]
    right = question["answer"]
    for answer in (right, right.upper(), f"({right})", f"{right})", question["options"][right]):
        result = judge(check_id, answer)
        assert result.passed, (answer, result)
        assert result.reason == f"right: ({right}) {question['options'][right]}"


@pytest.mark.parametrize("check_id", sorted(QUESTIONS))
def test_wrong_options_say_why_without_naming_the_right_one(check_id):
    question = QUESTIONS[check_id]
    right = question["answer"]
    for option, why in question["why_not"].items():
        result = judge(check_id, option)
        assert not result.passed
        assert result.reason == f"({option}) is not it: {why}"
        assert f"({right})" not in result.reason + result.hint
    assert set(question["why_not"]) | {right} == set(question["options"])
    result = judge(check_id, "e")
    assert result.reason == "'e' is not one of the options (a, b, c, d)"


def test_check_yourself_1_exact_texts():
    result = judge("final.check_yourself_1", "a")
    assert str(result) == (
        "FAIL final.check_yourself_1: (a) is not it: a resource request does not tolerate a taint: the scheduler "
        "checks taints and resources separately, and every node must pass both\n"
        "Hint: lab 02 (taints and tolerations) and lab 03 (reading why a pod is Pending)")
    assert str(judge("final.check_yourself_2", "b")) == (
        "PASS final.check_yourself_2: right: (b) Measure p99 latency under your own load at that density, since "
        "time-sliced replicas wait for each other's slices.")


def test_every_planned_check_is_registered():
    """docs/course-plan.md names every exercise's check id; each is registered, in course order."""
    assert checks.check_ids() == [
        "setup.connected",
        "lab01.operator_pinned", "lab01.allocatable_gpus", "lab01.gpu_product_labels",
        "lab02.pools_labelled", "lab02.gpu_nodes_tainted", "lab02.web_off_gpu_nodes", "lab02.trainer_tolerates",
        "lab03.infer_worker_running", "lab03.pending_reason", "lab03.fraction_refused",
        "lab04.timeslicing_a100", "lab04.mig_mixed_h100", "lab04.mig_pod_running", "lab04.choose_sharing",
        "lab05.deadlock_explained", "lab05.coscheduling_installed", "lab05.gang_jobs_complete",
        "final.check_yourself_1", "final.check_yourself_2",
    ]
    with pytest.raises(KeyError, match="no check 'lab02.pool_labelled'; did you mean 'lab02.pools_labelled'"):
        checks.run("lab02.pool_labelled")
