"""``gpulab cluster up|down|status|reset|kubeconfig``: embedded clusters as background processes.

State lives in ``$GPULAB_HOME/clusters/NAME/`` (``GPULAB_HOME`` defaults to
``~/.gpulab``): ``cluster.json`` (name, port, topology), ``pki/``, ``state.db``,
``kubeconfig``, ``server.log`` and ``server.pid`` while running. Folders are
0700 and files 0600 from their creation (:mod:`.privatefiles`). This module
imports nothing heavy, so ``up`` spends its time starting the server, not
loading libraries.

``server.pid`` outlives a server killed with ``kill -9``, and its number may
then belong to another process. A pid counts as the cluster's server only if
that process runs with ``--dir`` naming the cluster's folder and started
before the file was written; nothing else is reported as running or sent a
signal. ``up``, ``down`` and ``reset`` of one cluster hold a lock on it, so a
second ``up`` waits for the server the first is starting and then reports it.
``server.starting`` names the server ``up`` spawned until it is ready: an ``up``
killed mid-start leaves it starting, and ``status`` says so, ``down`` stops it
and the next ``up`` waits for it instead of finding its port taken.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from ..contract import cluster_dir, home, kubeconfig_path
from .privatefiles import open_private_append, private_dir, write_private

if TYPE_CHECKING:
    from .topology import TopologyFormat

DEFAULT_NAME = "gpulab"
READY_TIMEOUT = 60.0


class ClusterError(RuntimeError):
    """A lifecycle failure whose message tells the user what to do."""


def _pid(name: str, file: str = "server.pid") -> int | None:
    """The running server's pid, or None (no pid file, or its number is not this cluster's server).

    ``file="server.starting"``: the server ``up`` spawned and that has not yet said it is ready (the server
    writes ``server.pid`` when it serves).
    """
    pid_file = cluster_dir(name) / file
    try:
        pid = int(pid_file.read_text().strip())
        written = pid_file.stat().st_mtime
    except (OSError, ValueError):
        return None
    return pid if _alive(pid) and _is_server_of(pid, cluster_dir(name), written) else None


def _is_server_of(pid: int, directory: Path, pid_written: float) -> bool:
    """Whether ``pid`` is the server of ``directory``: its command line names the folder after ``--dir``, and
    it started before its pid file was written (a recycled number belongs to a later process). Without
    /proc (not Linux) only liveness can be checked."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return not Path("/proc/self/cmdline").exists()
    target = os.fsencode(directory)
    if not any(a == b"--dir" and b == target for a, b in zip(argv, argv[1:])):
        return False
    started = _start_time(pid)
    return started is None or started <= pid_written + 1.0


def _start_time(pid: int) -> float | None:
    """When ``pid`` started (seconds since the epoch): /proc/PID/stat field 22, in clock ticks after boot."""
    fields = proc_stat(pid)
    try:
        with open("/proc/stat") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, StopIteration, ValueError, IndexError, TypeError):
        return None


@contextlib.contextmanager
def _locked(name: str, timeout: float = READY_TIMEOUT + 30):
    """Hold the cluster's lock (``up``/``down``/``reset`` of one cluster run one at a time)."""
    base = private_dir(home() / "clusters")
    lock_path = base / f".{name}.lock"
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ClusterError(f"another `gpulab cluster` command has held cluster {name!r} for "
                                       f"{timeout:g} s; wait for it to finish, or stop it, and try again.") from None
                time.sleep(0.02)
        yield
    finally:
        os.close(fd)


def proc_stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (the state first), None when unreadable; an exited
    child of ours is reaped first, so it reads as gone rather than as a zombie."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _alive(pid: int) -> bool:
    """True while the process runs; a zombie (exited, not yet reaped) counts as gone and is reaped if ours."""
    fields = proc_stat(pid)
    if fields is not None:
        return fields[0] != "Z"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_running(name: str) -> bool:
    return _pid(name) is not None


def _starting_pid(name: str) -> int | None:
    """A server still starting, spawned by an ``up`` that may since have been killed."""
    return _pid(name, "server.starting")


def _wait_for_start(name: str, pid: int) -> None:
    """Until the starting server ``pid`` serves or is gone (an ``up`` killed mid-start left it starting)."""
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline and not is_running(name) and _starting_pid(name) == pid:
        time.sleep(0.02)
    if is_running(name) or _starting_pid(name) is None:
        (cluster_dir(name) / "server.starting").unlink(missing_ok=True)


def free_port() -> int:
    """A port on 127.0.0.1 that is free now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_taken(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def up(name: str = DEFAULT_NAME, *, topology: Path | None = None, merge: bool = False, port: int | None = None,
       server_module: str = "gpulab.cluster.serve", topology_format: TopologyFormat | None = None,
       feature_gates: str | None = None) -> Path:
    """Start (or resume) the cluster; return the kubeconfig path once the API answers. A new cluster's nodes come
    from ``topology``, read with the composition's ``topology_format`` (its node fields, its default file). While
    another ``up`` starts it, wait for that one and report the cluster it started. ``feature_gates`` (the
    ``--feature-gates`` syntax) is recorded with the cluster and applies from this start on, as a control plane
    restarted with the flag; a running cluster keeps the gates it started with."""
    with _locked(name):
        return _up(name, topology, merge, port, server_module, topology_format, feature_gates)


def _checked_gates(text: str) -> str:
    """``text`` normalized (``A=true,B=false``), or ClusterError with the gate parser's words."""
    from . import features

    try:
        gates = features.parse(text)
    except features.FeatureGateError as exc:
        raise ClusterError(f"invalid argument {text!r} for \"--feature-gates\" flag: {exc}") from None
    return ",".join(f"{gate}={str(on).lower()}" for gate, on in gates.items())


def _up(name: str, topology: Path | None, merge: bool, port: int | None, server_module: str,
        topology_format: TopologyFormat | None, feature_gates: str | None = None) -> Path:
    directory = cluster_dir(name)
    meta_file = directory / "cluster.json"
    gates = None if feature_gates is None else _checked_gates(feature_gates)
    starting = _starting_pid(name)
    if starting and not is_running(name):
        _wait_for_start(name, starting)
    if is_running(name):
        recorded = json.loads(meta_file.read_text()).get("featureGates", "")
        if gates is not None and gates != recorded:
            raise ClusterError(f"cluster {name!r} is running with feature gates {recorded or '(the defaults)'!r}; "
                               f"gates change only when the control plane starts. Run `gpulab cluster down --name "
                               f"{name}`, then `gpulab cluster up --name {name} --feature-gates {gates}`.")
        if topology is not None:
            raise ClusterError(f"cluster {name!r} is already running; a topology applies only to a new cluster. "
                               f"Run `gpulab cluster reset --name {name}` first to start over with {topology}.")
        _write_kubeconfig(name, merge)
        return kubeconfig_path(name)
    if meta_file.exists():
        try:
            meta = json.loads(meta_file.read_text())
            int(meta["port"])
        except (OSError, ValueError, KeyError):
            raise ClusterError(f"the state of cluster {name!r} in {directory} is corrupt (cluster.json unreadable). "
                               f"Run `gpulab cluster reset --name {name}` to start afresh.") from None
        if topology is not None:
            raise ClusterError(f"cluster {name!r} already exists (stopped); a topology applies only to a new "
                               f"cluster. Run `gpulab cluster reset --name {name}` first to use {topology}.")
        private_dir(directory)  # a cluster created before its folder was kept private
        if (port is not None and port != meta["port"]) or (gates is not None and gates != meta.get("featureGates")):
            meta["port"] = port or meta["port"]
            meta["featureGates"] = meta.get("featureGates", "") if gates is None else gates
            write_private(meta_file, json.dumps(meta, indent=1))
    else:
        from .topology import PLAIN, check_nodes

        nodes = (topology_format or PLAIN).nodes(topology, name)
        check_nodes(nodes)
        private_dir(directory)
        meta = {"name": name, "port": port or free_port(), "nodes": [asdict(n) for n in nodes],
                "featureGates": gates or ""}
        write_private(meta_file, json.dumps(meta, indent=1))
    if _port_taken(int(meta["port"])):
        raise ClusterError(
            f"port {meta['port']} on 127.0.0.1, which cluster {name!r} uses, is taken by another process. "
            f"Stop that process, or start this cluster on another port with "
            f"`gpulab cluster up --name {name} --port PORT`.")
    _spawn(name, server_module, meta.get("featureGates", ""))
    _write_kubeconfig(name, merge)
    return kubeconfig_path(name)


def _spawn(name: str, server_module: str, feature_gates: str = "") -> None:
    directory = cluster_dir(name)
    read_fd, write_fd = os.pipe()
    log_file = open_private_append(directory / "server.log")  # handed to the child
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", server_module, "--dir", str(directory), "--ready-fd", str(write_fd)],
            stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file, pass_fds=(write_fd,),
            start_new_session=True, close_fds=True, env=_server_env(feature_gates))
    finally:
        os.close(write_fd)
        log_file.close()
    write_private(directory / "server.starting", str(proc.pid))  # status and a later up see it start
    from . import kubeconfig, pki  # noqa: F401 - loaded while the server starts (two cores), not after it answers
    message = _read_ready(read_fd, proc)
    (directory / "server.starting").unlink(missing_ok=True)
    if message == "READY":
        return
    if message.startswith("CORRUPT"):
        raise ClusterError(f"cluster {name!r} cannot start: its state in {directory} is corrupt "
                           f"({message[len('CORRUPT '):]}). Run `gpulab cluster reset --name {name}` to start afresh "
                           f"(this deletes the cluster's objects).")
    if message.startswith("ERROR"):
        raise ClusterError(f"cluster {name!r} cannot start: {message[len('ERROR '):]}. "
                           f"Try `gpulab cluster up --name {name} --port PORT` with a free port.")
    raise ClusterError(f"the server of cluster {name!r} exited before it was ready. Its log "
                       f"({directory / 'server.log'}) ends with:\n{_tail(directory / 'server.log')}\n"
                       f"Fix the cause, then run `gpulab cluster up --name {name}` again.")


def _server_env(feature_gates: str = "") -> dict[str, str]:
    """The server's environment: ours, with no CA bundle to load, and the cluster's recorded feature gates after
    any in ``GPULAB_FEATURE_GATES`` (a later entry wins). aiohttp builds its client TLS contexts when imported,
    reading every system CA (a tenth of a second or more of the start); the server makes no outbound TLS
    connection, and its own certificates come from the cluster's PKI files."""
    from .features import ENV

    gates = ",".join(filter(None, (os.environ.get(ENV, ""), feature_gates)))
    return {**os.environ, "SSL_CERT_FILE": os.devnull, **({ENV: gates} if gates else {})}


def _read_ready(fd: int, proc: subprocess.Popen) -> str:
    deadline = time.monotonic() + READY_TIMEOUT
    chunks = b""
    os.set_blocking(fd, False)
    try:
        while time.monotonic() < deadline:
            try:
                data = os.read(fd, 4096)
            except BlockingIOError:
                data = None
            if data:
                chunks += data
                if b"\n" in chunks:
                    return chunks.decode(errors="replace").strip()
            elif data == b"":
                return chunks.decode(errors="replace").strip()
            if proc.poll() is not None and not chunks:
                return ""
            time.sleep(0.005)
    finally:
        os.close(fd)
    proc.kill()
    return ""


def _write_kubeconfig(name: str, merge: bool) -> None:
    from . import kubeconfig
    from .pki import ensure_pki

    directory = cluster_dir(name)
    meta = json.loads((directory / "cluster.json").read_text())
    config = kubeconfig.render(name, f"https://127.0.0.1:{meta['port']}", ensure_pki(directory / "pki"))
    kubeconfig.write(directory / "kubeconfig", config)
    if merge:
        kubeconfig.merge_into(kubeconfig.user_kubeconfig_path(), config)


def down(name: str = DEFAULT_NAME, timeout: float = 10.0) -> bool:
    """Stop the server, keeping its state; False when it was not running (a stale pid file is removed)."""
    with _locked(name):
        return _down(name, timeout)


def _down(name: str, timeout: float) -> bool:
    pid_file, starting_file = cluster_dir(name) / "server.pid", cluster_dir(name) / "server.starting"
    pid = _pid(name) or _starting_pid(name)
    if pid is None:
        pid_file.unlink(missing_ok=True)
        starting_file.unlink(missing_ok=True)
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            break
        time.sleep(0.02)
    else:
        if pid in (_pid(name), _starting_pid(name)):  # the same process: never signal a recycled number
            os.kill(pid, signal.SIGKILL)
    pid_file.unlink(missing_ok=True)
    starting_file.unlink(missing_ok=True)
    return True


def reset(name: str = DEFAULT_NAME) -> None:
    """Stop the cluster and delete its state (and its entries in ~/.kube/config)."""
    from . import kubeconfig

    with _locked(name):
        _down(name, 10.0)
        shutil.rmtree(cluster_dir(name), ignore_errors=True)
    kubeconfig.remove_from(kubeconfig.user_kubeconfig_path(), name)


def status(name: str = DEFAULT_NAME) -> dict:
    directory = cluster_dir(name)
    if not (directory / "cluster.json").exists():
        return {"name": name, "state": "absent"}
    meta = json.loads((directory / "cluster.json").read_text())
    pid = _pid(name)
    info = {"name": name, "state": "running" if pid else "stopped", "port": meta.get("port"),
            "nodes": len(meta.get("nodes", [])), "directory": str(directory),
            "kubeconfig": str(kubeconfig_path(name))}
    if meta.get("featureGates"):
        info["feature-gates"] = meta["featureGates"]
    starting = None if pid else _starting_pid(name)
    if pid or starting:
        info["pid"] = pid or starting
        info["state"] = "running" if pid else "starting"
    elif (directory / "server.pid").exists():
        info["state"] = "crashed"
    return info


def list_clusters() -> list[str]:
    base = home() / "clusters"
    return sorted(p.name for p in base.iterdir() if (p / "cluster.json").exists()) if base.exists() else []
