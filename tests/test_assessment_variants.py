"""The final assessment under an instructor's secret: the published answers answer nobody's assessment.

Each learner's assessment cluster is a variant (:mod:`gpulab.labs.variant`):
how many H100s and A100s, and which worker holds which, drawn from the
instructor's secret and the learner's id. The grader builds each submission's
cluster from the same secret, so a count read off the repository's solutions
(12 GPUs) scores nothing, the learner's own variant's count scores, and a wrong
one does not, all through ``gpulab grade`` and nbgrader's gradebook. The
learner's ``gpulab lab reset`` builds the variant from the token the instructor
hands out, and Validate still only records the answers.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from gpulab.labs import variant
from tests.conftest import ROOT
from tests.test_course_grading import course_tools
from tests.test_validate_like_grading import QUESTIONS

VENV_BIN = Path(sys.executable).parent
SECRET = "course-2026-spring-0f3c9a1b7d2e"
LAB = "final-assessment"


# --- drawing variants ------------------------------------------------------------------------------------------

def test_a_secret_draws_each_learner_a_variant_the_published_answer_misses():
    drawn = {learner: variant.for_learner(SECRET.encode(), learner) for learner in map(str, range(300))}
    assert drawn == {learner: variant.for_learner(SECRET.encode(), learner) for learner in drawn}   # reproducible
    assert len(set(drawn.values())) == len(variant.VARIANTS)       # every variant is drawn for some learner
    assert all(v.total != variant.DEFAULT.total and v != variant.DEFAULT for v in drawn.values())
    other = {learner: variant.for_learner(b"another-instructors-secret", learner) for learner in drawn}
    assert sum(drawn[k] == other[k] for k in drawn) < len(drawn) / 4     # another secret draws other variants


def test_without_a_secret_every_learner_has_the_course_cluster():
    assert variant.grading_variant("alice", {}) == variant.DEFAULT
    assert variant.learner_variant({}) == variant.DEFAULT


def test_a_token_names_its_variant_and_a_bad_one_says_what_to_do():
    for chosen in variant.VARIANTS:
        assert variant.Variant.parse(chosen.token) == chosen
    with pytest.raises(variant.VariantError, match="set it to the value your instructor gave you"):
        variant.learner_variant({variant.VARIANT_ENV: "H100x3@worker2,A100x4@worker3"})
    with pytest.raises(variant.VariantError, match="is not a variant"):
        variant.learner_variant({variant.VARIANT_ENV: "H100x8@worker2,A100x4@worker2"})


def test_an_unusable_secret_is_refused_with_what_to_do(tmp_path):
    with pytest.raises(variant.VariantError, match="at least 16 random"):
        variant.instructor_secret({variant.SECRET_ENV: "guessable"})
    with pytest.raises(variant.VariantError, match="cannot read the instructor's secret"):
        variant.instructor_secret({variant.SECRET_FILE_ENV: str(tmp_path / "missing")})
    (tmp_path / "secret").write_text(SECRET + "\n")
    assert variant.instructor_secret({variant.SECRET_FILE_ENV: str(tmp_path / "secret")}) == SECRET.encode()


def test_only_the_final_assessment_varies_and_only_under_a_secret():
    from gpulab.grading.clusters import shared_cluster, variant_of

    secret = {variant.SECRET_ENV: SECRET}
    assert variant_of(LAB, "ada", secret) == variant.for_learner(SECRET.encode(), "ada")
    assert variant_of(LAB, "ada", {}) is None and variant_of("lab02-node-pools", "ada", secret) is None
    assert shared_cluster(LAB, {}) and shared_cluster("lab02-node-pools", secret) and not shared_cluster(LAB, secret)
    with pytest.raises(variant.VariantError, match="at least 16 random"):
        shared_cluster(LAB, {variant.SECRET_ENV: "too-short"})


def test_the_learners_kernel_never_inherits_the_secret(monkeypatch, tmp_path):
    from gpulab.grading.execute import kernel_env

    monkeypatch.setenv(variant.SECRET_ENV, SECRET)
    monkeypatch.setenv(variant.SECRET_FILE_ENV, str(tmp_path / "secret"))
    monkeypatch.setenv("GPULAB_ENGINE", "embedded")          # the course's other options still pass
    env = kernel_env()
    assert variant.SECRET_ENV not in env and variant.SECRET_FILE_ENV not in env and env["GPULAB_ENGINE"] == "embedded"


def test_the_instructor_lists_variants_to_hand_out_and_only_with_the_secret():
    gpulab = [str(VENV_BIN / "gpulab"), "lab", "variant", "alice", "bob"]
    env = {k: v for k, v in os.environ.items() if k not in (variant.SECRET_ENV, variant.SECRET_FILE_ENV)}
    refused = subprocess.run(gpulab, env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1 and "no instructor secret: set GPULAB_INSTRUCTOR_SECRET" in refused.stderr
    listed = subprocess.run(gpulab, env={**env, variant.SECRET_ENV: SECRET}, capture_output=True, text=True,
                            timeout=60, check=True)
    tokens = [variant.for_learner(SECRET.encode(), who).token for who in ("alice", "bob")]
    assert listed.stdout.splitlines() == [f"alice\t{variant.VARIANT_ENV}={tokens[0]}",
                                          f"bob\t{variant.VARIANT_ENV}={tokens[1]}"]


# --- the learner's cluster -------------------------------------------------------------------------------------

def _kubectl_json(kubeconfig: str, *args: str) -> dict:
    out = subprocess.run([str(VENV_BIN / "kubectl"), "--kubeconfig", kubeconfig, *args, "-o", "json"],
                         capture_output=True, text=True, timeout=60, check=True)
    return json.loads(out.stdout)


@pytest.mark.slow
def test_the_learners_reset_builds_their_variant(tmp_path, engine):
    chosen = variant.for_learner(SECRET.encode(), "ada")
    env = {**os.environ, "GPULAB_HOME": str(tmp_path / "home"), variant.VARIANT_ENV: chosen.token,
           "GPULAB_ENGINE": engine, "PATH": os.pathsep.join([str(VENV_BIN), os.environ.get("PATH", "")])}
    for key in ("GPULAB_CLUSTER", "KUBECONFIG"):
        env.pop(key, None)
    gpulab = str(VENV_BIN / "gpulab")
    try:
        reset = subprocess.run([gpulab, "lab", "reset", LAB], env=env, capture_output=True, text=True, timeout=600)
        assert reset.returncode == 0, reset.stdout + reset.stderr
        assert f"your variant ({variant.VARIANT_ENV}): {chosen.token}" in reset.stdout
        nodes = _kubectl_json(reset.stdout.strip().splitlines()[-1], "get", "nodes")["items"]
        gpus = {n["metadata"]["name"]: (n["metadata"]["labels"].get("nvidia.com/gpu.product"),
                                        n["status"]["allocatable"].get("nvidia.com/gpu"))
                for n in nodes if n["metadata"]["labels"].get("nvidia.com/gpu.present") == "true"}
        assert gpus == {f"gpulab-{chosen.h100_node}": ("NVIDIA-H100-80GB-HBM3", str(chosen.h100)),
                        f"gpulab-{chosen.a100_node}": ("NVIDIA-A100-SXM4-40GB", str(chosen.a100))}
        bad = subprocess.run([gpulab, "lab", "reset", LAB], env={**env, variant.VARIANT_ENV: "H100x8"},
                             capture_output=True, text=True, timeout=120)
        assert bad.returncode == 1 and "is not a variant of the final assessment" in bad.stderr, bad.stderr
    finally:
        subprocess.run([gpulab, "cluster", "reset"], env=env, capture_output=True, timeout=120)


# --- grading under the secret ----------------------------------------------------------------------------------

def _answered(course, answers: dict[str, str]) -> nbformat.NotebookNode:
    """The release with only these answer cells filled in (the cluster exercises left undone)."""
    nb = course.release_notebook()
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
    return nb


@pytest.mark.slow
def test_grading_under_the_secret_scores_the_variants_answer_not_the_published_one(tmp_path):
    course = course_tools.make_course(tmp_path, LAB, ROOT / "solutions", timeout=300)
    published = {e.answer_id: e.solution for e in course.exercises()}     # the repository's solutions, as a key
    questions = {f"{q}_answer": published[f"{q}_answer"] for q in QUESTIONS}
    assert "\nallocatable_gpus = 12 " in questions["allocatable_gpus_answer"]
    variants = {who: variant.for_learner(SECRET.encode(), who) for who in ("published", "right", "wrong")}
    course.submit("published", _answered(course, questions))
    course.submit("right", _answered(course, {"allocatable_gpus_answer":
                                              f"allocatable_gpus = {variants['right'].total}"}))
    course.submit("wrong", _answered(course, {"allocatable_gpus_answer":
                                              f"allocatable_gpus = {variants['wrong'].total + 1}"}))
    grade = [course_tools.GPULAB, "grade", LAB, "--course-dir", str(course.root), "--no-progress", "--jobs", "2"]
    refused = subprocess.run(grade, env={**course.env(), variant.SECRET_ENV: "guessable"}, capture_output=True,
                             text=True, timeout=300)
    assert refused.returncode != 0 and "use at least 16 random" in refused.stdout + refused.stderr, refused.stderr
    proc = subprocess.run(grade, env={**course.env(), variant.SECRET_ENV: SECRET}, capture_output=True, text=True,
                          timeout=1500)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    scores = course.scores()
    assert scores["published"][1]["allocatable_gpus_test"] == 0.0       # the published count misses its variant
    assert scores["right"][1]["allocatable_gpus_test"] == 1.0
    assert scores["wrong"][1]["allocatable_gpus_test"] == 0.0
    assert scores["right"][0] == 1.0 and scores["wrong"][0] == 0.0      # nothing else earned without the work
    for who, chosen in variants.items():         # each was graded on the cluster of its own variant
        graded = nbformat.read(next((course.root / "autograded" / who / LAB).glob("*.ipynb")), 4)
        assert graded.metadata["gpulab"]["variant"] == chosen.token, who
    course.nbgrader("generate_feedback", LAB, "--student", "right")
    page = (course.root / "feedback" / "right" / LAB / f"{LAB}.html").read_text()
    chosen = variants["right"]
    nodes = sorted([(chosen.h100_node, chosen.h100), (chosen.a100_node, chosen.a100)])
    parts = ", ".join(f"gpulab-{node} {count}" for node, count in nodes)
    assert f"right: {chosen.total} nvidia.com/gpu allocatable ({parts})" in page


@pytest.mark.slow
def test_validate_under_a_variant_still_only_records_the_answers(tmp_path):
    from tests import test_validate_like_grading as validating

    env, cwd = validating._learner_environment()
    work = tmp_path / "labs" / LAB
    work.mkdir(parents=True)
    nbformat.write(validating._final_questions(), work / validating.FINAL.name)
    env = {**env, "GPULAB_HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path),
           variant.VARIANT_ENV: variant.for_learner(SECRET.encode(), "ada").token,
           "PATH": os.pathsep.join([str(VENV_BIN), env.get("PATH", "")])}
    for key in ("GPULAB_CLUSTER", "KUBECONFIG"):
        env.pop(key, None)
    proc = subprocess.run([str(VENV_BIN / "nbgrader"), "validate", str(work / validating.FINAL.name)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=900)
    assert "Success!" not in proc.stdout, proc.stdout
    for question in validating.QUESTIONS:
        assert f"AssertionError: final.{question}: answer recorded; judged when graded\n" in proc.stdout, \
            (question, proc.stdout[-3000:], proc.stderr[-2000:])
