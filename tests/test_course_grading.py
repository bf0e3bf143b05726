"""The course's own labs graded end to end: the source's mistakes score 0 in their cells and nothing elsewhere.

Each lab gets one nbgrader course directory (``make_course``: the project's
``nbgrader_config.py`` and ``answer_keys.py``), one solved submission and the
submissions that make a mistake, graded by ``gpulab grade --jobs 2``; the
assertions read every cell's score from nbgrader's gradebook. Then
``nbgrader validate`` of a learner's notebook says what the grade says, on a
cluster of its own, leaving the learner's cluster alone; and
``grader/README.md``'s command blocks, run as written in a fresh copy of the
repository, take two submissions from the exchange to ``grades.csv``.
"""
from __future__ import annotations

import csv
import importlib.util
import os
import pwd
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

_spec = importlib.util.spec_from_file_location("grading_course", ROOT / "tests/fixtures/grading/course.py")
course_tools = sys.modules.setdefault(_spec.name, importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(course_tools)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("course-grading")]
VENV_BIN = Path(sys.executable).parent

# lab -> {student: ({answer cell grade_id: its source}, the test cells that must score 0)}
MISTAKES = {
    "lab01-gpu-operator": {
        "unpinned": ({"operator_pinned_answer": (
            "!gpulab install gpu-operator -n gpu-operator --version=v26.7.0\n"
            "gpulab.wait_for(gpulab.conditions.clusterpolicy_ready(), timeout=300)")}, {"operator_pinned_test"}),
    },
    "lab03-h100-pod": {
        "contradictory": ({
            "pending_reason_answer": 'pending_reason = "not the missing toleration: untolerated taints are fine here"',
            "fraction_refused_answer": 'fraction_refused = "fractions are fine, the node just has no free GPU"',
        }, {"pending_reason_test", "fraction_refused_test"}),
        "in-own-words": ({
            "pending_reason_answer": 'pending_reason = "the pod does not tolerate the GPU nodes\' taint"',
            "fraction_refused_answer": 'fraction_refused = "must be an integer"',
        }, set()),
    },
    "lab04-sharing": {
        # see _h100_too; the H100 stays time-sliced through exercise 7, whose check leaves the H100 unshared too
        "h100-time-sliced": ({"timeslicing_a100_answer": None}, {"timeslicing_a100_test", "mps_a100_test"}),
    },
    "lab06-dra": {
        "claim-in-default": ({"shared_claim_answer": None}, {"shared_claim_test"}),          # see _claim_elsewhere
    },
    "final-assessment": {      # one learner, three mistakes: each costs its own cell (the grader's keys judge two)
        "mistakes": ({"allocatable_gpus_answer": "allocatable_gpus = 8",
                      "timeslicing_a100_answer": None,
                      "forgotten_toleration_answer": 'answer_1 = "a"'},
                     {"allocatable_gpus_test", "timeslicing_a100_test", "forgotten_toleration_test"}),
    },
}


def _h100_too(solution: str) -> str:
    """lab04's (and the final's) solution with the time-slicing config selected on the H100 node too: the mistake
    the check catches."""
    h100 = "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3"
    return solution + (f'\ngpulab.kubectl("label nodes -l {h100} nvidia.com/device-plugin.config=a100-40gb")\n'
                       'gpulab.wait_for(gpulab.conditions.nodes_labelled("nvidia.com/device-plugin.config=a100-40gb", '
                       '"nvidia.com/gpu.replicas", "4"), timeout=300)')


def _claim_elsewhere(solution: str) -> str:
    """lab06's shared claim created in namespace default while its pod is in team-a: the mistake the check catches."""
    return solution.replace("namespace: team-a", "namespace: default", 1)


DERIVED = {"timeslicing_a100_answer": _h100_too, "shared_claim_answer": _claim_elsewhere}


def _submission(course, cells: dict[str, str | None]):
    nb = course.answered(course.exercises())
    solutions = {e.answer_id: e.solution for e in course.exercises()}
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in cells:
            cell.source = cells[grade_id] if cells[grade_id] is not None else DERIVED[grade_id](solutions[grade_id])
    return nb


@pytest.fixture(scope="module", params=sorted(MISTAKES))
def graded(request, tmp_path_factory):
    lab = request.param
    course = course_tools.make_course(tmp_path_factory.mktemp(lab), lab, ROOT / "solutions", timeout=300)
    course.submit("solved", course.answered(course.exercises()))
    for student, (cells, _) in MISTAKES[lab].items():
        course.submit(student, _submission(course, cells))
    proc = course.gpulab_grade("--jobs", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    return lab, course, course.scores()


def test_each_mistake_costs_its_own_cells_and_nothing_else(graded):
    lab, course, scores = graded
    points = {t: p for e in course.exercises() for t, p in zip(e.test_ids, _points(course, e))}
    total, cells = scores["solved"]
    assert cells == points and total == sum(points.values()), lab
    for student, (_, zeroed) in MISTAKES[lab].items():
        total, cells = scores[student]
        assert cells == {t: 0.0 if t in zeroed else p for t, p in points.items()}, (lab, student)


def _points(course, exercise) -> list[float]:
    import nbformat

    source = nbformat.read(next((course.root.parent / "solutions" / course.lab).glob("*.ipynb")), 4)
    meta = {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"] for c in source.cells
            if c.metadata.get("nbgrader", {}).get("grade")}
    return [float(meta[t]["points"]) for t in exercise.test_ids]


def test_feedback_names_the_mistake(graded):
    lab, course, _ = graded
    student = next(iter(MISTAKES[lab]))
    course.nbgrader("generate_feedback", lab, "--student", student)
    page = (course.root / "feedback" / student / lab / f"{lab}.html").read_text()
    expected = {
        "lab01-gpu-operator": "the driver is not pinned: release",
        "lab03-h100-pod": "is not one of the options (a, b, c, d)",
        "lab04-sharing": "the H100 node gpulab-worker2 is time-sliced too",
        "lab06-dra": "ResourceClaim shared-gpu is in namespace default, not team-a",
        "final-assessment": ("8 is what a single node advertises; the question asks for the whole cluster",
                             "the H100 node gpulab-worker2 is time-sliced too",
                             "(a) is not it: a resource request does not tolerate a taint"),
    }[lab]
    page = page.replace("&#39;", "'")
    assert all(words in page for words in ((expected,) if isinstance(expected, str) else expected)), lab


# --- nbgrader validate ------------------------------------------------------------------------------------------

def _validate(course, notebook, home: Path, tmp: Path) -> subprocess.CompletedProcess:
    env = {**course.env(), "GPULAB_HOME": str(home), "TMPDIR": str(tmp)}
    env.pop("GPULAB_CLUSTER", None)
    env.pop("KUBECONFIG", None)
    return course.nbgrader("validate", str(notebook), check=False, env=env, timeout=900)


def test_validate_says_what_the_grade_says_and_leaves_the_learners_cluster_alone(tmp_path):
    import nbformat

    lab = "lab03-h100-pod"
    course = course_tools.make_course(tmp_path / "course", lab, ROOT / "solutions")
    home = tmp_path / "learner-home"
    env = {**course.env(), "GPULAB_HOME": str(home)}
    up = subprocess.run([str(VENV_BIN / "gpulab"), "cluster", "up"], env=env, capture_output=True, text=True,
                        timeout=120, check=True)
    kubeconfig = up.stdout.strip().splitlines()[-1]
    kubectl = [str(VENV_BIN / "kubectl"), "--kubeconfig", kubeconfig]
    subprocess.run([*kubectl, "create", "configmap", "my-work", "--from-literal=keep=me"], check=True,
                   capture_output=True, timeout=60)
    server = (home / "clusters" / "gpulab" / "server.pid").read_text()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    try:
        work = tmp_path / "learner" / lab
        shutil.copytree(course.release.parent, work)
        notebook = work / course.release.name
        nbformat.write(_submission(course, MISTAKES[lab]["contradictory"][0]), notebook)
        wrong = _validate(course, notebook, home, scratch)
        nbformat.write(course.answered(course.exercises()), notebook)
        right = _validate(course, notebook, home, scratch)
        still = subprocess.run([*kubectl, "get", "configmap", "my-work", "-o", "jsonpath={.data.keep}"],
                               capture_output=True, text=True, timeout=60)
        assert still.stdout == "me", still.stderr
        assert (home / "clusters" / "gpulab" / "server.pid").read_text() == server
    finally:
        subprocess.run([str(VENV_BIN / "gpulab"), "cluster", "reset"], env=env, capture_output=True, timeout=120)
    assert "VALIDATION FAILED ON 2 CELL(S)!" in wrong.stdout, wrong.stdout + wrong.stderr
    failed = [line.strip() for line in wrong.stdout.splitlines()
              if line.strip().startswith("gpulab.checks.assert_passed(")]      # nbgrader lists each failed cell
    assert failed == ['gpulab.checks.assert_passed("lab03.pending_reason", pending_reason)',
                      'gpulab.checks.assert_passed("lab03.fraction_refused", fraction_refused)'], wrong.stdout
    assert "AssertionError: lab03.pending_reason: 'not the missing toleration" in wrong.stdout
    assert "AssertionError: lab03.fraction_refused: 'fractions are fine" in wrong.stdout
    assert "Success! Your notebook passes all the tests." in right.stdout, right.stdout + right.stderr
    from tests.conftest import wait_for

    wait_for(lambda: not list(scratch.glob("gpulab-validate-*")), timeout=60,
             what="the validation's own clusters to be removed after their kernels")


# --- grader/README.md, as written -------------------------------------------------------------------------------

def _blocks(readme: Path) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", readme.read_text(), flags=re.DOTALL)


def _bash(script: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, f"{script}\nfailed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _fresh_copy(target: Path) -> Path:
    """What a clone holds (tracked and not-ignored files), with the course's virtual environment next to it."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    (target / ".venv").symlink_to(VENV_BIN.parent)      # `make install` of the copy, without the minutes it takes
    return target


def test_grader_readme_runs_as_written_on_a_fresh_clone(tmp_path):
    import nbformat

    clone = _fresh_copy(tmp_path / "gpulab")
    prepare, submit, grade = _blocks(clone / "grader" / "README.md")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPULAB_", "KUBECONFIG", "VIRTUAL_ENV"))}
    labs_before = {p: p.read_bytes() for p in (clone / "labs").rglob("*") if p.is_file()}
    _bash(prepare, clone, env)
    assert {p: p.read_bytes() for p in (clone / "labs").rglob("*") if p.is_file()} == labs_before

    course = course_tools.Course(clone / "grader", "lab02-node-pools")
    exercises = course.exercises()
    learner = tmp_path / "learner"                    # a learner's own checkout, their lab answered in full
    shutil.copytree(clone / "labs", learner / "labs")
    nbformat.write(course.answered(exercises), learner / "labs" / "lab02-node-pools" / "lab02-node-pools.ipynb")
    active = {**env, "PATH": f"{clone / '.venv' / 'bin'}{os.pathsep}{env['PATH']}"}
    _bash(submit, learner, {**active, "EXCHANGE": str(clone / "grader" / "exchange")})
    course.submit("bob", course.answered(exercises[:2]))      # a submission copied in, as the README allows

    proc = _bash(grade, clone / "grader", active)
    me = pwd.getpwuid(os.getuid()).pw_name
    assert re.search(rf"^{re.escape(me)} +7 +7 +graded", proc.stdout, flags=re.MULTILINE), proc.stdout
    partial = course.points(exercises[:2])
    with open(clone / "grader" / "grades.csv") as f:
        rows = {r["student_id"]: float(r["score"]) for r in csv.DictReader(f) if r["assignment"] == "lab02-node-pools"}
    assert rows == {me: 7.0, "bob": partial, "alice": 0.0}
    for student in (me, "bob"):
        assert (clone / "grader" / "feedback" / student / "lab02-node-pools" / "lab02-node-pools.html").exists()
