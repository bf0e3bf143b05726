"""The learner release: the course as learners get it, with no solution, hidden test or answer key in it.

A learner's checkout of this repository holds ``solutions/`` and the final
assessment's keys, and JupyterLab's terminal reads them. ``make learner-release``
writes the committed tree without them; the README's learner path starts there.
"""
from __future__ import annotations

import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from gpulab.checks import keys
from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import learner_release  # noqa: E402


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    return learner_release.release(tmp_path_factory.mktemp("learner") / "gpulab-learner")


def texts(root: Path):
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        yield path.relative_to(root), path.read_bytes().decode("utf-8", errors="replace")


def test_the_release_holds_no_solution_hidden_test_or_grader(release):
    assert not any((release / d).exists() for d in ("solutions", "grader", "tests"))
    marker = re.compile(r"^[\s\"]*### BEGIN (SOLUTION|HIDDEN TESTS)", re.M)     # nbgrader's, as a cell holds it
    assert marker.search((ROOT / "solutions" / "lab02-node-pools" / "lab02-node-pools.ipynb").read_text())
    assert [str(p) for p, text in texts(release) if marker.search(text)] == []


def test_the_release_holds_no_word_of_the_final_assessments_keys(release, monkeypatch):
    """Neither a right answer's explanation nor why a wrong one is wrong: nothing in the release tells which option
    the grader takes."""
    monkeypatch.setattr(keys, "install", lambda check_id, judge: None)
    graded = runpy.run_path(str(ROOT / "grader" / "answer_keys.py"))["KEYS"].values()
    secrets = [text[:50] for q in graded for text in (q.because, *q.why_not.values()) if text]
    assert len(secrets) >= 16
    leaks = [(str(p), s) for p, text in texts(release) for s in secrets if s in text]
    assert leaks == []


def test_the_learner_path_starts_in_the_release(release):
    """The README's learner path (``make lab``) is there with what it opens, and the final assessment's checks there
    only record answers: no process started from the release can judge them."""
    readme = (release / "README.md").read_text()
    assert "make lab" in readme and "learner release" in readme
    assert "\nlab: cluster" in (release / "Makefile").read_text()
    assert (release / "gpulab" / "learner" / "jupyterlab.py").is_file()
    assert sorted(p.name for p in (release / "labs").iterdir()) == sorted(p.name for p in (ROOT / "labs").iterdir())
    assert sorted(p.name for p in (release / "course").glob("*.ipynb")) == \
        sorted(p.name for p in (ROOT / "course").glob("*.ipynb"))
    env = {**os.environ, "PYTHONPATH": str(release)}
    code = ("from gpulab import checks; import gpulab.checks.keys as k; "
            "r = checks.run('final.copied_density', 'a', client=object()); print(r.recorded, r.passed, k._JUDGES)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=release, env=env, capture_output=True, text=True,
                          check=True, timeout=120)
    assert proc.stdout == "True False {}\n"
