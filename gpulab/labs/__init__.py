"""``gpulab lab reset LAB``: put the cluster back in a lab's starting state.

On the embedded cluster a reset is fast and total: ``gpulab cluster reset``
then ``gpulab cluster up`` (same name and port, fresh state), a wait until
every node has registered and is Ready (``up`` returns once the API answers;
a pod created before its node is Ready meets the node's ``not-ready`` taint),
then the lab's steps (:mod:`.states`) through the official client. Any other cluster (kind, a
real one, reached through a kubeconfig) is never wiped: :func:`reset` refuses
with :class:`ResetRefused`, whose message lists what the starting state needs,
so the learner can make those changes knowingly. A lab whose cluster varies
from learner to learner (the final assessment, :mod:`.variant`) is recreated
with the learner's variant's topology when ``$GPULAB_ASSESSMENT_VARIANT`` names one.

Under ``nbgrader validate`` (which runs the whole notebook, this reset
included, to tell the learner what grading would say) the learner's cluster is
left alone: the starting state is built on a new embedded cluster in a private
``GPULAB_HOME``, as grading does, and that cluster is stopped and deleted once
the kernel has gone (:mod:`.scratch`).
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from ..checks import validating
from ..learner import connection
from . import variant
from .states import LABS, Lab
from .steps import StepError, wait_for_nodes_ready

__all__ = ["LABS", "Lab", "ResetRefused", "StepError", "describe", "reset", "resolve"]


class ResetRefused(RuntimeError):
    """The connected cluster is not the embedded one; the message says what a reset would change."""


def resolve(lab: str) -> Lab:
    """A lab by its name (``lab03-h100-pod``) or its check prefix (``lab03``)."""
    for candidate in LABS:
        if lab in (candidate.name, candidate.short):
            return candidate
    known = ", ".join(f"{c.name} ({c.short})" for c in LABS)
    raise KeyError(f"no lab {lab!r}; the labs are {known}")


def describe(lab: str | Lab) -> list[str]:
    """What a reset does to reach the lab's starting state, one line per change."""
    chosen = resolve(lab) if isinstance(lab, str) else lab
    return ["delete every object in the cluster and start it afresh"] + [s.describe() for s in chosen.steps]


def _embedded_name(name: str | None) -> str:
    """The embedded cluster to reset; ResetRefused when the learner works on a cluster of their kubeconfig."""
    current = connection._current  # noqa: SLF001 - the kernel's own choice of cluster, if it made one
    if name is None and current is not None and not current.embedded:
        raise ResetRefused(f"connected to {current.server} through a kubeconfig")
    if name is None and os.environ.get(connection.MODE_ENV, "").strip().lower() == connection.KUBECONFIG:
        raise ResetRefused(f"{connection.MODE_ENV}=kubeconfig selects the cluster of your kubeconfig")
    if name is not None:
        return name
    if current is not None and current.cluster_name:
        return current.cluster_name
    return os.environ.get(connection.NAME_ENV) or connection.DEFAULT_NAME


def _gpulab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*connection.gpulab_command(), *args], capture_output=True, text=True, timeout=180)


def _status_field(name: str, field: str) -> str | None:
    """One ``field: value`` line of ``gpulab cluster status``; None when absent or unknown."""
    status = _gpulab("cluster", "status", "--name", name)
    value = next((line.split(":", 1)[1].strip() for line in status.stdout.splitlines()
                  if line.startswith(f"{field}:")), None)
    return None if value in (None, "None") else value


def _up(name: str, port: str | None = None, engine: str | None = None,
        topology: Path | None = None) -> tuple[Path, int]:
    """``gpulab cluster up``: the kubeconfig and how many nodes the cluster has."""
    up = _gpulab("cluster", "up", "--name", name, *(["--port", port] if port else []),
                 *(["--engine", engine] if engine else []), *(["--topology", str(topology)] if topology else []))
    if up.returncode != 0:
        raise StepError(f"`gpulab cluster up --name {name}` failed: {(up.stderr or up.stdout).strip()}")
    return Path(up.stdout.strip().splitlines()[-1]), int(_status_field(name, "nodes") or 0)


def _recreate(name: str, topology: Path | None) -> tuple[Path, int]:
    """``gpulab cluster reset`` + ``up`` on the same port and engine, so a port-forward or bookmark keeps working
    and a learner on the upstream engine stays on it."""
    port, engine = _status_field(name, "port"), _status_field(name, "engine")
    _gpulab("cluster", "reset", "--name", name)
    return _up(name, port, engine, topology)


def _topology(lab: Lab, directory: Path, say) -> Path | None:
    """The topology file of the learner's variant, for a lab whose cluster varies (None: the course's own)."""
    if not lab.varies:
        return None
    try:
        chosen = variant.learner_variant()
    except variant.VariantError as exc:
        raise StepError(str(exc)) from None
    if chosen == variant.DEFAULT:
        return None
    say(f"  your variant ({variant.VARIANT_ENV}): {chosen.token}")
    return chosen.write_topology(directory)


def _private_home() -> Path:
    """A new ``GPULAB_HOME`` for this kernel and the commands it runs, its cluster removed when the kernel ends."""
    from . import scratch

    home = Path(tempfile.mkdtemp(prefix="gpulab-validate-"))
    os.environ["GPULAB_HOME"] = str(home)
    scratch.watch(home)
    return home


def reset(lab: str | Lab, *, name: str | None = None, quiet: bool = False) -> Path:
    """Recreate the embedded cluster ``name`` in ``lab``'s starting state; return its kubeconfig path.

    Refuses (ResetRefused, with the list of changes) when the notebook works on
    a cluster of the learner's kubeconfig. A kernel connected to the embedded
    cluster is reconnected, since the recreated cluster has new credentials.
    """
    from kubernetes import config

    from ..checks import check_ids, progress

    chosen = resolve(lab) if isinstance(lab, str) else lab
    try:
        cluster = _embedded_name(name)
    except ResetRefused as exc:
        changes = "\n".join(f"  - {line}" for line in describe(chosen))
        raise ResetRefused(f"not resetting: {exc}, and gpulab lab reset only wipes the embedded cluster. "
                           f"To reach the starting state of {chosen.name} it would:\n{changes}") from None
    say = (lambda text: None) if quiet else (lambda text: print(text, flush=True))
    with tempfile.TemporaryDirectory(prefix="gpulab-topology-") as scratch_dir:
        if name is None and validating():
            home = _private_home()
            say(f"nbgrader validate: building the starting state of {chosen.name} on a new embedded cluster of "
                f"its own (in {home}, removed when this kernel stops); your cluster {cluster!r} is not touched...")
            kubeconfig, nodes = _up(cluster, topology=_topology(chosen, Path(scratch_dir), say))
        else:
            say(f"Resetting the embedded cluster {cluster!r} to the starting state of {chosen.name}...")
            kubeconfig, nodes = _recreate(cluster, _topology(chosen, Path(scratch_dir), say))
    current = connection._current  # noqa: SLF001
    if current is not None and current.embedded and current.cluster_name == cluster:
        api_client = connection.connect(name=cluster).api_client
    else:
        api_client = config.new_client_from_config(config_file=str(kubeconfig), persist_config=False)
    wait_for_nodes_ready(api_client, nodes)
    for step in chosen.steps:
        say(f"  {step.describe()}")
        step.apply(api_client)
    progress.clear(check_ids(chosen.short))
    say(f"{chosen.name} is ready.")
    return kubeconfig
