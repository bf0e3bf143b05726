"""The grading pipeline's pure parts: reading test cells, scoring rules, feedback, cluster identity, the table."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from nbformat.notebooknode import NotebookNode
from nbformat.v4 import new_code_cell, new_output

from gpulab.grading.cells import CheckCall, check_calls, is_graded, is_instructor_code
from gpulab.grading.clusters import SubmissionCluster, _start_ticks, stop_clusters_under
from gpulab.grading.execute import kernel_env
from gpulab.grading.feedback import ExplainGrades
from gpulab.grading.parallel import Outcome, Report, summary
from gpulab.grading.recheck import UnreadableAnswer, parse_answer
from gpulab.grading.scoring import verified_score

KNOWN = frozenset({"lab01.allocatable_gpus", "lab02.pools_labelled", "setup.connected"})


def _test_cell(source: str, points: float = 2, outputs: list | None = None) -> NotebookNode:
    cell = new_code_cell(source, metadata={"nbgrader": {
        "grade": True, "solution": False, "locked": True, "grade_id": "t1", "points": points, "schema_version": 3}})
    cell.outputs = outputs or []
    return cell


# --- which checks a test cell runs --------------------------------------------------------

def test_check_calls_reads_ids_and_answer_expressions_in_source_order():
    source = ('# assert_passed("lab02.pools_labelled") in a comment does not count\n'
              'gpulab.checks.assert_passed("setup.connected")\n'
              'print("lab02.pools_labelled")\n'
              'assert_passed("lab01.allocatable_gpus", int(total) + 0)\n'
              'gpulab.check("lab02.pools_labelled", answer=my_answer)\n'
              'assert_passed("lab09.unknown")\n'
              'assert_passed(check_id_in_a_variable)\n')
    assert check_calls(source, KNOWN) == [CheckCall("setup.connected", None),
                                          CheckCall("lab01.allocatable_gpus", "int(total) + 0"),
                                          CheckCall("lab02.pools_labelled", "my_answer")]


def test_check_calls_of_source_that_does_not_parse_is_empty():
    assert check_calls('assert_passed("setup.connected"', KNOWN) == []


def test_graded_and_instructor_cells():
    test = _test_cell("pass")
    answer = new_code_cell("x = 1", metadata={"nbgrader": {"grade": False, "solution": True, "grade_id": "a"}})
    locked = new_code_cell("import gpulab", metadata={"nbgrader": {"grade": False, "solution": False,
                                                                   "locked": True, "grade_id": "s"}})
    assert [is_graded(c) for c in (test, answer, locked)] == [True, False, False]
    assert [is_instructor_code(c) for c in (test, answer, locked)] == [True, False, True]


# --- answers handed over by the kernel ----------------------------------------------------

def test_parse_answer_takes_json_from_the_kernels_text_repr():
    assert parse_answer({"status": "ok", "data": {"text/plain": "'12'"}}) == 12
    assert parse_answer({"status": "ok", "data": {"text/plain": '\'"NVIDIA-H100"\''}}) == "NVIDIA-H100"
    undefined = parse_answer({"status": "error", "ename": "NameError", "evalue": "name 'x' is not defined"})
    assert undefined == UnreadableAnswer("NameError: name 'x' is not defined")
    assert isinstance(parse_answer({"status": "ok", "data": {"text/plain": "<object at 0x1>"}}), UnreadableAnswer)


# --- scoring ----------------------------------------------------------------------------

PASSED = [{"check_id": "setup.connected", "passed": True, "reason": "ok", "hint": ""}]
FAILED = [{"check_id": "setup.connected", "passed": False, "reason": "no", "hint": "h"}]
WARNING = new_output("stream", name="stderr", text="x.py:1: FutureWarning: deprecated\n")
ERROR = new_output("error", ename="AssertionError", evalue="setup.connected: no", traceback=[])


def test_a_rechecked_cell_scores_only_when_the_kernel_and_the_grader_agree():
    assert verified_score(_test_cell("c", outputs=[]), PASSED) == 2.0
    assert verified_score(_test_cell("c", outputs=[]), FAILED) == 0.0          # kernel said fine: it was fooled
    assert verified_score(_test_cell("c", outputs=[ERROR]), PASSED) == 0.0
    assert verified_score(_test_cell("c", outputs=[WARNING]), PASSED) == 2.0   # warnings cost nothing


def test_a_rechecked_cell_ignores_partial_credit_the_kernel_printed():
    fake = new_output("execute_result", data={"text/plain": "1000"}, execution_count=1)
    assert verified_score(_test_cell("c", outputs=[fake]), FAILED) == 0.0
    assert verified_score(_test_cell("c", outputs=[fake]), PASSED) == 2.0


def test_an_unchecked_cell_is_scored_like_nbgrader_minus_stderr():
    assert verified_score(_test_cell("c", outputs=[WARNING]), None) == 2.0
    assert verified_score(_test_cell("c", outputs=[WARNING, ERROR]), None) == 0.0
    half = new_output("execute_result", data={"text/plain": "1.5"}, execution_count=1)
    assert verified_score(_test_cell("c", outputs=[half]), None) == 1.5
    too_much = new_output("execute_result", data={"text/plain": "7"}, execution_count=1)
    assert verified_score(_test_cell("c", outputs=[too_much]), None) == 0.0


# --- feedback ---------------------------------------------------------------------------

def test_feedback_hides_hidden_tests_shortens_tracebacks_and_explains_the_verdict():
    error = new_output("error", ename="AssertionError", evalue="lab02.pools_labelled: no pools\nHint: label them",
                       traceback=["Traceback ...", 'assert_passed("lab02.pools_labelled")', "AssertionError: ..."])
    cell = _test_cell('# visible\n### BEGIN HIDDEN TESTS\nassert_passed("lab02.pools_labelled")\n'
                      '### END HIDDEN TESTS', outputs=[error])
    cell.metadata["gpulab"] = {"checks": [{"check_id": "lab02.pools_labelled", "passed": False,
                                           "reason": "GPU node x has no pool label", "hint": "kubectl label"}]}
    cell, _ = ExplainGrades().preprocess_cell(cell, {}, 0)
    assert cell.source == "# visible"
    assert cell.outputs[0].traceback == ["AssertionError: lab02.pools_labelled: no pools\nHint: label them"]
    verdict = cell.outputs[1]
    assert verdict.data["text/plain"] == ("Grader: FAIL lab02.pools_labelled: GPU node x has no pool label\n"
                                          "Hint: kubectl label")
    assert "<i>Hint:</i> kubectl label" in verdict.data["text/html"]


# --- the submission's cluster -------------------------------------------------------------

def test_a_cluster_is_alive_only_while_the_process_the_grader_started_runs(tmp_path):
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    cluster = SubmissionCluster(tmp_path, {}, server.pid, _start_ticks(server.pid))
    assert cluster.alive()
    replacement = SubmissionCluster(tmp_path, {}, server.pid, "0")     # same pid, another start time
    assert not replacement.alive()
    server.kill()
    deadline = time.monotonic() + 5
    while cluster.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not cluster.alive()


def test_stop_clusters_under_kills_only_servers_whose_command_line_names_their_state(tmp_path):
    state = tmp_path / "worker-0" / "grade-x" / "clusters" / "gpulab"
    state.mkdir(parents=True)
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "--dir", str(state)])
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    (state / "server.pid").write_text(str(server.pid))
    other = tmp_path / "worker-1" / "grade-y" / "clusters" / "gpulab"
    other.mkdir(parents=True)
    (other / "server.pid").write_text(str(stranger.pid))      # a recycled pid: not ours to kill
    try:
        assert stop_clusters_under(tmp_path) == 1
        assert server.wait(timeout=5) == -9
        assert stranger.poll() is None
    finally:
        stranger.kill()
        server.kill()


def test_the_learners_kernel_sees_only_its_own_cluster(tmp_path, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", "/instructor/.kube/config")
    monkeypatch.setenv("GPULAB_HOME", "/instructor/.gpulab")
    monkeypatch.setenv("GPULAB_CLUSTER_NAME", "mine")
    cluster = SubmissionCluster(tmp_path, {"apiVersion": "v1", "kind": "Config"}, 0, None)
    env = kernel_env(cluster)
    assert env["GPULAB_CLUSTER"] == "kubeconfig"
    assert env["KUBECONFIG"] == str(tmp_path / "learner" / "kubeconfig")
    assert Path(env["KUBECONFIG"]).read_text() == "apiVersion: v1\nkind: Config\n"
    assert env["GPULAB_HOME"] == str(tmp_path / "learner")
    assert env["NBGRADER_EXECUTION"] == "autograde"
    assert "GPULAB_CLUSTER_NAME" not in env
    assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)


# --- gpulab grade ------------------------------------------------------------------------

def test_summary_table():
    report = Report("lab02-node-pools", 2, 30.0, [
        Outcome("alice", "graded", 12.25, score=10.0, max_score=10.0),
        Outcome("bob", "skipped", 0.5, score=4.0, max_score=10.0),
        Outcome("mallory", "failed", 3.0, "the grading process died (killed by SIGKILL)\nsee log", None, 10.0),
    ])
    assert summary(report) == (
        "student  score  max  status    time  detail\n"
        "alice       10   10  graded   12.2s\n"
        "bob          4   10  skipped   0.5s\n"
        "mallory      -   10  failed    3.0s  the grading process died (killed by SIGKILL) | see log\n"
        "lab02-node-pools: 1 graded, 1 skipped, 1 failed in 30.0s (2.0 submissions/min with --jobs 2)")


def test_gpulab_grade_is_a_subcommand():
    from gpulab.cli import build_parser

    args = build_parser().parse_args(["grade", "lab02-node-pools", "--jobs", "4"])
    assert (args.lab, args.jobs, args.course_dir, args.force) == ("lab02-node-pools", 4, None, False)


def test_gpulab_grade_explains_a_course_without_the_assignment(tmp_path, capsys):
    from gpulab.cli import main

    (tmp_path / "nbgrader_config.py").write_text("")
    assert main(["grade", "lab02-node-pools", "--course-dir", str(tmp_path)]) == 1
    assert capsys.readouterr().err == (f"error: {tmp_path} has no gradebook.db: run `nbgrader generate_assignment "
                                       "lab02-node-pools --force` there first (--force: the lab's release is already "
                                       "there, and nbgrader would skip it)\n")


def test_gpulab_grade_inside_a_course_directory_grades_that_one(tmp_path, capsys, monkeypatch):
    """As nbgrader does, run from the course directory (grader/) it needs no --course-dir."""
    from gpulab.cli import main

    (tmp_path / "nbgrader_config.py").write_text("")
    monkeypatch.chdir(tmp_path)
    assert main(["grade", "lab02-node-pools"]) == 1
    assert capsys.readouterr().err.startswith(f"error: {tmp_path.resolve()} has no gradebook.db: ")


@pytest.mark.parametrize("jobs", ["0", "-1"])
def test_gpulab_grade_needs_a_job(jobs, capsys):
    from gpulab.cli import main

    assert main(["grade", "lab", "--jobs", jobs]) == 2
    assert capsys.readouterr().err == "error: --jobs must be at least 1\n"


def test_clusters_forked_from_the_fork_server_serve_and_stop(tmp_path, monkeypatch):
    from kubernetes import client

    from gpulab.grading.clusters import start_cluster
    from gpulab.grading.forkserver import ForkServer

    forkserver = ForkServer(tmp_path)
    try:
        cluster = start_cluster("no-such-lab", tmp_path, forkserver)
        server = forkserver.process.pid
        assert Path(f"/proc/{cluster.pid}/cwd").resolve() == cluster.directory.resolve()
        assert open(f"/proc/{cluster.pid}/stat").read().rsplit(")", 1)[1].split()[2] != str(server)  # own session
        assert len(client.CoreV1Api(cluster.api_client()).list_node().items) == 4
        assert stop_clusters_under(tmp_path) == 1           # told apart by its working directory
        deadline = time.monotonic() + 5
        while cluster.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not cluster.alive()
        cluster.remove()
    finally:
        forkserver.stop()
    assert forkserver.process.poll() is not None and not Path(forkserver.address).exists()


def test_without_a_fork_server_the_client_becomes_the_server(tmp_path, monkeypatch):
    from gpulab.cluster import lifecycle
    from gpulab.grading.forkserver import SOCKET_ENV

    monkeypatch.setenv("GPULAB_HOME", str(tmp_path))
    monkeypatch.delenv(SOCKET_ENV, raising=False)
    lifecycle.up("gpulab", server_module="gpulab.grading.forkserver")
    try:
        pid = int((tmp_path / "clusters" / "gpulab" / "server.pid").read_text())
        assert Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[1:3] == [b"-m", b"gpulab.embedded"]
    finally:
        lifecycle.down("gpulab")


class _LabelAndNote:
    """A starting-state step for a made-up lab: a node label and a ConfigMap."""

    def describe(self) -> str:
        return "label gpulab-worker tier=gold, create ConfigMap note"

    def apply(self, api_client) -> None:
        from kubernetes import client

        core = client.CoreV1Api(api_client)
        core.patch_node("gpulab-worker", {"metadata": {"labels": {"tier": "gold"}}})
        core.create_namespaced_config_map("default", {"metadata": {"name": "note"}, "data": {"k": "v"}})


def test_clusters_copied_from_a_lab_template_start_in_its_state_and_share_nothing(tmp_path, monkeypatch):
    from kubernetes import client

    from gpulab.grading import clusters
    from gpulab.grading.forkserver import ForkServer

    monkeypatch.setattr(clusters, "lab_steps", lambda lab: (_LabelAndNote(),))
    forkserver = ForkServer(tmp_path)
    copies = []
    try:
        template = clusters.build_template("made-up", tmp_path, forkserver)
        assert template is not None and not (template / "server.pid").exists()       # stopped
        copies = [clusters.start_cluster("made-up", tmp_path, forkserver, template) for _ in range(2)]
        first, second = copies
        for cluster in copies:
            core = client.CoreV1Api(cluster.api_client())
            assert core.read_node("gpulab-worker").metadata.labels["tier"] == "gold"
            assert core.read_namespaced_config_map("note", "default").data == {"k": "v"}
            ca = (cluster.directory / "pki" / "ca.crt").read_text()
            deadline = time.monotonic() + 10          # the root CA publisher puts the copy's own CA back
            while core.read_namespaced_config_map("kube-root-ca.crt", "default").data["ca.crt"] != ca:
                assert time.monotonic() < deadline, "kube-root-ca.crt still holds the template's CA"
                time.sleep(0.1)
        servers = [c.kubeconfig["clusters"][0]["cluster"]["server"] for c in copies]
        tokens = [c.kubeconfig["users"][0]["user"]["token"] for c in copies]
        assert servers[0] != servers[1] and tokens[0] != tokens[1]
        # one copy's token does not open the other
        stolen = client.Configuration()
        stolen.host, stolen.ssl_ca_cert = servers[1], str(second.directory / "pki" / "ca.crt")
        stolen.api_key = {"authorization": "Bearer " + tokens[0]}
        with pytest.raises(client.ApiException) as refused:
            client.CoreV1Api(client.ApiClient(stolen)).list_node()
        assert refused.value.status == 401
        # what one submission does stays in its own cluster
        client.CoreV1Api(first.api_client()).delete_namespaced_config_map("note", "default")
        assert client.CoreV1Api(second.api_client()).read_namespaced_config_map("note", "default").data == {"k": "v"}
    finally:
        for cluster in copies:
            cluster.remove()
        forkserver.stop()


def test_a_lab_without_starting_steps_needs_no_template(tmp_path):
    from gpulab.grading.clusters import build_template

    assert build_template("no-such-lab", tmp_path) is None
