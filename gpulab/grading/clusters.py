"""One fresh embedded cluster per graded notebook, started for it and removed afterwards.

Each cluster gets a private ``GPULAB_HOME`` and the default name ``gpulab``, so
its nodes carry the names the learner saw (``gpulab-worker2``) and a notebook
that names them grades the same. The lab's starting state (``gpulab lab reset``'s
steps, :mod:`gpulab.labs.states`) is built by the grader before the notebook
runs, through the grader's own connection.

The grader keeps that connection (the kubeconfig as written at start, CA and
token) in memory, and the server's process identity (pid and start time): the
learner's kernel only gets a copy of the kubeconfig, so rewriting it, pointing
it at a fake API server, or restarting the cluster from a doctored state
directory changes nothing the grader reads.

A lab whose starting state takes steps (the GPU Operator installed, nodes
labelled: seconds of the cluster's work) is built once per grading run as a
stopped *template* cluster (by ``gpulab grade``'s driver, while its grading
processes start, and handed to them in ``$GPULAB_GRADING_TEMPLATE``; a grading
process without one builds its own); each submission's cluster is a copy of its state,
given a PKI (CA, serving certificate, bearer token) and a port of its own, and
resumed, as ``gpulab cluster up`` resumes a stopped cluster. So clusters share
nothing: no two have a key, token or port in common, and a submission's kernel,
which its sandbox (:mod:`.sandbox`) confines to its own cluster's address, sees
no other cluster's files.
:class:`ClusterSupply` also hides the start behind the previous notebook: with
``prestart`` it starts the next cluster in a background thread as soon as one
is taken. Clusters are removed by stopping the recorded server process and
deleting their home rather than by ``lifecycle.reset``, which would also drop
the context ``gpulab-gpulab`` from the instructor's ``~/.kube/config``.

Under an instructor's secret, a lab whose cluster varies (the final
assessment, :mod:`gpulab.labs.variant`) is graded on each learner's own
variant: a new cluster of that topology per submission, no template shared.
"""
from __future__ import annotations

import atexit
import os
import shutil
import signal
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import yaml

from .. import embedded
from ..cluster import lifecycle
from .forkserver import SOCKET_ENV, ForkServer

if TYPE_CHECKING:
    from ..labs.variant import Variant

CLUSTER_NAME = lifecycle.DEFAULT_NAME
BASE_DIR_ENV = "GPULAB_GRADING_DIR"     # where submission clusters live (default: the system temp directory)
TEMPLATE_ENV = "GPULAB_GRADING_TEMPLATE"  # a stopped cluster in the lab's starting state, shared by a grading run
_HOME_LOCK = threading.Lock()           # lifecycle reads GPULAB_HOME from the environment


def _start_ticks(pid: int) -> str | None:
    """The start time in clock ticks (/proc/PID/stat field 22) of a live process (pid plus this name one
    process); None once it has exited. An exited child of ours is reaped, as ``lifecycle`` does."""
    fields = lifecycle.proc_stat(pid)
    return None if fields is None or fields[0] == "Z" else fields[19]


@dataclass
class SubmissionCluster:
    home: Path
    kubeconfig: dict                       # as written at start, kept by the grader
    pid: int
    started: str | None
    _client: object = field(default=None, repr=False)

    @property
    def directory(self) -> Path:
        return self.home / "clusters" / CLUSTER_NAME

    @property
    def port(self) -> int:
        """The port the cluster's server listens on, on the host's loopback."""
        return urlsplit(self.kubeconfig["clusters"][0]["cluster"]["server"]).port

    def api_client(self):
        """The grader's own client: the credentials read when the cluster started, not the file the kernel sees."""
        if self._client is None:
            from ..kubeclient import kube_config

            self._client = kube_config.new_client_from_config_dict(self.kubeconfig)
        return self._client

    def learner_kubeconfig(self) -> str:
        """The kubeconfig the learner's kernel gets a copy of (which it may rewrite at will)."""
        return yaml.safe_dump(self.kubeconfig, sort_keys=False)

    def alive(self) -> bool:
        """True while the server process the grader started still runs (not a replacement on the same port)."""
        return self.started is not None and _start_ticks(self.pid) == self.started

    def remove(self) -> None:
        if self.alive():
            os.kill(self.pid, signal.SIGTERM)
            deadline = time.monotonic() + 10
            while self.alive() and time.monotonic() < deadline:
                time.sleep(0.02)
            if self.alive():
                os.kill(self.pid, signal.SIGKILL)
        shutil.rmtree(self.home, ignore_errors=True)


_removals: list[threading.Thread] = []


def remove_later(cluster: SubmissionCluster) -> None:
    """Remove ``cluster`` in the background: its server's graceful stop (a second or so) need not hold up the
    next submission. :func:`close_supplies` waits for every removal before the grading process exits."""
    thread = threading.Thread(target=cluster.remove, name="gpulab-cluster-remove")
    thread.start()
    _removals.append(thread)


def lab_steps(lab: str) -> tuple:
    """The steps that build ``lab``'s starting state; none for a lab the course does not define."""
    from ..labs import resolve

    try:
        return resolve(lab).steps
    except KeyError:
        return ()


def variant_of(lab: str, student: str, environ=os.environ) -> "Variant | None":
    """The variant of ``lab``'s cluster that ``student`` is graded on (:mod:`gpulab.labs.variant`): drawn from
    the instructor's secret for a lab whose cluster varies; None for the course's own cluster (no secret, or a
    lab that does not vary). VariantError: the secret is set but unusable."""
    from ..labs import resolve, variant

    try:
        varies = resolve(lab).varies
    except KeyError:
        return None
    chosen = variant.grading_variant(student, environ) if varies else variant.DEFAULT
    return None if chosen == variant.DEFAULT else chosen


def shared_cluster(lab: str, environ=os.environ) -> bool:
    """Whether every submission of ``lab`` is graded on the course's own cluster, so that one template serves
    them all: not so for a lab whose cluster varies, under an instructor's secret. VariantError: an unusable secret."""
    from ..labs import resolve, variant

    try:
        varies = resolve(lab).varies
    except KeyError:
        return True
    return not varies or variant.instructor_secret(environ) is None


def base_directory(base_dir: Path | None = None) -> Path:
    base = base_dir or Path(os.environ.get(BASE_DIR_ENV) or tempfile.gettempdir())
    base.mkdir(parents=True, exist_ok=True)
    return base


def start_cluster(lab: str, base_dir: Path | None = None, forkserver: ForkServer | None = None,
                  template: Path | None = None, topology: Path | None = None) -> SubmissionCluster:
    """A fresh embedded cluster in ``lab``'s starting state, in a new private home under ``base_dir``: a copy of
    ``template`` (see :func:`build_template`) resumed, or a new cluster (of ``topology``: the course's own when
    None) with the lab's steps applied."""
    home = Path(tempfile.mkdtemp(prefix="grade-", dir=base_directory(base_dir)))
    try:
        path = _up(home, forkserver.ensure() if forkserver else None, template, topology)
        directory = home / "clusters" / CLUSTER_NAME
        pid = int((directory / "server.pid").read_text())
        cluster = SubmissionCluster(home, yaml.safe_load(path.read_text()), pid, _start_ticks(pid))
        if template is None:
            for step in lab_steps(lab):
                step.apply(cluster.api_client())
        else:
            _settle(cluster)
        return cluster
    except BaseException:
        stop_clusters_under(home)
        shutil.rmtree(home, ignore_errors=True)
        raise


def build_template(lab: str, base_dir: Path | None = None, forkserver: ForkServer | None = None) -> Path | None:
    """A stopped cluster in ``lab``'s starting state, to copy for each submission; None when the lab has no
    steps (a new cluster is then as cheap as a copy)."""
    if not lab_steps(lab):
        return None
    cluster = start_cluster(lab, base_dir, forkserver)
    os.kill(cluster.pid, signal.SIGTERM)        # a graceful stop commits and closes the state database
    deadline = time.monotonic() + 30
    while cluster.alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    if cluster.alive():
        cluster.remove()
        raise RuntimeError(f"the template cluster of {lab} did not stop")
    return cluster.directory


def _copy_template(template: Path, home: Path) -> None:
    """The template's state, without its PKI (each copy makes its own), logs or runtime files."""
    shutil.copytree(template, home / "clusters" / CLUSTER_NAME,
                    ignore=shutil.ignore_patterns("pki", "kubeconfig", "server.*", "endpoint.json"))


def _settle(cluster: SubmissionCluster, timeout: float = 30) -> None:
    """Wait until the resumed node agents have restarted every pod on a node (none left Pending there)."""
    from ..learner.reader import ClusterReader

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pods = ClusterReader(cluster.api_client()).pods()
        if not any((p.get("spec") or {}).get("nodeName") and (p.get("status") or {}).get("phase") == "Pending"
                   for p in pods):
            return
        time.sleep(0.1)


def _up(home: Path, forkserver: str | None, template: Path | None = None, topology: Path | None = None,
        attempts: int = 2) -> Path:
    """``embedded.up`` in ``home`` (of a copy of ``template`` when given, on a port of its own; else a new
    cluster of ``topology``); through the fork server at ``forkserver`` when there is one."""
    for attempt in range(attempts):
        if template is not None:
            _copy_template(template, home)
        with _HOME_LOCK:
            old = os.environ.get("GPULAB_HOME")
            os.environ["GPULAB_HOME"] = str(home)
            if forkserver:
                os.environ[SOCKET_ENV] = forkserver
            try:
                return embedded.up(CLUSTER_NAME, server_module="gpulab.grading.forkserver" if forkserver
                                   else embedded.SERVER_MODULE, topology=None if template else topology,
                                   port=None if template is None else lifecycle.free_port())
            except lifecycle.ClusterError:
                if attempt == attempts - 1:   # a free port taken between choosing and binding: choose again
                    raise
                shutil.rmtree(home / "clusters" / CLUSTER_NAME, ignore_errors=True)
            finally:
                os.environ.pop(SOCKET_ENV, None)
                if old is None:
                    os.environ.pop("GPULAB_HOME", None)
                else:
                    os.environ["GPULAB_HOME"] = old
    raise AssertionError("unreachable")


def stop_clusters_under(directory: Path) -> int:
    """Stop every cluster server whose state lies under ``directory`` (after a grading process died); the count."""
    stopped = 0
    for pid_file in Path(directory).glob("**/clusters/*/server.pid"):
        try:
            pid = int(pid_file.read_text())
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                named = str(pid_file.parent).encode() in f.read()
            if not named and os.readlink(f"/proc/{pid}/cwd") != str(pid_file.parent):
                continue                    # a recycled pid: not our server (forked servers work in their state)
            os.kill(pid, signal.SIGKILL)
            stopped += 1
        except (OSError, ValueError):
            continue
    return stopped


class ClusterSupply:
    """Fresh clusters for one lab, optionally one started ahead in the background; of one learner's variant of
    the lab's cluster (:mod:`gpulab.labs.variant`) when given one, each then built afresh (no template: a variant
    is rarely graded twice)."""

    def __init__(self, lab: str, base_dir: Path | None = None, prestart: bool = False,
                 variant: Variant | None = None):
        self.lab, self.base_dir, self.prestart = lab, base_dir, prestart
        self._topology_dir = None if variant is None else Path(tempfile.mkdtemp(prefix="variant-",
                                                                                 dir=base_directory(base_dir)))
        self._topology = None if variant is None else variant.write_topology(self._topology_dir)
        self._starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpulab-cluster-start")
        self._spare: Future | None = None
        self._forkserver = ForkServer(base_directory(base_dir))
        self._template: Path | None = None
        self._template_built = False
        self._owns_template = True

    def take(self) -> SubmissionCluster:
        future = self._spare or self._start()
        self._spare = self._start() if self.prestart else None
        return future.result()

    def _start(self) -> Future:
        return self._starter.submit(self._start_one)

    def _start_one(self) -> SubmissionCluster:
        """Runs on the one starter thread, so the template is built once, before the first copy (unless the
        grading run built it: ``$GPULAB_GRADING_TEMPLATE``, which this supply then uses but never removes)."""
        if self._topology is not None:
            return start_cluster(self.lab, self.base_dir, self._forkserver, topology=self._topology)
        if not self._template_built:
            shared = os.environ.get(TEMPLATE_ENV)
            if shared and lab_steps(self.lab):
                self._template, self._owns_template = Path(shared), False
            else:
                self._template = build_template(self.lab, self.base_dir, self._forkserver)
            self._template_built = True
        return start_cluster(self.lab, self.base_dir, self._forkserver, self._template)

    def close(self) -> None:
        spare, self._spare = self._spare, None
        if spare is not None and not spare.cancel():
            try:
                spare.result(timeout=lifecycle.READY_TIMEOUT * 2).remove()
            except Exception:  # noqa: BLE001 - a spare that failed to start removed its own home
                pass
        self._starter.shutdown(wait=True)
        self._forkserver.stop()
        if self._template is not None and self._owns_template:
            shutil.rmtree(self._template.parent.parent, ignore_errors=True)
        if self._topology_dir is not None:
            shutil.rmtree(self._topology_dir, ignore_errors=True)


_supplies: dict[tuple[str, bool, Variant | None], ClusterSupply] = {}


def supply_for(lab: str, prestart: bool, variant: Variant | None = None) -> ClusterSupply:
    """The process's supply of clusters for ``lab`` (kept across the notebooks one nbgrader run grades); of
    ``variant``'s cluster when given one, without a spare (the next learner's variant is another), and the supply
    of the previous learner's variant closed."""
    key = (lab, prestart and variant is None, variant)
    for other in [k for k in _supplies if k[0] == lab and k[2] is not None and k != key]:
        _supplies.pop(other).close()
    if key not in _supplies:
        _supplies[key] = ClusterSupply(lab, prestart=key[1], variant=variant)
    return _supplies[key]


@atexit.register
def close_supplies() -> None:
    while _supplies:
        _supplies.popitem()[1].close()
    while _removals:
        _removals.pop().join()
