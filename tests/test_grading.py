"""Hermetic, tamper-resistant, parallel grading of a lab, end to end through nbgrader and ``gpulab grade``.

One course directory per module: the lab's assignment is generated with
``nbgrader generate_assignment``, submissions are built from the release the
way learners fill it in (and tamper with it), ``gpulab grade LAB --jobs 2``
grades them all at once, and the assertions read nbgrader's gradebook,
``nbgrader export`` and ``nbgrader generate_feedback``.

The lab is the small fixture lab by default (answers change a bare embedded
cluster). ``GPULAB_GRADING_LAB=<lab>`` runs the lab-agnostic tests against
``solutions/<lab>/`` of the course instead; the tampering submissions that
forge the fixture's cluster state are fixture-only.
"""
from __future__ import annotations

import csv
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("grading_course", Path(__file__).parent / "fixtures/grading/course.py")
course_tools = sys.modules.setdefault(_spec.name, importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(course_tools)

LAB = os.environ.get("GPULAB_GRADING_LAB", course_tools.FIXTURE_LAB)
FIXTURE = LAB == course_tools.FIXTURE_LAB
TIMEOUT = 30                    # seconds per cell: the loops below cost two of them

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("grading")]


def _with_cells(nb, after_grade_id: str | None, sources: list[str]):
    """Insert new code cells after the cell ``after_grade_id`` (or at the end)."""
    index = len(nb.cells) if after_grade_id is None else 1 + next(
        i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == after_grade_id)
    nb.cells[index:index] = [course_tools.code_cell(textwrap.dedent(s).strip()) for s in sources]
    return nb


def _test_cells(nb):
    return [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")
            and not c.metadata["nbgrader"].get("solution")]


def _setup_id(nb) -> str:
    return next(c.metadata["nbgrader"]["grade_id"] for c in nb.cells
                if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("locked")
                and not c.metadata["nbgrader"].get("grade"))


# Forged cluster state for the fixture lab: the two exercises the partial learner did not do, done.
_FORGE = '''
import json
def forged_nodes(nodes):
    for node in nodes["items"] if isinstance(nodes, dict) else nodes:
        if node["metadata"]["name"] == "gpulab-worker":
            node["metadata"].setdefault("labels", {})["tier"] = "gold"
            node.setdefault("spec", {})["taints"] = [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]
    return nodes
'''

def _tag_tests(tag: str):
    def tamper(nb, ids):
        for cell in _test_cells(nb):
            cell.metadata.setdefault("tags", []).append(tag)
        return nb
    return tamper


def _delete_tests(nb, ids):
    tests = _test_cells(nb)
    nb.cells = [c for c in nb.cells if c not in tests]
    return nb


def _edit_tests(nb, ids):
    for i, cell in enumerate(_test_cells(nb)):
        cell.source = "pass"
        cell.metadata["nbgrader"].update(grade=i % 2 == 0, points=100)
    return nb


def _insert(after: str, *sources: str):
    return lambda nb, ids: _with_cells(nb, ids[after], list(sources))


TAMPERING = {
    "skip-execution tags on test cells": _tag_tests("skip-execution"),
    "raises-exception tags on test cells": _tag_tests("raises-exception"),
    "test cells deleted": _delete_tests,
    "test cells edited, flags and points changed": _edit_tests,
    "checks redefined in the kernel": _insert("setup", '''
        import gpulab, gpulab.checks
        from gpulab.checks.result import Result
        def assert_passed(*args, **kwargs):
            return Result(True, "fine", check_id=str(args[0]))
        gpulab.checks.run = gpulab.checks.assert_passed = gpulab.check = assert_passed
    '''),
}
if FIXTURE:
    TAMPERING |= {
        "kubernetes client monkeypatched": _insert("setup", _FORGE, '''
            import types
            import kubernetes.client
            from gpulab.learner.reader import ClusterReader
            real_nodes = ClusterReader.nodes
            ClusterReader.nodes = lambda self: forged_nodes(real_nodes(self))
            kubernetes.client.CoreV1Api.read_namespaced_config_map = lambda self, *a, **k: types.SimpleNamespace(
                data=json.dumps({"data": {"mode": "fast"}}).encode())
        '''),
        "kubeconfig pointed at a fake API server": _insert("setup", _FORGE, '''
            import http.server, os, ssl, threading, urllib.error, urllib.request, yaml
            real = yaml.safe_load(open(os.environ["KUBECONFIG"]))
            import base64, tempfile
            ca = tempfile.NamedTemporaryFile(delete=False, suffix=".crt")
            ca.write(base64.b64decode(real["clusters"][0]["cluster"]["certificate-authority-data"])); ca.close()
            upstream, token = real["clusters"][0]["cluster"]["server"], real["users"][0]["user"]["token"]
            tls = ssl.create_default_context(cafile=ca.name)

            class Fake(http.server.BaseHTTPRequestHandler):
                def forward(self):
                    length = int(self.headers.get("Content-Length") or 0)
                    request = urllib.request.Request(
                        upstream + self.path, method=self.command, data=self.rfile.read(length) if length else None,
                        headers={"Authorization": f"Bearer {token}", "Accept": "application/json",
                                 "Content-Type": self.headers.get("Content-Type") or "application/json"})
                    try:
                        response = urllib.request.urlopen(request, context=tls)
                        status, body = response.status, response.read()
                    except urllib.error.HTTPError as error:
                        status, body = error.code, error.read()
                    if self.command == "GET" and self.path.split("?")[0] == "/api/v1/nodes":
                        body = json.dumps(forged_nodes(json.loads(body))).encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = forward
                def log_message(self, *args):
                    pass

            fake = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Fake)
            threading.Thread(target=fake.serve_forever, daemon=True).start()
            real["clusters"][0]["cluster"] = {"server": f"http://127.0.0.1:{fake.server_port}"}
            with open(os.environ["KUBECONFIG"], "w") as f:
                yaml.safe_dump(real, f)
            gpulab.connect()
        '''),
        "infinite loops, one ignoring interrupts": _insert(
            "first test", "while True:\n    pass",
            "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"),
    }


def _student(case: str) -> str:
    """The student submitting a tampering case; the slow loops go first (students are graded in name order)."""
    return "looper" if "loops" in case else f"tamper{list(TAMPERING).index(case)}"


CRASH = '''
import os, signal
os.kill(os.getppid(), signal.SIGKILL)   # the process running this kernel: the grader, were it not sandboxed
'''
PAUSE = "import time\ntime.sleep(3)"    # long enough for the test to kill the grading process meanwhile


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    if FIXTURE:
        return course_tools.make_course(tmp_path_factory.mktemp("course"), timeout=TIMEOUT)
    solutions = course_tools.ROOT / "solutions"
    if not (solutions / LAB).is_dir():
        pytest.skip(f"no solutions/{LAB} yet")
    return course_tools.make_course(tmp_path_factory.mktemp("course"), LAB, solutions, timeout=TIMEOUT)


@pytest.fixture(scope="module")
def plan(course):
    """Who submitted what, and the score each submission must get."""
    exercises = course.exercises()
    partial = exercises[::3] if FIXTURE else exercises[: (len(exercises) + 1) // 2]   # fixture: exercises 1 and 4
    release = course.release_notebook()
    ids = {"setup": _setup_id(release), "first test": partial[0].test_ids[-1]}
    expected = {"solved": course.points(exercises), "untouched": 0.0, "partial": course.points(partial)}
    course.submit("solved", course.answered(exercises))
    course.submit("untouched", release)
    course.submit("partial", course.answered(partial))
    for case, tamper in TAMPERING.items():
        course.submit(_student(case), tamper(course.answered(partial), ids))
        expected[_student(case)] = course.points(partial)
    course.submit("crasher", _with_cells(course.answered(exercises), ids["setup"], [CRASH]))
    expected["crasher"] = course.points(exercises)
    course.submit("killed", _with_cells(course.answered(exercises), ids["setup"], [PAUSE]))
    return {"exercises": exercises, "partial": partial, "expected": expected}


def _kill_the_grading_process_of(student: str, grading: subprocess.Popen) -> None:
    """SIGKILL the grading process (the OOM killer, an operator) while it runs ``student``'s kernel: the parent of
    the sandbox (bwrap) whose working directory is that submission's."""
    marker = f"/autograded/{student}/".encode()
    while grading.poll() is None:
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and _mentions(entry, marker):
                    parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                    if _mentions(Path(f"/proc/{parent}"), b"gpulab.grading.worker"):
                        os.kill(parent, signal.SIGKILL)
                        return
            except (OSError, ValueError):
                continue
        time.sleep(0.02)


@pytest.fixture(scope="module")
def graded(course, plan):
    grading = subprocess.Popen([course_tools.GPULAB, "grade", LAB, "--course-dir", str(course.root), "--no-progress",
                                "--jobs", "2"], env=course.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    killer = threading.Thread(target=_kill_the_grading_process_of, args=("killed", grading), daemon=True)
    killer.start()
    stdout, stderr = grading.communicate(timeout=900)
    killer.join(timeout=5)
    return subprocess.CompletedProcess(grading.args, grading.returncode, stdout, stderr), course.scores()


def test_solutions_score_full_marks(graded, plan):
    _, scores = graded
    assert scores["solved"][0] == plan["expected"]["solved"] > 0


def test_untouched_release_scores_zero(graded):
    _, scores = graded
    assert scores["untouched"][0] == 0.0
    assert all(score == 0.0 for score in scores["untouched"][1].values())


def test_partial_scores_exactly_the_exercises_it_completed(graded, plan):
    _, scores = graded
    done = {t for e in plan["partial"] for t in e.test_ids}
    assert scores["partial"][0] == plan["expected"]["partial"]
    for grade_id, score in scores["partial"][1].items():
        assert (score > 0) == (grade_id in done), grade_id


@pytest.mark.parametrize("case", list(TAMPERING))
def test_tampering_scores_what_honest_work_earns(graded, plan, case):
    _, scores = graded
    student = _student(case)
    assert scores[student] == scores["partial"], case
    assert scores[student][0] == plan["expected"][student]


def test_a_submission_cannot_kill_its_grading_process(graded, plan):
    _, scores = graded
    assert scores["crasher"][0] == plan["expected"]["crasher"] > 0


def test_a_grading_process_that_dies_costs_only_its_submission(graded, plan):
    proc, scores = graded
    assert proc.returncode == 1, proc.stdout + proc.stderr
    killed = next(line for line in proc.stdout.splitlines() if line.startswith("killed"))
    assert " failed " in killed and "the grading process died (killed by SIGKILL)" in killed
    for student, points in plan["expected"].items():
        assert scores[student][0] == points, student
    assert not [p for p in Path("/proc").iterdir() if p.name.isdigit() and _mentions(p, b"/autograded/killed/")]


def test_grading_refuses_at_once_when_the_sandbox_settings_are_wrong(graded, course, tmp_path):
    """A limit nbgrader_config.py gets wrong: one clear error, nothing graded."""
    copy = tmp_path / "course"
    shutil.copytree(course.root.parent, copy, ignore=shutil.ignore_patterns("autograded", "feedback"))
    root = copy / course.root.name
    with open(root / "nbgrader_config.py", "a") as config:
        config.write('\nc.HermeticExecute.memory_limit = "2GB"\n')
    copied = course_tools.Course(root, LAB)
    before = copied.scores()
    proc = copied.gpulab_grade("--jobs", "2", "--force")
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == (
        "error: c.HermeticExecute.memory_limit '2GB' is not a size: write it as a pod's limits are written, "
        "e.g. 2Gi or 512Mi")
    assert copied.scores() == before


def _mentions(process: Path, text: bytes) -> bool:
    """Whether the process's command line or working directory mentions ``text``."""
    seen = b""
    try:
        seen += (process / "cmdline").read_bytes()
        seen += os.fsencode(os.readlink(process / "cwd")) + b"/"
    except OSError:
        pass
    return text in seen


def test_summary_table_lists_every_submission(graded, plan):
    proc, _ = graded
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["student", "score", "max", "status", "time", "detail"]
    total = plan["expected"]["solved"]
    solved = next(line.split() for line in lines if line.startswith("solved "))
    assert solved[:4] == ["solved", f"{total:g}", f"{total:g}", "graded"]
    assert lines[-1].startswith(f"{LAB}: {len(plan['expected'])} graded, 0 skipped, 1 failed in ")
    assert lines[-1].endswith("submissions/min with --jobs 2)")
    if FIXTURE:
        looper = next(line for line in lines if line.startswith("looper "))
        assert looper.split()[3:] == ["graded", looper.split()[4], "2", "cells", "timed", "out"], looper


def test_warnings_never_cost_points(graded, course):
    """The fixture's label check warns on stderr in the kernel; nbgrader alone would score that cell zero."""
    if not FIXTURE:
        pytest.skip("the fixture lab's check warns on purpose")
    import nbformat

    nb = nbformat.read(course.root / "autograded" / "solved" / LAB / f"{LAB}.ipynb", 4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "label_test")
    assert any(o.output_type == "stream" and o.name == "stderr" and "FutureWarning" in o.text for o in cell.outputs)
    assert course.scores()["solved"][1]["label_test"] == 2.0


def test_rerun_skips_graded_submissions_and_keeps_grades(graded, course):
    _, before = graded
    proc = course.gpulab_grade("--jobs", "2")
    assert f"{LAB}: 1 graded, {len(before) - 1} skipped, 0 failed" in proc.stdout   # the killed one is retried
    after = course.scores()
    assert after.pop("killed")[0] == course.points(course.exercises())
    assert after == {student: score for student, score in before.items() if student != "killed"}


def test_regrading_with_nbgrader_autograde_gives_the_same_grade(graded, course):
    """Plain ``nbgrader autograde --force`` runs the same hermetic pipeline; a regrade changes nothing."""
    _, before = graded
    for student in ("partial", _student("skip-execution tags on test cells")):
        course.nbgrader("autograde", LAB, "--student", student, "--force")
        assert course.scores()[student] == before[student]


def test_export_and_formgrader_see_every_result(graded, course, plan):
    from nbgrader.apps import NbGraderAPI
    from traitlets.config import Config

    course.nbgrader("export")
    with open(course.root / "grades.csv") as f:
        rows = {r["student_id"]: r for r in csv.DictReader(f) if r["assignment"] == LAB}
    for student, points in plan["expected"].items():
        assert float(rows[student]["score"]) == points, student
    config = Config()
    config.CourseDirectory.root = str(course.root)
    submissions = {s["student"]: s for s in NbGraderAPI(config=config).get_submissions(LAB)}
    assert submissions["solved"]["autograded"] and submissions["solved"]["score"] == plan["expected"]["solved"]


def test_feedback_gives_reasons_and_hints_but_not_hidden_tests(graded, course):
    course.nbgrader("generate_feedback", LAB, "--student", "partial")
    page = (course.root / "feedback" / "partial" / LAB / f"{course.release.stem}.html").read_text()
    assert "BEGIN HIDDEN TESTS" not in page
    assert "The grader&#39;s check of your cluster" in page or "The grader's check of your cluster" in page
    if FIXTURE:
        assert "assert_passed(&quot;fixture.node_tainted&quot;)" not in page and \
            'assert_passed("fixture.node_tainted")' not in page
        assert "node gpulab-worker has no dedicated=batch:NoSchedule taint" in page
        assert "<i>Hint:</i> `kubectl taint nodes NODE KEY=VALUE:EFFECT`" in page


def test_validate_passes_a_solved_notebook(graded, course, tmp_path):
    """``nbgrader validate`` runs the learner's notebook on their own (embedded) cluster, as learners do."""
    if not FIXTURE:
        pytest.skip("validating a real lab needs its starting state")
    workdir = tmp_path / LAB                                   # the learner's copy of the release, answered
    shutil.copytree(course.release.parent, workdir)
    notebook = workdir / course.release.name
    shutil.copy(course.root / "submitted" / "solved" / LAB / course.release.name, notebook)
    env = {**course.env(), "GPULAB_HOME": str(tmp_path / "learner-home"), "KUBECONFIG": str(tmp_path / "kubeconfig")}
    env.pop("GPULAB_CLUSTER", None)
    try:
        proc = course.nbgrader("validate", str(notebook), check=False, env=env)
    finally:
        subprocess.run([course_tools.GPULAB, "cluster", "down"], env=env, capture_output=True, timeout=60)
    assert "Success! Your notebook passes all the tests." in proc.stdout, proc.stdout + proc.stderr


def _autograded(course, case: str):
    import nbformat

    return nbformat.read(course.root / "autograded" / _student(case) / LAB / f"{course.release.stem}.ipynb", 4)


def test_deleted_test_cells_come_back_with_nbgrader_notice(graded, course, plan):
    nb = _autograded(course, "test cells deleted")
    tests = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert [c.metadata.nbgrader.grade_id for c in tests] == [t for e in plan["exercises"] for t in e.test_ids]
    for cell in tests:
        assert cell.source.startswith(f"# This cell (id:{cell.metadata.nbgrader.grade_id}) was missing from the "
                                      "submission. It was added back by nbgrader.\n\n")


def test_a_cell_that_loops_forever_is_stopped_and_the_rest_graded(graded, course):
    if not FIXTURE:
        pytest.skip("fixture lab only")
    nb = _autograded(course, "infinite loops, one ignoring interrupts")
    loops = [c for c in nb.cells if "while True" in c.source]
    interrupted, ignoring = ([(o.ename, o.evalue) for o in c.outputs if o.output_type == "error"] for c in loops)
    assert interrupted == [("KeyboardInterrupt", ""), ("CellTimeoutError", "")]
    assert ignoring == [("CellTimeoutError", "the kernel did not stop when interrupted after the cell's timeout; "
                                             "it was restarted and the earlier cells re-run before grading went on")]
    count_test = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "count_test")
    assert [o.text for o in count_test.outputs] == ["PASS fixture.node_count: the cluster has 4 nodes\n"]
