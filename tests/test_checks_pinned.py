"""Every registered check is pinned: a test makes its mistake, a test solves it, and a lab's test cell runs it.

``PINS`` is the table docs/course-plan.md shows ("How each check is pinned"): for each check id, the test that makes
the mistake the check exists to catch and asserts it fails, the words of the failure message that name that mistake
(words of the check's own message, which that test asserts), and the test that solves the exercise and asserts it
passes. A check registered without a row here fails :func:`test_every_registered_check_has_its_mistake_and_solution_tests`,
so none slips through unpinned. The labs' side: every check a lab grades is run by the *visible* part of a test cell,
with the variable its answer cell sets, so the learner's run of the cell is the grader's check; and an unanswered
question says which variable is missing and where to set it.
"""
from __future__ import annotations

import importlib
import inspect
import re
from typing import NamedTuple

import nbformat
import pytest

from gpulab import checks
from tests.conftest import ROOT


class Pin(NamedTuple):
    mistake: str        # "module::test" that makes the mistake and asserts the check fails
    says: str           # words of the check's failure message that name the mistake, asserted by that test
    solution: str       # "module::test" that solves the exercise and asserts the check passes


LAB01, LAB02, LAB03 = "test_checks_lab01", "test_checks_lab02", "test_checks_lab03"
LAB04, LAB05, LAB06 = "test_checks_lab04", "test_checks_lab05", "test_checks_lab06"
FINAL = "test_checks_final"

PINS = {
    "setup.connected": Pin(f"{LAB01}::test_setup_connected", "the API server refused the request",
                           f"{LAB01}::test_setup_connected"),
    "lab01.operator_pinned": Pin(f"{LAB01}::test_operator_pinned", "the driver is not pinned",
                                 f"{LAB01}::test_operator_pinned"),
    "lab01.allocatable_gpus": Pin(f"{LAB01}::test_allocatable_gpus", "is what a single node advertises",
                                  f"{LAB01}::test_allocatable_gpus"),
    "lab01.gpu_product_labels": Pin(f"{LAB01}::test_gpu_product_labels", "is the product of",
                                    f"{LAB01}::test_gpu_product_labels"),
    "lab02.pools_labelled": Pin(f"{LAB02}::test_pools_labelled", "but its GPUs are", f"{LAB02}::test_pools_labelled"),
    "lab02.web_before_taint": Pin(f"{LAB02}::test_web_before_taint", "is not how many of web's",
                                  f"{LAB02}::test_web_before_taint"),
    "lab02.gpu_nodes_tainted": Pin(f"{LAB02}::test_gpu_nodes_tainted", "where the exercise asks for",
                                   f"{LAB02}::test_gpu_nodes_tainted"),
    "lab02.taint_kept_pods": Pin(f"{LAB02}::test_taint_kept_pods", "is not it", f"{LAB02}::test_taint_kept_pods"),
    "lab02.web_off_gpu_nodes": Pin(f"{LAB02}::test_web_off_gpu_nodes", "web pods run on GPU nodes",
                                   f"{LAB02}::test_web_off_gpu_nodes"),
    "lab02.trainer_tolerates": Pin(f"{LAB02}::test_trainer_tolerates", "does not tolerate the GPU nodes' taint",
                                   f"{LAB02}::test_trainer_tolerates"),
    "lab03.pending_reason": Pin(f"{LAB03}::test_pending_reason", "is not one of the options",
                                f"{LAB03}::test_pending_reason"),
    "lab03.infer_worker_running": Pin(f"{LAB03}::test_infer_worker_running", "the pod needs a toleration for the taint",
                                      f"{LAB03}::test_infer_worker_running"),
    "lab03.fraction_refused": Pin(f"{LAB03}::test_fraction_refused", "fractions are not fine",
                                  f"{LAB03}::test_fraction_refused"),
    "lab03.check_yourself": Pin(f"{LAB03}::test_check_yourself_why_a_whole_gpu_and_not_memory", "is not it",
                                f"{LAB03}::test_check_yourself_why_a_whole_gpu_and_not_memory"),
    "lab04.timeslicing_a100": Pin(f"{LAB04}::test_timeslicing_a100", "is time-sliced too",
                                  f"{LAB04}::test_timeslicing_a100"),
    "lab04.latency_sensitive": Pin(f"{LAB04}::test_latency_sensitive_service_on_a_time_sliced_gpu_is_the_mistake",
                                   "is not it",
                                   f"{LAB04}::test_latency_sensitive_service_on_a_time_sliced_gpu_is_the_mistake"),
    "lab04.mig_mixed_h100": Pin(f"{LAB04}::test_mig_mixed_h100", "MIG is off on H100 node",
                                f"{LAB04}::test_mig_mixed_h100"),
    "lab04.mig_pod_running": Pin(f"{LAB04}::test_mig_pod_running", "not a 1g.10gb slice",
                                 f"{LAB04}::test_mig_pod_running"),
    "lab04.choose_sharing": Pin(f"{LAB04}::test_choose_sharing", "does not fit this scenario",
                                f"{LAB04}::test_choose_sharing"),
    "lab04.check_yourself": Pin(f"{LAB04}::test_check_yourself_what_mig_gives", "is not it",
                                f"{LAB04}::test_check_yourself_what_mig_gives"),
    "lab04.mps_a100": Pin(f"{LAB04}::test_mps_a100", "the device plugin refuses MPS", f"{LAB04}::test_mps_a100"),
    "lab04.choose_strategy": Pin(f"{LAB04}::test_choose_strategy", "does not fit this scenario",
                                 f"{LAB04}::test_choose_strategy"),
    "lab05.deadlock_explained": Pin(f"{LAB05}::test_deadlock_explained", "does not have",
                                    f"{LAB05}::test_deadlock_explained"),
    "lab05.coscheduling_installed": Pin(f"{LAB05}::test_coscheduling_installed_then_gang_jobs_complete",
                                        "there is no second scheduler",
                                        f"{LAB05}::test_coscheduling_installed_then_gang_jobs_complete"),
    "lab05.gang_jobs_complete": Pin(f"{LAB05}::test_coscheduling_installed_then_gang_jobs_complete",
                                    "which does not know PodGroups",
                                    f"{LAB05}::test_coscheduling_installed_then_gang_jobs_complete"),
    "final.allocatable_gpus": Pin(f"{FINAL}::test_the_grader_counts_the_clusters_gpus_and_the_learner_only_records",
                                  "is what a single node advertises",
                                  f"{FINAL}::test_the_grader_counts_the_clusters_gpus_and_the_learner_only_records"),
    "final.forgotten_toleration": Pin(f"{FINAL}::test_the_grader_judges_with_its_keys", "is not it",
                                      f"{FINAL}::test_the_grader_judges_with_its_keys"),
    "final.copied_density": Pin(f"{FINAL}::test_the_grader_judges_with_its_keys", "is not it",
                                f"{FINAL}::test_the_grader_judges_with_its_keys"),
    "final.dra_memory_selector": Pin(f"{FINAL}::test_the_grader_judges_with_its_keys", "is not it",
                                     f"{FINAL}::test_the_grader_judges_with_its_keys"),
    "final.dra_or_device_plugin": Pin(f"{FINAL}::test_the_grader_judges_with_its_keys", "is not it",
                                      f"{FINAL}::test_the_grader_judges_with_its_keys"),
    "lab06.big_gpu_template": Pin(f"{LAB06}::test_big_gpu_template_fails_on_a_selector_over_a_missing_attribute",
                                  "which no device publishes", f"{LAB06}::test_big_gpu_template_passes_on_the_solution"),
    "lab06.shared_claim": Pin(f"{LAB06}::test_shared_claim_fails_on_a_claim_in_the_wrong_namespace",
                              "a pod can use only claims and templates of its own namespace",
                              f"{LAB06}::test_shared_claim_passes_on_the_solution"),
    "lab06.pending_reason": Pin(f"{LAB06}::test_pending_reason_judges_the_answer_against_the_scheduler",
                                "asks for no nvidia.com/gpu",
                                f"{LAB06}::test_pending_reason_judges_the_answer_against_the_scheduler"),
}




def _joined(source: str) -> str:
    """Source with adjacent string literals split over lines joined, so a message reads as one string."""
    return re.sub(r"[\"']\s*\n\s*f?[\"']", "", source)


CHECK_SOURCES = _joined("\n".join(p.read_text() for p in [*(ROOT / "gpulab" / "checks").glob("*.py"),
                                                          ROOT / "grader" / "answer_keys.py"]))


def _test_function(where: str):
    module, name = where.split("::")
    return importlib.import_module(f"tests.{module}"), getattr(importlib.import_module(f"tests.{module}"), name)


def _runs_check(function, module, check_id: str) -> bool:
    """The test names the check: in its own source (decorators included), or in a module constant it uses."""
    source = inspect.getsource(function)
    if f'"{check_id}"' in source:
        return True
    used = set(re.findall(r"\b[A-Z_][A-Z0-9_]+\b", source))
    return any(check_id in value for name in used if isinstance(value := getattr(module, name, None), (tuple, dict)))


def test_every_registered_check_has_its_mistake_and_solution_tests():
    registered = checks.check_ids()
    assert [i for i in registered if i not in PINS] == [], "add a row to PINS (and the course plan's table)"
    assert [i for i in PINS if i not in checks.CHECKS] == [], "PINS names checks that are no longer registered"


@pytest.mark.parametrize("check_id", sorted(PINS))
def test_each_pin_names_a_test_that_runs_the_check_and_asserts_its_message(check_id):
    pin = PINS[check_id]
    for where in (pin.mistake, pin.solution):
        module, function = _test_function(where)
        assert function.__name__.startswith("test_") and _runs_check(function, module, check_id), where
    assert pin.says in CHECK_SOURCES, f"{check_id}: {pin.says!r} is not words of any check's message"
    assert pin.says in _joined(inspect.getsource(_test_function(pin.mistake)[1])), \
        f"{pin.mistake} does not assert {pin.says!r}"


def test_the_course_plan_shows_this_table():
    plan = (ROOT / "docs" / "course-plan.md").read_text()
    section = plan.split("## How each check is pinned", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([a-z0-9]+\.[a-z_0-9]+)` \| (.+?) \| `(.+?)` \| `(.+?)` \|$", section, flags=re.MULTILINE)
    assert {check_id: Pin(mistake, says.strip("\"'"), solution) for check_id, says, mistake, solution in rows} == PINS


# --- the learner's side: the visible test cell is the grade, an unanswered question says where --------------------

RELEASES = sorted((ROOT / "labs").glob("*/*.ipynb"))        # what learners open: hidden tests and solutions removed
CALL = re.compile(r'gpulab\.checks\.assert_passed\("([a-z0-9]+\.[a-z_0-9]+)"(?:, (\w+))?\)')


def _graded_calls() -> dict[str, set[tuple[str, str | None, bool]]]:
    """check id -> {(lab, the variable its test cell passes, whether the lab's YOUR CODE HERE cell sets it)}."""
    calls: dict[str, set] = {}
    for path in RELEASES:
        cells = nbformat.read(path, as_version=4).cells
        answers = "\n".join(c.source for c in cells if "YOUR CODE HERE" in c.source)
        for cell in cells:
            if cell.metadata.get("nbgrader", {}).get("grade"):
                assert "HIDDEN TESTS" not in cell.source, path
                for check_id, variable in CALL.findall(cell.source):
                    sets = bool(variable) and re.search(rf"^{variable} = ", answers, flags=re.MULTILINE) is not None
                    calls.setdefault(check_id, set()).add((path.parent.name, variable or None, sets))
    return calls


def test_every_check_a_lab_grades_runs_in_a_visible_test_cell_with_its_answer():
    """The released test cell runs the check itself (not a test of the answer's type), so what the learner's run
    of it says is what the grader's run says; and it passes the variable the lab's answer cell sets."""
    calls = _graded_calls()
    graded = [i for i in checks.check_ids() if checks.CHECKS[i].lab != "00-setup"]
    assert [i for i in graded if i not in calls] == [], "a check no lab's visible test cell runs"
    for check_id, uses in calls.items():
        check = checks.get(check_id)
        for lab, variable, sets in uses:
            if check.takes_answer:
                assert (variable, sets) == (check.answer_name, True), (lab, check_id, variable)
            else:
                assert variable is None, (lab, check_id, variable)


@pytest.mark.parametrize("check_id", [i for i in checks.check_ids() if checks.CHECKS[i].needs_answer])
def test_an_unanswered_question_says_what_is_missing_and_where(check_id):
    name = checks.get(check_id).answer_name
    for unanswered, state in ((None, "is still None"), ("", "is empty"), (checks.NO_ANSWER, "is not set yet")):
        result = checks.run(check_id, unanswered, client=object())      # the cluster is not read
        assert not result.passed and not result.recorded
        assert result.reason == f"no answer yet: {name} {state}", check_id
        assert result.hint.startswith(f"in this exercise's answer cell (the one that says YOUR CODE HERE), set "
                                      f"{name} = your answer"), check_id
