"""nbgrader's ``Execute`` on a fresh cluster per notebook, with the grader re-checking every test cell.

What differs from ``nbgrader.preprocessors.Execute`` (nbclient's ``NotebookClient``):

* the kernel runs against its own cluster (:mod:`.clusters`), reached through a
  copy of the kubeconfig (``GPULAB_CLUSTER=kubeconfig``, a private
  ``GPULAB_HOME`` and kubectl cache), so the notebook re-executes from the top on
  a cluster only it has touched;
* the kernel, and everything it starts, runs in the submission's sandbox
  (:mod:`.sandbox`, :mod:`.kernel`): it sees its notebook's files, its own
  home and the installed packages (read-only), reaches only its own cluster,
  runs as an identity of its own (:mod:`.identity`) within the limits set here
  (:mod:`.limits`), and every process it started ends with it;
* a cell that goes over one of those limits gets an error output saying
  which, and the kernel is restarted as after a timeout, so the cells after
  it start afresh;
* right after each test cell, before the next cell can change the cluster, the
  grader re-runs the cell's checks itself (:mod:`.recheck`) and keeps its
  verdict in ``resources["gpulab"]["verdicts"]`` for scoring
  (:mod:`.scoring`) and in the cell's ``gpulab`` metadata for feedback; when the
  kernel's cell shows no error but the grader's check failed, the cell gets
  an error output saying so;
* a cell that outlives ``Execute.timeout`` is interrupted as nbclient does; a
  kernel that ignores the interrupt, or dies, is restarted and the earlier
  non-test cells are replayed silently to rebuild its namespace, so the
  remaining cells are still graded (nbclient raises, and nbgrader loses the
  whole submission).
"""
from __future__ import annotations

import importlib.util
import os
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from queue import Empty

from jupyter_core.utils import ensure_async, run_sync
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Bool, Integer, List, TraitError, Unicode, default, validate

from ..labs.variant import SECRET_ENV, SECRET_FILE_ENV
from .bridge import ClusterBridge
from .cells import check_calls, is_graded
from .clusters import BASE_DIR_ENV, SubmissionCluster, base_directory, remove_later, supply_for, variant_of
from .forkserver import SOCKET_ENV
from .identity import DEFAULT_UIDS, lease, parse_uids
from .kernel import SandboxedKernelManager
from .limits import DEFAULT_CPU_SECONDS, DEFAULT_DISK, DEFAULT_MEMORY, DEFAULT_PROCESSES, Limits, parse_size
from .recheck import ANSWER_EXPRESSION, UnreadableAnswer, judge, known_checks, parse_answer
from .sandbox import HOME, Sandbox, SubmissionDirs, launcher
from .sanitize import GRADER_KEY

DISAGREEMENT = "GraderCheckFailed"
LIMIT_EXCEEDED = "LimitExceeded"


class HermeticExecute(Execute):
    check_modules = List(Unicode(), help=(
        "Python files (paths relative to the course directory) that register checks besides gpulab.checks; "
        "loaded into the grader once, never from a submission")).tag(config=True)
    prestart = Bool(False, help="Start the next notebook's cluster while this one runs").tag(config=True)
    recheck_timeout = Integer(30, help="Seconds the grader's own checks of one test cell may take").tag(config=True)
    sandbox_uids = Unicode(DEFAULT_UIDS, help=(
        "FIRST-LAST: the uids learner kernels run as when grading as root, one per submission graded at once, "
        "none an account's (as an ordinary user, each kernel has a user namespace of its own)")).tag(config=True)
    memory_limit = Unicode(DEFAULT_MEMORY, help=(
        "Memory (address space) each process of a learner kernel may use, as a Kubernetes quantity (2Gi)")
    ).tag(config=True)
    disk_limit = Unicode(DEFAULT_DISK, help=(
        "All a learner kernel may write (its folder, home and /tmp, held in memory), as a quantity (512Mi)")
    ).tag(config=True)
    process_limit = Integer(DEFAULT_PROCESSES, help=(
        "Processes and threads a learner kernel may run at once, itself included")).tag(config=True)
    cpu_limit = Integer(DEFAULT_CPU_SECONDS, help=(
        "Seconds of CPU time each process of a learner kernel may use (a restarted kernel starts afresh)")
    ).tag(config=True)

    @validate("memory_limit", "disk_limit")
    def _a_size(self, proposal) -> str:
        try:
            parse_size(proposal.value, f"c.HermeticExecute.{proposal.trait.name}")
        except ValueError as exc:
            raise TraitError(str(exc)) from None
        return proposal.value

    @validate("process_limit", "cpu_limit")
    def _a_count(self, proposal) -> int:
        if proposal.value < 1:
            raise TraitError(f"c.HermeticExecute.{proposal.trait.name} must be at least 1, not {proposal.value}")
        return proposal.value

    @validate("sandbox_uids")
    def _a_range(self, proposal) -> str:
        try:
            parse_uids(proposal.value)
        except ValueError as exc:
            raise TraitError(str(exc)) from None
        return proposal.value

    @property
    def limits(self) -> Limits:
        return Limits(parse_size(self.memory_limit, "memory_limit"), parse_size(self.disk_limit, "disk_limit"),
                      self.process_limit, self.cpu_limit)

    @default("shutdown_kernel")
    def _kill_kernel_when_done(self) -> str:
        return "immediate"      # the outputs are in; a graceful shutdown only costs seconds per submission

    def preprocess(self, nb: NotebookNode, resources: dict, km=None) -> tuple[NotebookNode, dict]:
        NotebookClient.__init__(self, nb, km)
        self.reset_execution_trackers()
        self._check_assign_resources(resources)
        self._known = load_check_files(self.check_modules)
        self._verdicts = self.resources.setdefault("gpulab", {}).setdefault("verdicts", {})
        self._replayable: list[str] = []
        self._timed_out: list[int] = []
        sandboxing = launcher()          # SandboxUnavailable before any cluster starts
        lab, student = self.resources["nbgrader"]["assignment"], self.resources["nbgrader"]["student"]
        variant = variant_of(lab, student)      # VariantError (an unusable secret) before any cluster starts
        cluster = supply_for(lab, self.prestart, variant).take()
        identity = lease(parse_uids(self.sandbox_uids)) if sandboxing.as_root else nullcontext()
        try:
            with identity as uid:
                notebook_dir = Path(self.resources["metadata"]["path"]).resolve()     # nbconvert sets it, always
                self._sandbox = Sandbox(sandboxing, SubmissionDirs(cluster.home), notebook_dir, self.limits, uid,
                                        self._hidden_paths())
                self._sandbox.prepare(cluster.learner_kubeconfig())
                with ClusterBridge(cluster.port) as self._bridge, self.setup_kernel(env=kernel_env()):
                    info = self.wait_for_reply(self.kc.kernel_info())
                    self.nb.metadata["language_info"] = info["content"]["language_info"]
                    for index, cell in enumerate(self.nb.cells):
                        self._run(cell, index, cluster)
            self.set_widgets_metadata()
        finally:
            remove_later(cluster)
        self.nb.metadata[GRADER_KEY] = {"timed_out_cells": self._timed_out,    # for gpulab grade's table
                                        **({"variant": variant.token} if variant else {})}
        return self.nb, self.resources

    def create_kernel_manager(self) -> SandboxedKernelManager:
        """nbclient's kernel manager for the notebook's kernel, launched in the submission's sandbox."""
        if not self.kernel_name:
            self.kernel_name = self.nb.metadata.get("kernelspec", {}).get("name") or ""
        self.km = SandboxedKernelManager(self._sandbox, self._bridge, kernel_name=self.kernel_name,
                                         config=self.config)
        return self.km

    def _hidden_paths(self) -> tuple[Path, ...]:
        """What the sandbox must never show, wherever it lies: the course directory (gradebook, submissions),
        the instructor's source notebooks, the grading clusters and the grader's home."""
        from nbgrader.coursedir import CourseDirectory

        coursedir = CourseDirectory(config=self.config)
        paths = [Path(coursedir.root), Path(coursedir.root) / coursedir.source_directory, base_directory(),
                 Path.home()]
        db_url = self.resources["nbgrader"].get("db_url") or ""
        if db_url.startswith("sqlite:///"):
            gradebook = Path(db_url[len("sqlite:///"):].split("?")[0])
            paths += [gradebook, gradebook.parent]
        return tuple(paths)

    def _run(self, cell: NotebookNode, index: int, cluster: SubmissionCluster) -> None:
        if cell.cell_type != "code":
            return
        try:
            self.execute_cell(cell, index, store_history=True)
        except (DeadKernelError, CellTimeoutError) as exc:
            reason = ("the kernel died while running this cell" if isinstance(exc, DeadKernelError) else
                      "the kernel did not stop when interrupted after the cell's timeout")
            cell.outputs.append(_error(type(exc).__name__, f"{reason}; it was restarted and the earlier cells "
                                                          "re-run before grading went on"))
            self.log.warning("Cell %d: %s; restarting the kernel", index, reason)
            if isinstance(exc, CellTimeoutError):
                self._timed_out.append(index)
            self._restart()
        else:
            timed_out = any(o.output_type == "error" and o.get("ename") == self.error_on_timeout["ename"]
                            for o in cell.outputs)
            over = self._sandbox.limits.exceeded(cell.outputs)
            if over:
                cell.outputs.append(_error(LIMIT_EXCEEDED, self._sandbox.limits.explain(over)))
                self.log.warning("Cell %d went over the submission's %s limit; restarting the kernel", index, over)
                self._restart()
            elif timed_out:
                self._timed_out.append(index)
            elif not is_graded(cell):
                self._replayable.append(cell.source)
        if is_graded(cell):
            self._recheck(cell, cluster)

    # --- the grader's own check of a test cell ------------------------------------------
    def _recheck(self, cell: NotebookNode, cluster: SubmissionCluster) -> None:
        calls = check_calls(cell.source, self._known)
        if not calls:
            self.log.warning("Test cell %s calls no known check: its grade rests on the kernel's output alone",
                             cell.metadata.nbgrader.get("grade_id"))
            return
        answers = [None if call.answer is None else self._answer(call.answer) for call in calls]
        verdicts = judge(calls, answers, cluster, self.recheck_timeout)
        records = [v.as_dict() for v in verdicts]
        self._verdicts[cell.metadata.nbgrader["grade_id"]] = records
        cell.metadata[GRADER_KEY] = {"checks": records}
        errored = any(o.output_type == "error" for o in cell.outputs)
        failed = next((v for v in verdicts if not v.passed), None)
        if failed is not None and not errored:
            hint = f"\nHint: {failed.hint}" if failed.hint else ""
            cell.outputs.append(_error(DISAGREEMENT, f"the grader re-ran {failed.check_id} on this submission's "
                                                     f"cluster and it did not pass: {failed.reason}{hint}"))

    def _answer(self, expression: str):
        msg_id = self.kc.execute("", silent=True, store_history=False,
                                 user_expressions={"answer": ANSWER_EXPRESSION.format(expression=expression)})
        reply = self._reply(msg_id, self.recheck_timeout)
        if reply is None:
            return UnreadableAnswer(f"the kernel did not hand the answer over within {self.recheck_timeout}s")
        return parse_answer(reply["content"].get("user_expressions", {}).get("answer", {}))

    # --- kernel plumbing ---------------------------------------------------------------
    async def _async_reply(self, msg_id: str, timeout: float) -> dict | None:
        """The shell reply to ``msg_id`` within ``timeout`` seconds (other replies, e.g. late ones, dropped)."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                msg = await ensure_async(self.kc.shell_channel.get_msg(timeout=left))
            except Empty:
                return None
            if msg["parent_header"].get("msg_id") == msg_id:
                return msg
        return None

    _reply = run_sync(_async_reply)

    async def _async_restart(self) -> None:
        await ensure_async(self.km.restart_kernel(now=True))
        await ensure_async(self.kc.wait_for_ready(timeout=self.startup_timeout))
        for source in self._replayable:
            msg_id = self.kc.execute(source, silent=True, store_history=False, stop_on_error=False)
            if await self._async_reply(msg_id, self._get_timeout(None) or self.startup_timeout) is None:
                self.log.warning("Replaying an earlier cell timed out; grading goes on without the rest")
                await ensure_async(self.km.interrupt_kernel())
                break

    _restart = run_sync(_async_restart)


# What the kernel inherits of the grader's environment: locale, time zone, Python's own settings and the course's
# GPULAB_* options; nothing that names the grader's files (HOME, TMPDIR, XDG_*, the grading clusters, Jupyter's).
INHERITED_PREFIXES = ("LANG", "LC_", "TZ", "PYTHON", "GPULAB_")
GRADER_ONLY = frozenset({"GPULAB_CLUSTER_NAME", "GPULAB_HOME", SOCKET_ENV, BASE_DIR_ENV,
                         SECRET_ENV, SECRET_FILE_ENV})     # the instructor's secret: it would tell every variant


def kernel_env() -> dict[str, str]:
    """The learner kernel's environment: its cluster through a kubeconfig, a home of its own in its sandbox
    (:data:`.sandbox.HOME`), nothing of the grader's."""
    env = {k: v for k, v in os.environ.items() if k.startswith(INHERITED_PREFIXES) and k not in GRADER_ONLY}
    env.update(GPULAB_CLUSTER="kubeconfig", KUBECONFIG=str(HOME / "kubeconfig"), HOME=str(HOME),
               GPULAB_HOME=str(HOME), KUBECACHEDIR=str(HOME / "kubecache"), NBGRADER_EXECUTION="autograde",
               TMPDIR="/tmp", PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    return env


_loaded: set[str] = set()


def load_check_files(paths: list[str]) -> frozenset[str]:
    """Load each check file once per process (by its absolute path); every check id known afterwards."""
    for path in paths:
        location = str(Path(path).resolve())
        if location in _loaded:
            continue
        spec = importlib.util.spec_from_file_location(Path(location).stem, location)
        if spec is None or spec.loader is None:
            raise FileNotFoundError(f"check module {path} not found (HermeticExecute.check_modules)")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        _loaded.add(location)
    return known_checks()


def _error(ename: str, evalue: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])
