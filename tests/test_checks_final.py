"""The final assessment's questions: recorded by the learner's checks, judged only where the grader's keys are loaded.

The keys live in ``grader/answer_keys.py`` (the course directory's check module, loaded by the grading process), not
in the installed package: a learner's ``gpulab.check`` records a well-formed answer and says so, never right or wrong.
"""
from __future__ import annotations

import json
import runpy
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from gpulab import checks
from gpulab.checks import keys as keyed_questions
from gpulab.checks.final import QUESTIONS
from tests.conftest import ROOT, stop_cluster
from tests.test_checks_common import FakeGpuStack, start_plain_cluster

KEYS = ROOT / "grader" / "answer_keys.py"
FINAL = ROOT / "solutions" / "final-assessment" / "final-assessment.ipynb"
MULTIPLE_CHOICE = ("final.forgotten_toleration", "final.copied_density", "final.dra_memory_selector",
                   "final.dra_or_device_plugin")


def record(check_id: str, answer):
    return checks.run(check_id, answer, client=object())      # a question: the cluster is not read


def answer_keys(monkeypatch) -> dict:
    """The grader's keys file, read without installing its judges here: this process stays a learner's."""
    monkeypatch.setattr(keyed_questions, "install", lambda check_id, judge: None)
    return runpy.run_path(str(KEYS))


def grader_verdicts(calls: list[tuple[str, object]], kubeconfig: Path | None = None) -> list[dict]:
    """The verdicts of a process that loaded the grader's keys, as the grading process does (reading the cluster of
    ``kubeconfig``, if given, as the graded notebook's kernel does)."""
    api = f"config.new_client_from_config(config_file={str(kubeconfig)!r})" if kubeconfig else "object()"
    script = (f"import json, runpy, sys; runpy.run_path({str(KEYS)!r}); from gpulab import checks; "
              f"from kubernetes import config; api = {api}; calls = json.loads(sys.stdin.read()); "
              "print(json.dumps([vars(checks.run(c, a, client=api)) for c, a in calls]))")
    proc = subprocess.run([sys.executable, "-c", script], input=json.dumps(calls), capture_output=True, text=True,
                          timeout=120, check=True)
    return json.loads(proc.stdout)


@pytest.mark.parametrize("check_id", MULTIPLE_CHOICE)
def test_a_learners_check_records_an_answer_and_judges_nothing(check_id, capsys):
    verdicts = {option: record(check_id, option) for option in "abcd"}
    for option, result in verdicts.items():
        assert result.recorded and not result.passed
        assert str(result) == (f"RECORDED {check_id}: your answer ({option}) is recorded; this assessment says right "
                               "or wrong only when it is graded (the grade's feedback explains each question)")
    assert len({r.reason.replace(f"({o})", "") for o, r in verdicts.items()}) == 1     # no option stands out
    checks.assert_passed(check_id, "B")           # a test cell: recorded is not a failure, and says so
    assert capsys.readouterr().out.startswith(f"RECORDED {check_id}: your answer (b) is recorded")
    malformed = record(check_id, "e")
    assert not malformed.passed and not malformed.recorded
    assert malformed.reason == "'e' is not one of the options' letters (a, b, c, d)"
    with pytest.raises(AssertionError, match="not one of the options' letters"):
        checks.assert_passed(check_id, "the second one")
    unanswered = record(check_id, None)
    assert unanswered.reason == f"no answer yet: {QUESTIONS[check_id][1]} is still None"


def test_the_package_holds_no_key(monkeypatch):
    """Neither an option's text nor why it is wrong is in the installed package: nothing there to read the key from."""
    keys = answer_keys(monkeypatch)
    sources = "\n".join(p.read_text() for p in (ROOT / "gpulab").rglob("*.py"))
    for question in keys["KEYS"].values():
        for text in (*question.options.values(), *question.why_not.values(), question.because):
            assert text[:60] not in sources


def test_the_grader_judges_with_its_keys(monkeypatch):
    from gpulab.checks.result import Result

    calls = [(c, option) for c in MULTIPLE_CHOICE for option in "abcd"] + [("final.copied_density", "e")]
    verdicts = grader_verdicts(calls)
    keys = answer_keys(monkeypatch)
    for (check_id, option), verdict in zip(calls, verdicts):
        result = Result(**verdict)
        assert not result.recorded
        if option == "e":
            assert result.reason == "'e' is not one of the options' letters (a, b, c, d)"
            continue
        question = keys["KEYS"][check_id]
        assert result.passed == (option == question.key), (check_id, option)
        assert result.reason == (f"right: ({option}) {question.options[option]} {question.because}"
                                 if option == question.key else f"({option}) is not it: {question.why_not[option]}")


def test_the_grader_counts_the_clusters_gpus_and_the_learner_only_records(tmp_path, engine):
    """final.allocatable_gpus: a learner's check records any whole number alike; the grader judges it against the
    cluster, so a single node's count (the mistake) fails saying so and the cluster's total passes."""
    cluster = start_plain_cluster(tmp_path, engine)
    try:
        stack = FakeGpuStack(cluster)
        stack.standard()                                 # 8 H100 + 4 A100 GPUs advertised
        for answer in (8, 12, "12"):
            result = checks.run("final.allocatable_gpus", answer, client=stack.api)
            assert result.recorded and not result.passed, answer
            assert result.reason == (f"your answer {int(answer)} is recorded; this assessment says right or wrong "
                                     "only when it is graded (the grade's feedback explains each question)")
        assert record("final.allocatable_gpus", "many").reason == "'many' is not a whole number"
        assert record("final.allocatable_gpus", None).reason == "no answer yet: allocatable_gpus is still None"
        single, total, nodes = grader_verdicts([("final.allocatable_gpus", a) for a in (8, 12, 2)], cluster.kubeconfig)
    finally:
        stop_cluster(cluster)
    assert not single["passed"] and not single["recorded"]
    assert single["reason"] == "8 is what a single node advertises; the question asks for the whole cluster"
    assert not nodes["passed"] and nodes["reason"] == "2 is the number of GPU nodes; the question asks for GPUs"
    assert total["passed"], total
    assert total["reason"] == "right: 12 nvidia.com/gpu allocatable (gpulab-worker2 8, gpulab-worker3 4)"


def test_the_final_prints_the_options_the_grader_judges(monkeypatch):
    keys = answer_keys(monkeypatch)
    text = "\n".join(c.source for c in nbformat.read(FINAL, as_version=4).cells if c.cell_type == "markdown")
    for question in keys["KEYS"].values():
        for letter, option in question.options.items():
            assert f"* **({letter})** {option}" in text


def test_every_planned_check_is_registered():
    """docs/course-plan.md names every exercise's check id; each is registered, in course order."""
    assert checks.check_ids() == [
        "setup.connected",
        "lab01.operator_pinned", "lab01.allocatable_gpus", "lab01.gpu_product_labels",
        "lab02.pools_labelled", "lab02.web_before_taint", "lab02.gpu_nodes_tainted", "lab02.taint_kept_pods",
        "lab02.web_off_gpu_nodes", "lab02.trainer_tolerates",
        "lab03.pending_reason", "lab03.infer_worker_running", "lab03.fraction_refused", "lab03.check_yourself",
        "lab04.timeslicing_a100", "lab04.latency_sensitive", "lab04.mig_mixed_h100", "lab04.mig_pod_running",
        "lab04.choose_sharing", "lab04.check_yourself", "lab04.mps_a100", "lab04.choose_strategy",
        "lab05.deadlock_explained", "lab05.coscheduling_installed", "lab05.gang_jobs_complete",
        "lab06.big_gpu_template", "lab06.shared_claim", "lab06.pending_reason",
        "final.allocatable_gpus", "final.forgotten_toleration", "final.copied_density", "final.dra_memory_selector",
        "final.dra_or_device_plugin",
    ]
    with pytest.raises(KeyError, match="no check 'lab02.pool_labelled'; did you mean 'lab02.pools_labelled'"):
        checks.run("lab02.pool_labelled")
