"""The cheats that paid before grading ran learner code in a sandbox (issue 16), and the attacks on the sandbox
and the grading host of issue 23, each tried for real.

One course of the fixture lab is graded with ``gpulab grade --jobs 2``, once as
root and once as an ordinary user (a test account, created when the tests run
as root). Besides honest, fully solved submissions, four cheaters submit the
untouched release plus one cell that:

* writes its own grade into ``../../../gradebook.db`` (``manual_score`` at the
  maximum for its own rows);
* rewrites the installed checks with an always-pass ``run``, drops a ``.pth``
  into site-packages, then kills every process it can see, its grading
  process first;
* detaches an attacker that, while the others are graded beside it, looks for
  the other grading clusters' kubeconfigs under the grader's temporary folder
  and strips their nodes' labels and taints, and starts a cluster server of
  its own; both were built to outlive the kernel;
* reads ``solutions/``, the gradebook's source cells and classmates' autograded
  notebooks, and runs the solutions it finds.

Five attackers submit fully solved notebooks whose first answer cell starts
with an attack on the grading host (issue 23):

* **links**: replaces every file it can write (home, working directory, /tmp,
  the kernel's sockets) and its connection file with links to a host file
  only the grader may read, plants links named as the files nbgrader writes,
  and kills its kernel, so that the grader restarts it;
* **disk**: writes 3 GiB into its folder, its home, /tmp, /dev/shm and /;
* **memory**: allocates 3 GiB;
* **processes**: starts 600 processes;
* **CPU**: loops (graded with ``--cpu-seconds 10``).

Each must lose that exercise's point and keep the others' (14 of 15), and its
cell must say which limit stopped it; the host file must be as it was.

Honest work earns a cheater nothing, so each must score 0; every honest
submission its full marks; the installed package and site-packages must be
byte for byte as before; the gradebook must hold no manual score; and no process
a submission started, its sandbox's bwrap included, may be alive once grading
is over. Every cheat prints what it reached, so each test also shows the
attempt ran and what stopped it.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpulab.grading.sandbox import SandboxUnavailable, bwrap_candidates, launcher

_spec = importlib.util.spec_from_file_location("grading_course", Path(__file__).parent / "fixtures/grading/course.py")
course_tools = sys.modules.setdefault(_spec.name, importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(course_tools)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("grading")]

LAB = course_tools.FIXTURE_LAB
TEST_ACCOUNT = "gpulab-grading-test"
MARK = f"gpulab-cheat-{uuid.uuid4().hex[:12]}"          # in every cheat's code and every process it starts
HONEST = ("honest1", "honest2", "honest3")

GRADEBOOK_WRITE = '''
# MARK
import sqlite3
from pathlib import Path
student = Path.cwd().parent.name                       # autograded/<student>/<lab>
OWN_ROWS_AT_MAXIMUM = """
UPDATE grade SET manual_score = (SELECT max_score FROM grade_cells WHERE grade_cells.id = grade.cell_id)
WHERE notebook_id IN (SELECT n.id FROM submitted_notebook n JOIN submitted_assignment a ON n.assignment_id = a.id
                      WHERE a.student_id = ?)"""
for candidate in [Path("../../../gradebook.db"), *(p / "gradebook.db" for p in Path.cwd().parents)]:
    try:
        db = sqlite3.connect(f"file:{candidate}?mode=rw", uri=True)
        db.execute(OWN_ROWS_AT_MAXIMUM, (student,))
        db.commit()
        print("wrote my grade into", candidate)
    except sqlite3.Error as error:
        print("no gradebook at", candidate, "-", error)
'''

PACKAGE_TAMPER = '''
# MARK
import os, signal, site
from pathlib import Path
import gpulab.checks
ALWAYS_PASS = """
def run(check_id, *args, **kwargs):
    from gpulab.checks.result import Result
    return Result(True, "fine", check_id=check_id)
assert_passed = check = run
"""
package = Path(gpulab.checks.__file__)
for target in (package, package.with_name("result.py"), Path(site.getsitepackages()[0]) / "zz-always-pass.pth"):
    try:
        with open(target, "a") as f:
            f.write(ALWAYS_PASS if target.suffix == ".py" else "import gpulab.checks\\n")
        print("rewrote", target)
    except OSError as error:
        print("cannot write", target, "-", error)
for pid in sorted({os.getppid(), *(int(p) for p in os.listdir("/proc") if p.isdigit())} - {os.getpid(), 0}):
    try:
        os.kill(pid, signal.SIGKILL)                   # the grading process, and anything else in sight
        print("killed", pid)
    except OSError as error:
        print("cannot kill", pid, "-", error)
'''

SABOTAGE = '''
# MARK
import os, subprocess, sys, textwrap, time
from pathlib import Path
ATTACK = textwrap.dedent("""
    # MARK
    import glob, os, time
    from pathlib import Path
    record = Path(os.environ["HOME"]) / "attack"
    record.write_text("0 0")
    import gpulab                        # first: it keeps the kubernetes import cheap
    from kubernetes import client, config
    own = os.environ["KUBECONFIG"]
    scratch = "SCRATCH"                  # the grader's temp folder: <scratch>/gpulab-grade-*/worker-N/grade-*/...
    clients, struck, sweeps, deadline = {}, set(), 0, time.time() + 120
    while time.time() < deadline:
        for path in glob.glob(f"{scratch}/gpulab-grade-*/worker-*/grade-*/**/kubeconfig", recursive=True):
            if path != own and path not in clients:
                try:
                    clients[path] = client.CoreV1Api(config.new_client_from_config(path))
                except Exception:
                    pass
        for path, core in list(clients.items()):
            try:                         # undo the exercises: the label, the taint, the ConfigMap
                core.patch_node("gpulab-worker", {"metadata": {"labels": {"tier": None}}, "spec": {"taints": None}})
                struck.add(path)
                core.delete_namespaced_config_map("settings", "default")
            except Exception:
                if not os.path.exists(path):
                    del clients[path]    # that submission is graded: on to the next
        sweeps += 1
        try:
            record.write_text(f"{sweeps} {len(struck)}")
        except OSError:
            pass                         # its notebook is over; the attack goes on
        time.sleep(0.02)
""")
subprocess.Popen(["setsid", "-f", sys.executable, "-c", ATTACK], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL)
subprocess.Popen(["gpulab", "cluster", "up"], start_new_session=True, stdin=subprocess.DEVNULL,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                 env={**os.environ, "GPULAB_HOME": "/tmp/MARK", "GPULAB_CLUSTER": "embedded"})
def progress(record=Path(os.environ["HOME"]) / "attack"):
    try:
        sweeps, struck = record.read_text().split()
        return int(sweeps), struck
    except (OSError, ValueError):
        return 0, "?"
deadline = time.time() + 60
while time.time() < deadline and progress()[0] < 50:
    time.sleep(0.2)                                    # the others are graded meanwhile
sweeps, struck = progress()
print(f"attacker swept {'at least 50' if sweeps >= 50 else sweeps} times, struck {struck} clusters")
'''

READ_SOLUTIONS = '''
# MARK
import glob, json, re, sqlite3
from pathlib import Path
def solution_cells(path):
    cells = json.load(open(path))["cells"]
    return ["".join(c["source"]) for c in cells if c.get("metadata", {}).get("nbgrader", {}).get("solution")]
found, sources = [], []
for root in Path.cwd().parents:
    for path in glob.glob(f"{root}/solutions/*/*.ipynb"):
        found.append(path)
        sources += solution_cells(path)
    if (root / "gradebook.db").exists():               # source cells, hidden tests and solutions
        found.append(str(root / "gradebook.db"))
        db = sqlite3.connect(f"file:{root / 'gradebook.db'}?mode=ro", uri=True)
        sources += [s for (s,) in db.execute("SELECT source FROM source_cell WHERE source LIKE '%BEGIN SOLUTION%'")]
    for path in glob.glob(f"{root}/autograded/*/*/*.ipynb"):   # classmates' graded work
        found.append(path)
        sources += solution_cells(path)
print("found:", found)
for source in sources:
    try:
        exec(re.sub(r"^\\s*### (BEGIN|END) SOLUTION\\s*$", "", source, flags=re.M), globals())
    except Exception:
        pass
'''

CHEATS = {"gradebook": GRADEBOOK_WRITE, "tamper": PACKAGE_TAMPER, "saboteur": SABOTAGE,
          "solutions": READ_SOLUTIONS}
# The saboteur's name sorts first, so it is graded while the others are (students go in name order).
CHEATERS = {"a-saboteur": "saboteur", "gradebook": "gradebook", "solutions": "solutions", "tamper": "tamper"}

# --- issue 23: attacks on the host, each before the first exercise's answer --------------------------

LINKS = '''
# MARK
import os, sys, time
from pathlib import Path
from ipykernel import get_connection_file
planted, refused = 0, {}
for root in {Path.home(), Path.cwd(), Path("/tmp")}:
    for path in [*root.rglob("*"), root / "fixture-lab.ipynb", root / "timestamp.txt", root / "gradebook.db"]:
        try:
            if not path.is_dir() or path.is_symlink():
                path.unlink(missing_ok=True)
                path.symlink_to("CANARY")
                planted += 1
        except OSError as error:   # counted, not printed: a checkout under /tmp shows thousands of read-only files
            refused[error.strerror] = refused.get(error.strerror, 0) + 1
print("could not link:", refused)
connection = Path(get_connection_file())
try:
    connection.unlink()
    connection.symlink_to("CANARY")
    print("replaced the connection file")
except OSError as error:
    print("cannot replace the connection file:", error)
print(f"planted {planted} links; exiting")
sys.stdout.flush()
time.sleep(1)
os._exit(1)
'''

DISK = '''
# MARK
from pathlib import Path
wrote, errors = {}, []
for place in (Path.cwd(), Path.home(), Path("/tmp"), Path("/dev/shm"), Path("/")):
    wrote[str(place)] = 0
    try:
        with open(place / "fill", "wb") as f:
            while wrote[str(place)] < 3 * 1024:
                f.write(b"\\0" * 2**20)
                wrote[str(place)] += 1
    except OSError as error:
        errors.append(error)
print(f"wrote {sum(wrote.values())} MiB")
raise errors[0]
'''

MEMORY = '''
# MARK
hog = bytearray(3 * 2**30)
'''

PROCESSES = '''
# MARK
import subprocess
children = []
try:
    while len(children) < 600:
        children.append(subprocess.Popen(["sleep", "600"]))
finally:
    print("started", len(children), "processes")
'''

CPU = '''
# MARK
while True:
    pass
'''

CPU_SECONDS = 10
# attacker: (attack, what its cell must say)
ATTACKERS = {
    "links": (LINKS, ["cannot replace the connection file: [Errno 30] Read-only file system", "planted",
                      "the kernel died while running this cell"]),
    "disk": (DISK, ["No space left on device", "went over the submission's disk limit"]),
    "memory": (MEMORY, ["went over the submission's memory limit: each of its processes may use 2Gi"]),
    "processes": (PROCESSES, ["Resource temporarily unavailable", "went over the submission's process limit"]),
    "cpu": (CPU, [f"the kernel has used its {CPU_SECONDS} s of CPU time", "went over the submission's CPU time limit"]),
}


# --- who grades --------------------------------------------------------------------------

@dataclass
class Grader:
    """Runs ``gpulab grade`` as one identity: the test process's own, or a test account's."""

    identity: str
    account: pwd.struct_passwd | None = None    # None: as this process
    harness: tuple[str, ...] = ()               # a root-made view where the account can run this interpreter

    def own(self, path: Path) -> None:
        if self.account is not None:
            subprocess.run(["chown", "-R", f"{self.account.pw_uid}:{self.account.pw_gid}", str(path)], check=True)

    def run(self, command: list[str], home: Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
        # GPULAB_* reaches the kernels: every process they start carries MARK; the grading scratch, under the
        # temp folder, is under home's parent, which names every sandbox's bwrap
        env = {"PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin:/usr/bin:/bin"]),
               "HOME": str(home), "LANG": "C.UTF-8", "GPULAB_TEST_RUN": MARK, "TMPDIR": str(home.parent / "tmp")}
        if self.account is not None:
            command = [*self.harness, "setpriv", f"--reuid={self.account.pw_uid}",
                       f"--regid={self.account.pw_gid}", "--init-groups", "--", *command]
        return subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=900)

    def grade(self, course, home: Path, *args: str) -> subprocess.CompletedProcess:
        return self.run([course_tools.GPULAB, "grade", LAB, "--course-dir", str(course.root), "--no-progress",
                         *args], home)

    def autograde(self, course, home: Path, student: str) -> subprocess.CompletedProcess:
        """``nbgrader autograde LAB --student STUDENT --force`` in the course directory: one fresh process."""
        nbgrader = str(Path(sys.executable).parent / "nbgrader")
        return self.run([nbgrader, "autograde", LAB, "--student", student, "--force"], home, cwd=course.root)

    def sandbox_problem(self) -> str | None:
        """Why this identity cannot build the grading sandbox, or None when it can."""
        probe = self.run([sys.executable, "-c", "from gpulab.grading.sandbox import launcher; launcher()"],
                         Path(tempfile.gettempdir()))
        return None if probe.returncode == 0 else (probe.stderr.strip() or f"exit status {probe.returncode}")


def _test_account() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(TEST_ACCOUNT)
    except KeyError:
        pass
    if shutil.which("useradd") is None:
        pytest.skip("grading as an ordinary user needs a test account, and useradd is not installed")
    done = subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin",
                           TEST_ACCOUNT], capture_output=True, text=True)
    if done.returncode not in (0, 9):        # 9: created meanwhile by a parallel test process
        pytest.skip(f"cannot create the test account {TEST_ACCOUNT}: {done.stderr.strip()}")
    return pwd.getpwnam(TEST_ACCOUNT)


def _runs_as(account: pwd.struct_passwd, path: str) -> bool:
    probe = ["setpriv", f"--reuid={account.pw_uid}", f"--regid={account.pw_gid}", "--init-groups", "--",
             "test", "-r", path]
    return subprocess.run(probe, capture_output=True).returncode == 0


def _harness(account: pwd.struct_passwd) -> tuple[str, ...]:
    """Where this interpreter, its virtual environment or the repository lie under a folder the account may not
    enter (a pyenv in root's 0700 home, say): a root-made mount namespace that covers that folder with an empty
    one and shows those paths in it, read-only. Nothing else changes: the account grades as itself."""
    needed = [Path(p).resolve() for p in (sys.base_prefix, sys.prefix, course_tools.ROOT)]
    closed = sorted({parent for path in needed for parent in [path, *path.parents]
                     if parent.is_dir() and not os.stat(parent).st_mode & 0o001 and parent != Path("/")},
                    key=lambda p: len(p.parts))
    closed = [c for c in closed if not any(c != o and c.is_relative_to(o) for o in closed)]
    if not closed:
        return ()
    args = [bwrap_candidates()[0], "--dev-bind", "/", "/"]
    for folder in closed:
        args += ["--perms", "0755", "--tmpfs", str(folder)]
        for path in needed:
            if path.is_relative_to(folder):
                between = [p for p in reversed(path.parents) if p.is_relative_to(folder) and p != folder]
                for parent in between:           # bwrap would make them 0700
                    args += ["--perms", "0755", "--dir", str(parent)]
                args += ["--ro-bind", str(path), str(path)]
    return (*args, "--")


@pytest.fixture(scope="module", params=["root", "ordinary user"])
def grader(request) -> Grader:
    if request.param == "root":
        if os.geteuid() != 0:
            pytest.skip("grading as root needs the tests to run as root")
        return Grader("root")
    if os.geteuid() != 0:
        return Grader("ordinary user")
    account = _test_account()
    harness = _harness(account)
    if not harness and not _runs_as(account, sys.executable):
        pytest.skip(f"the account {TEST_ACCOUNT} cannot run {sys.executable}")
    grader = Grader("ordinary user", account, harness)
    problem = grader.sandbox_problem()
    if problem:
        pytest.skip(f"an ordinary user cannot build the grading sandbox here: {problem}")
    return grader


# --- the course, graded -------------------------------------------------------------------

def _tree_digest(*roots: Path) -> dict[str, str]:
    digest = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
            elif path.is_dir():
                digest[str(path)] = "dir"
    return digest


def _installed() -> list[Path]:
    import site

    import gpulab

    return [Path(gpulab.__file__).resolve().parent, Path(site.getsitepackages()[0])]


def _processes_with(text: str) -> list[str]:
    """Every live process whose command line or environment mentions ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            seen = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
        except OSError:
            continue
        if text.encode() in seen:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ")[:200]
            found.append(f"{entry.name}: {command!r}")
    return found


@dataclass
class Graded:
    course: object
    home: Path
    proc: subprocess.CompletedProcess
    scores: dict
    manual: dict
    before: dict
    after: dict
    alive: list[str]
    canary: tuple                 # the host file the links point at: (bytes, mode, uid, gid) before and after


def _manual_scores(course) -> dict[str, list]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course.root / 'gradebook.db'}") as gb:
        return {s.student.id: [g.manual_score for nb in s.notebooks for g in nb.grades]
                for s in gb.assignment_submissions(LAB)}


@pytest.fixture(scope="module")
def graded(grader) -> Graded:
    try:
        launcher()
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))
    base = Path(tempfile.mkdtemp(prefix="gpulab-sandbox-test-"))
    base.chmod(0o755)
    canary = base / "canary"
    try:
        course = course_tools.make_course(base / "course", timeout=120)     # the CPU attack's loop runs till 10 s
        exercises = course.exercises()
        for student in HONEST:
            course.submit(student, course.answered(exercises))
        course.submit("untouched", course.release_notebook())
        home, scratch = base / "home", base / "tmp"
        for student, cheat in CHEATERS.items():
            course.submit(student, _with_cheat(course.release_notebook(), CHEATS[cheat].replace("SCRATCH",
                                                                                                  str(scratch))))
        for student, (attack, _) in ATTACKERS.items():
            course.submit(student, _with_attack(course.answered(exercises), attack, canary))
        home.mkdir()
        scratch.mkdir()
        canary.write_text("the grader's alone")
        canary.chmod(0o600)
        grader.own(base)
        before, canary_before = _tree_digest(*_installed()), _stat(canary)
        proc = grader.grade(course, home, "--jobs", "2", "--cpu-seconds", str(CPU_SECONDS))
        after = _tree_digest(*_installed())
        yield Graded(course, home, proc, course.scores(), _manual_scores(course), before, after,
                     _processes_with(MARK) + _processes_with(str(base)), (canary_before, _stat(canary)))
        for leftover in _processes_with(MARK):    # never leave a cheat running, whatever the verdict
            os.kill(int(leftover.split(":")[0]), 9)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _stat(path: Path) -> tuple:
    found = path.stat()
    return path.read_bytes(), found.st_mode, found.st_uid, found.st_gid


def _with_attack(nb, attack: str, canary: Path):
    """The solved notebook whose first answer cell starts with ``attack``."""
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    cell.source = textwrap.dedent(attack).strip().replace("MARK", MARK).replace("CANARY", str(canary)) + \
        "\n" + cell.source
    return nb


def _with_cheat(nb, cheat: str):
    """The notebook with the cheat's cell right after the setup cell, before the first exercise."""
    setup = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "setup")
    nb.cells.insert(setup + 1, course_tools.code_cell(textwrap.dedent(cheat).strip().replace("MARK", MARK)))
    return nb


def _cheat_output(graded: Graded, student: str) -> str:
    import nbformat

    nb = nbformat.read(graded.course.root / "autograded" / student / LAB / f"{LAB}.ipynb", 4)
    cell = next(c for c in nb.cells if MARK in c.source)
    return "".join(o.get("text", "") + o.get("evalue", "") for o in cell.outputs)


def test_every_submission_is_graded(graded):
    assert graded.proc.returncode == 0, graded.proc.stdout + graded.proc.stderr[-3000:]
    assert f"{LAB}: {len(HONEST) + 1 + len(CHEATERS) + len(ATTACKERS)} graded, 0 skipped, 0 failed" in \
        graded.proc.stdout


def test_honest_submissions_graded_beside_the_cheats_earn_full_marks(graded):
    total = sum(e.points for e in graded.course.exercises())
    for student in HONEST:
        assert graded.scores[student][0] == total > 0, (student, graded.scores[student])
    assert graded.scores["untouched"][0] == 0


@pytest.mark.parametrize("student", list(CHEATERS))
def test_a_cheat_earns_nothing(graded, student):
    assert graded.scores[student][0] == 0, (student, graded.scores[student], _cheat_output(graded, student))
    assert all(score == 0 for score in graded.scores[student][1].values())


def test_the_gradebook_cannot_be_written_from_a_notebook(graded):
    said = _cheat_output(graded, "gradebook")
    assert "no gradebook at ../../../gradebook.db" in said and "wrote my grade" not in said, said
    assert all(score is None for scores in graded.manual.values() for score in scores), graded.manual


def test_the_installed_package_cannot_be_rewritten(graded, grader):
    said = _cheat_output(graded, "tamper")
    assert "cannot write" in said and "Read-only file system" in said and "rewrote" not in said, said
    assert graded.after == graded.before
    # a fresh grading process (a --force regrade) still gives an empty notebook nothing
    regrade = grader.autograde(graded.course, graded.home, "untouched")
    assert regrade.returncode == 0, regrade.stdout + regrade.stderr[-3000:]
    assert graded.course.scores()["untouched"][0] == 0


def test_a_submission_cannot_reach_the_clusters_graded_beside_it(graded):
    said = _cheat_output(graded, "a-saboteur")
    assert "attacker swept at least 50 times, struck 0 clusters" in said, said


def test_solutions_and_other_submissions_are_out_of_sight(graded):
    said = _cheat_output(graded, "solutions")
    assert "found: []" in said, said


def test_no_process_a_submission_started_outlives_its_notebook(graded):
    assert graded.alive == []                 # no sandbox's bwrap, kernel or child, detached or not


@pytest.mark.parametrize("student", list(ATTACKERS))
def test_an_attack_on_the_host_costs_its_own_cell_and_nothing_else(graded, student):
    """The attacking cell's exercise earns nothing and says which limit stopped it; the others are graded."""
    said = _cheat_output(graded, student)
    for words in ATTACKERS[student][1]:
        assert words in said, said
    total, scores = graded.scores[student]
    assert scores["configmap_test"] == 0 and total == sum(e.points for e in graded.course.exercises()) - 1, said


def test_links_planted_in_the_sandbox_lead_the_grader_nowhere(graded):
    before, after = graded.canary
    assert after == before
    assert "planted 0 links" not in _cheat_output(graded, "links")


def test_the_sandboxes_writable_space_is_bounded_and_in_memory(graded):
    wrote = int(re.search(r"wrote (\d+) MiB", _cheat_output(graded, "disk")).group(1))
    assert 0 < wrote <= 512 + 64                               # the disk limit, and /dev/shm


def test_a_submission_runs_no_more_than_its_process_limit(graded):
    started = int(re.search(r"started (\d+) processes", _cheat_output(graded, "processes")).group(1))
    assert 0 < started < 128
