"""`gpulab cluster up|down|status|reset|kubeconfig`, durability across kill -9, and the clear failure messages."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from .conftest import KUBECTL, VENV_BIN

GPULAB = str(VENV_BIN / "gpulab")


def run(home: Path, *args: str, check: bool = True, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "GPULAB_HOME": str(home), "HOME": str(home), **(env_extra or {})}
    env.pop("KUBECONFIG", None)
    proc = subprocess.run([GPULAB, *args], capture_output=True, text=True, env=env, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"gpulab {' '.join(args)}: {proc.stdout}{proc.stderr}")
    return proc


def kubectl(kubeconfig: str, *args: str, check: bool = True, home: Path | None = None):
    env = {**os.environ, "KUBECONFIG": kubeconfig}
    if home:
        env["KUBECACHEDIR"] = str(home / "kcache")
    proc = subprocess.run([KUBECTL, *args], capture_output=True, text=True, env=env, timeout=60)
    if check and proc.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {proc.stdout}{proc.stderr}")
    return proc


@pytest.fixture
def home(tmp_path):
    yield tmp_path
    run(tmp_path, "cluster", "reset", check=False)
    run(tmp_path, "cluster", "reset", "--name", "second", check=False)


def test_up_prints_kubeconfig_last_and_state_lives_in_gpulab_home(home):
    out = run(home, "cluster", "up").stdout.strip().splitlines()
    kubeconfig = out[-1]
    assert kubeconfig == str(home / "clusters" / "gpulab" / "kubeconfig")
    assert run(home, "cluster", "kubeconfig").stdout.strip() == kubeconfig
    assert (home / "clusters" / "gpulab" / "state.db").exists()
    assert "state: running" in run(home, "cluster", "status").stdout
    nodes = kubectl(kubeconfig, "get", "nodes", "-o", "name", home=home).stdout.split()
    assert nodes == ["node/gpulab-control-plane", "node/gpulab-worker", "node/gpulab-worker2", "node/gpulab-worker3"]
    # up on a running cluster is idempotent
    assert run(home, "cluster", "up").stdout.strip().splitlines()[-1] == kubeconfig


def test_down_keeps_state_and_up_resumes(home):
    kubeconfig = run(home, "cluster", "up").stdout.strip().splitlines()[-1]
    kubectl(kubeconfig, "create", "configmap", "kept", "--from-literal=a=b", home=home)
    assert "stopped" in run(home, "cluster", "down").stdout
    assert run(home, "cluster", "status", check=False).returncode == 1
    assert kubectl(kubeconfig, "get", "ns", check=False, home=home).returncode != 0
    run(home, "cluster", "up")
    assert kubectl(kubeconfig, "get", "cm", "kept", "-o", "jsonpath={.data.a}", home=home).stdout == "b"


def test_reset_wipes_state(home):
    kubeconfig = run(home, "cluster", "up").stdout.strip().splitlines()[-1]
    kubectl(kubeconfig, "create", "configmap", "gone", home=home)
    run(home, "cluster", "reset")
    assert not (home / "clusters" / "gpulab").exists()
    run(home, "cluster", "up")
    assert kubectl(kubeconfig, "get", "cm", "gone", check=False, home=home).returncode == 1


def test_kill_9_loses_no_acknowledged_write(home):
    kubeconfig = run(home, "cluster", "up").stdout.strip().splitlines()[-1]
    for i in range(20):
        kubectl(kubeconfig, "create", "configmap", f"durable-{i}", home=home)
    pid = int((home / "clusters" / "gpulab" / "server.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.2)
    assert "crashed" in run(home, "cluster", "status", check=False).stdout
    run(home, "cluster", "up")
    names = kubectl(kubeconfig, "get", "cm", "-o", "name", home=home).stdout.split()
    assert all(f"configmap/durable-{i}" in names for i in range(20))


def test_merge_adds_context_like_kind(home):
    run(home, "cluster", "up", "--merge")
    cfg = yaml.safe_load((home / ".kube" / "config").read_text())
    assert cfg["current-context"] == "gpulab-gpulab"
    assert [c["name"] for c in cfg["contexts"]] == ["gpulab-gpulab"]
    out = subprocess.run([KUBECTL, "get", "ns", "default", "-o", "name"], capture_output=True, text=True,
                         env={**os.environ, "HOME": str(home), "KUBECONFIG": str(home / ".kube" / "config")})
    assert out.stdout.strip() == "namespace/default"
    run(home, "cluster", "reset")
    cfg = yaml.safe_load((home / ".kube" / "config").read_text())
    assert cfg["contexts"] == [] and cfg["current-context"] == ""


def test_two_clusters_side_by_side(home):
    first = run(home, "cluster", "up").stdout.strip().splitlines()[-1]
    second = run(home, "cluster", "up", "--name", "second").stdout.strip().splitlines()[-1]
    assert first != second
    assert kubectl(second, "get", "nodes", "-o", "name", home=home).stdout.split()[0] == "node/second-control-plane"


def test_taken_port_gets_a_clear_message(home):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        proc = run(home, "cluster", "up", "--port", str(port), check=False)
    assert proc.returncode == 1
    assert f"port {port} on 127.0.0.1" in proc.stderr and "taken by another process" in proc.stderr
    assert "--port PORT" in proc.stderr


def test_corrupt_state_gets_a_clear_message(home):
    run(home, "cluster", "up")
    run(home, "cluster", "down")
    (home / "clusters" / "gpulab" / "state.db").write_bytes(b"this is not sqlite" * 100)
    for extra in ("state.db-wal", "state.db-shm"):
        (home / "clusters" / "gpulab" / extra).unlink(missing_ok=True)
    proc = run(home, "cluster", "up", check=False)
    assert proc.returncode == 1
    assert "is corrupt" in proc.stderr and "gpulab cluster reset --name gpulab" in proc.stderr


def test_topology_file(home, tmp_path):
    topo = tmp_path / "fleet.yaml"
    topo.write_text(yaml.safe_dump({"nodes": [
        {"name": "{cluster}-control-plane", "role": "control-plane",
         "taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]},
        {"name": "h200-{i}", "replicas": 3, "gpu": {"model": "NVIDIA H200", "count": 8},
         "labels": {"pool": "h200"}}]}))
    kubeconfig = run(home, "cluster", "up", "--topology", str(topo)).stdout.strip().splitlines()[-1]
    names = kubectl(kubeconfig, "get", "nodes", "-l", "pool=h200", "-o", "name", home=home).stdout.split()
    assert names == ["node/h200-1", "node/h200-2", "node/h200-3"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("nodes:\n- name: x\n  gpus: 8\n")
    proc = run(home, "cluster", "up", "--name", "second", "--topology", str(bad), check=False)
    assert proc.returncode == 1 and "unknown field(s) gpus" in proc.stderr


def test_status_of_missing_cluster(home):
    proc = run(home, "cluster", "status", check=False)
    assert proc.returncode == 1 and "does not exist" in proc.stdout


def test_state_is_private_from_the_first_byte(home):
    kubeconfig = run(home, "cluster", "up").stdout.strip().splitlines()[-1]
    kubectl(kubeconfig, "create", "secret", "generic", "s", "--from-literal=password=hunter2", home=home)
    run(home, "cluster", "down")  # the journal files and the log have been written by now
    state = home / "clusters" / "gpulab"
    for folder in (home / "clusters", state, state / "pki"):
        assert folder.stat().st_mode & 0o777 == 0o700, folder
    files = [p for p in state.rglob("*") if p.is_file()]
    assert {"state.db", "server.log", "cluster.json", "kubeconfig", "apiserver.key", "token", "ca.crt"} <= \
        {p.name for p in files}
    for path in files:
        assert path.stat().st_mode & 0o777 == 0o600, path
    run(home, "cluster", "up")  # the server's own files (pid, WAL, endpoint) too
    for path in [p for p in state.rglob("*") if p.is_file()]:
        assert path.stat().st_mode & 0o777 == 0o600, path


def test_a_cluster_made_before_its_state_was_private_is_tightened(home):
    run(home, "cluster", "up")
    run(home, "cluster", "down")
    state = home / "clusters" / "gpulab"
    state.chmod(0o755)
    (state / "cluster.json").chmod(0o644)
    run(home, "cluster", "up", "--port", str(json.loads((state / "cluster.json").read_text())["port"]))
    assert state.stat().st_mode & 0o777 == 0o700


def _impostor(*args: str) -> subprocess.Popen:
    """An unrelated long-running process, optionally with a command line that mentions the cluster."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", *args])


@pytest.mark.parametrize("looks_like_server", [False, True])
def test_a_recycled_pid_is_not_taken_for_the_server(home, looks_like_server):
    run(home, "cluster", "up")
    state = home / "clusters" / "gpulab"
    pid_file = state / "server.pid"
    os.kill(int(pid_file.read_text()), signal.SIGKILL)
    time.sleep(0.3)
    # the stale pid now names another process: one unrelated, or one whose command line even names this
    # cluster's folder but which started after the pid file was written
    args = ("-m", "gpulab.cluster.serve", "--dir", str(state)) if looks_like_server else ()
    written = pid_file.stat().st_mtime
    time.sleep(0.05 if not looks_like_server else 1.5)
    stranger = _impostor(*args)
    try:
        pid_file.write_text(str(stranger.pid))
        os.utime(pid_file, (written, written))
        status = run(home, "cluster", "status", check=False).stdout
        assert "state: crashed" in status and f"pid: {stranger.pid}" not in status
        assert "is not running" in run(home, "cluster", "down").stdout
        assert stranger.poll() is None  # not signalled
        pid_file.write_text(str(stranger.pid))
        os.utime(pid_file, (written, written))
        assert "cluster 'gpulab' is running" in run(home, "cluster", "up").stdout  # not refused
        assert int(pid_file.read_text()) != stranger.pid
        run(home, "cluster", "reset")
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


def test_concurrent_ups_wait_for_the_starting_cluster(home):
    env = {**os.environ, "GPULAB_HOME": str(home), "HOME": str(home)}
    procs = [subprocess.Popen([GPULAB, "cluster", "up"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env) for _ in range(3)]
    results = [p.communicate(timeout=120) + (p.returncode,) for p in procs]
    for out, err, code in results:
        assert code == 0, err
        assert "cluster 'gpulab' is running" in out and err == ""
    assert "state: running" in run(home, "cluster", "status").stdout


def test_an_up_killed_mid_start_leaves_a_starting_cluster_the_next_up_waits_for(home):
    from gpulab.cluster import lifecycle

    env = {**os.environ, "GPULAB_HOME": str(home), "HOME": str(home)}
    first = subprocess.Popen([GPULAB, "cluster", "up"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=env)
    starting = home / "clusters" / "gpulab" / "server.starting"
    deadline = time.monotonic() + 60
    while not starting.exists() and time.monotonic() < deadline:
        time.sleep(0.002)
    first.kill()  # the user's Ctrl-\ or kill -9 while the server is still loading
    first.wait()
    os.environ["GPULAB_HOME"], previous = str(home), os.environ.get("GPULAB_HOME")
    try:
        state = lifecycle.status("gpulab")  # the server is still importing: not stopped, not yet running
    finally:
        os.environ.pop("GPULAB_HOME") if previous is None else os.environ.update(GPULAB_HOME=previous)
    assert state["state"] == "starting" and state["pid"] > 0
    second = run(home, "cluster", "up")
    assert "is taken by another process" not in second.stdout + second.stderr
    kubeconfig = second.stdout.strip().splitlines()[-1]
    assert kubectl(kubeconfig, "get", "ns", "default", "-o", "name", home=home).stdout == "namespace/default\n"
    status = run(home, "cluster", "status").stdout
    assert "state: running" in status and f"pid: {state['pid']}" in status  # the same server, not a second one
    assert not starting.exists()


def test_feature_gates_are_kept_with_the_cluster_and_change_only_at_a_start(home):
    """``--feature-gates`` as kind's config takes them: a bad gate is refused with nothing started, the gates hold
    across down/up (the control plane's flags), and a running cluster refuses new ones with what to do."""
    bad = run(home, "cluster", "up", "--feature-gates", "GangScheduling=true", check=False)   # a plugin, not a gate
    assert bad.returncode == 1 and "unrecognized feature gate: GangScheduling" in bad.stderr
    assert run(home, "cluster", "status", check=False).returncode == 1
    kubeconfig = run(home, "cluster", "up").stdout.strip().splitlines()[-1]

    def beta_served() -> bool:
        rows = kubectl(kubeconfig, "api-resources", "--api-group=scheduling.k8s.io", "-o", "name", home=home)
        return "workloads.scheduling.k8s.io" in rows.stdout.split()

    assert not beta_served()
    refused = run(home, "cluster", "up", "--feature-gates", "GenericWorkload=true", check=False)
    assert refused.returncode == 1 and "`gpulab cluster down --name gpulab`, then" in refused.stderr
    run(home, "cluster", "down")
    run(home, "cluster", "up", "--feature-gates", "GenericWorkload=true")
    assert beta_served()
    assert "feature-gates: GenericWorkload=true" in run(home, "cluster", "status").stdout
    run(home, "cluster", "down")
    run(home, "cluster", "up")
    assert beta_served()
