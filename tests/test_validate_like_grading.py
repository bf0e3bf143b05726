"""What the learner's Validate says is what grading gives: the same execution settings, and no "Success!" for
answers nobody has judged.

Validate runs in the learner's JupyterLab (``make lab``): nbgrader's validate
handler loads its configuration from the Jupyter config path and the server's
directory, which is not the grader's course directory. A lab04 cell of 32 s
failed there under nbgrader's default 30 s timeout and scored full marks when
graded (120 s). And the final assessment's questions, which only the grader
judges, validated as "Success! Your notebook passes all the tests" whatever
the answers were.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tests.conftest import ROOT

VENV_BIN = Path(sys.executable).parent
FINAL = ROOT / "labs" / "final-assessment" / "final-assessment.ipynb"
QUESTIONS = ("allocatable_gpus", "forgotten_toleration", "copied_density", "dra_memory_selector",
             "dra_or_device_plugin")


def _learner_environment() -> tuple[dict[str, str], Path]:
    from gpulab.learner import jupyterlab

    _, env, cwd = jupyterlab.command("learner", 8888)
    return env, cwd


def _validate_config(monkeypatch):
    """The configuration JupyterLab's Validate button runs with: nbgrader's own handler's loader, in the learner's
    server's environment and directory."""
    from nbgrader.server_extensions.validate_assignment.handlers import ValidateAssignmentHandler

    env, cwd = _learner_environment()
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", env["JUPYTER_CONFIG_PATH"])
    monkeypatch.chdir(cwd)
    return ValidateAssignmentHandler.load_config(None)


def _grading_config(monkeypatch):
    from nbgrader.apps import NbGrader

    monkeypatch.chdir(ROOT / "grader")
    app = NbGrader()
    app.config_file_paths.append(str(ROOT / "grader"))
    app.load_config_file()
    return app.config


def test_validate_runs_cells_with_the_graders_timeout(monkeypatch):
    from nbgrader.preprocessors import Execute
    from nbgrader.validator import Validator

    from gpulab.grading.execute import HermeticExecute

    validating = Execute(parent=Validator(config=_validate_config(monkeypatch)))
    grading = HermeticExecute(config=_grading_config(monkeypatch))
    assert validating.timeout == grading.timeout == 120


def _final_questions() -> nbformat.NotebookNode:
    """The released final assessment answered as the solutions answer it, its questions only (and its setup)."""
    import re

    solved = nbformat.read(ROOT / "solutions" / "final-assessment" / "final-assessment.ipynb", 4)
    answers = {c.metadata["nbgrader"]["grade_id"]: re.sub(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n?", "", c.source,
                                                          flags=re.MULTILINE)
               for c in solved.cells if c.metadata.get("nbgrader", {}).get("solution")}
    nb = nbformat.read(FINAL, 4)
    keep = {"setup", *(f"{q}_{part}" for q in QUESTIONS for part in ("answer", "test"))}
    nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") in keep]
    for cell in nb.cells:
        grade_id = cell.metadata["nbgrader"]["grade_id"]
        if grade_id.endswith("_answer"):
            cell.source = answers[grade_id]
    return nb


@pytest.mark.slow
def test_validate_on_the_final_assessment_says_answers_are_recorded_and_judged_when_graded(tmp_path):
    env, cwd = _learner_environment()
    work = tmp_path / "labs" / "final-assessment"
    work.mkdir(parents=True)
    nbformat.write(_final_questions(), work / FINAL.name)
    env = {**env, "GPULAB_HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path),
           "PATH": os.pathsep.join([str(VENV_BIN), env.get("PATH", "")])}
    for key in ("GPULAB_CLUSTER", "KUBECONFIG"):
        env.pop(key, None)
    proc = subprocess.run([str(VENV_BIN / "nbgrader"), "validate", str(work / FINAL.name)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)
    assert "Success!" not in proc.stdout, proc.stdout
    assert f"VALIDATION FAILED ON {len(QUESTIONS)} CELL(S)! A check that failed earns no credit as it is; a question " \
           "whose answer is only recorded is judged when the notebook is graded." in " ".join(proc.stdout.split())
    for question in QUESTIONS:
        assert f"AssertionError: final.{question}: answer recorded; judged when graded\n" in proc.stdout, \
            (question, proc.stdout[-3000:], proc.stderr[-2000:])
    shutil.rmtree(tmp_path / "home", ignore_errors=True)
