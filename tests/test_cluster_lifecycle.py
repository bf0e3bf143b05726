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
