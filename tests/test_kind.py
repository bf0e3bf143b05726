"""``gpulab kind up|down``: the tool checks with their messages, and the whole flow on a cluster standing in for kind.

There is no Docker here. The first tests run ``gpulab kind up`` with PATHs that
lack kind, lack docker, or hold a docker whose ``docker info`` fails (a stand-in
script, and the real CLI when this machine has one without an engine). The last
test replaces the kind binary by a script whose ``create cluster`` hands over the
kubeconfig of an embedded cluster built from the kind config ``gpulab kind up`` writes
(same node names and labels, no GPU annotations, no in-process GPU stack): then
``gpulab kind up`` annotates its nodes and starts ``gpulab gpustack run
--kubeconfig K``, and that separate process drives the cluster, reached only
through the kubeconfig, through install, MIG and time-slicing.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from functools import partial
from pathlib import Path

import pytest
import yaml

from gpulab.cluster import lifecycle
from gpulab.setup import kind, kindconfig

from .conftest import KUBECTL, ROOT, VENV_BIN, wait_for

NO_KIND = ("error: kind is not installed: install it from https://kind.sigs.k8s.io/docs/user/quick-start/"
           "#installation (e.g. `go install sigs.k8s.io/kind@v0.30.0`), then run `gpulab kind up` again. Without "
           "kind, `gpulab cluster up` runs the course on the embedded cluster.\n")
DOCKER_DOWN = "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"


def no_engine_message(detail: str = DOCKER_DOWN) -> str:
    return (f"error: Docker is not running: `docker info` failed (exit status 1): {detail}\n"
            "kind runs every node as a Docker container: start the Docker daemon (`sudo systemctl start docker`, or "
            "open Docker Desktop), then run `gpulab kind up` again. Without Docker, `gpulab cluster up` runs the "
            "course on the embedded cluster.\n")


def script(directory: Path, name: str, body: str) -> Path:
    path = directory / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def gpulab(*args: str, path: str, home: Path, check: bool = False, timeout: float = 240,
           extra: dict | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KIND_EXPERIMENTAL_PROVIDER")}
    env.update({"PATH": path, "GPULAB_HOME": str(home), "HOME": str(home), **(extra or {})})
    proc = subprocess.run([str(VENV_BIN / "gpulab"), *args], capture_output=True, text=True, env=env,
                          timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"gpulab {' '.join(args)}: {proc.stdout}{proc.stderr}")
    return proc


@pytest.fixture
def bin_dir(tmp_path):
    directory = tmp_path / "bin"
    directory.mkdir()
    return directory


def test_kind_up_without_kind_names_the_install_step(bin_dir, tmp_path):
    out = gpulab("kind", "up", path=str(bin_dir), home=tmp_path)
    assert (out.returncode, out.stdout, out.stderr) == (1, "", NO_KIND)


def test_kind_up_without_docker_names_the_install_step(bin_dir, tmp_path):
    script(bin_dir, "kind", "exit 0\n")
    out = gpulab("kind", "up", path=str(bin_dir), home=tmp_path)
    assert out.returncode == 1
    assert out.stderr == (
        "error: Docker is not installed (no `docker` on PATH): kind runs every node as a Docker container. Install it "
        "(https://docs.docker.com/engine/install/), start it, then run `gpulab kind up` again. Without Docker, "
        "`gpulab cluster up` runs the course on the embedded cluster.\n")


def test_kind_up_with_a_stopped_docker_engine_says_so(bin_dir, tmp_path):
    calls = tmp_path / "kind-calls"
    script(bin_dir, "kind", f'echo "$@" >> {calls}\n')
    script(bin_dir, "docker", f'echo "Client:"\necho "{DOCKER_DOWN}" >&2\nexit 1\n')
    out = gpulab("kind", "up", path=str(bin_dir), home=tmp_path)
    assert (out.returncode, out.stderr) == (1, no_engine_message())
    assert not calls.exists()                        # kind itself never ran


def test_kind_up_with_this_machines_docker_cli(bin_dir, tmp_path):
    docker = shutil.which("docker")
    if not docker:
        pytest.skip("no docker CLI on this machine")
    info = subprocess.run([docker, "info"], capture_output=True, text=True, timeout=60)
    if info.returncode == 0:
        pytest.skip("this machine's Docker engine runs")
    script(bin_dir, "kind", "exit 0\n")
    (bin_dir / "docker").symlink_to(docker)
    out = gpulab("kind", "up", path=str(bin_dir), home=tmp_path)
    detail = next(line.strip() for line in info.stderr.splitlines() if line.strip())
    assert (out.returncode, out.stderr) == (1, no_engine_message(detail))


def test_kind_up_refuses_a_config_kind_would_refuse(bin_dir, tmp_path):
    calls = tmp_path / "kind-calls"
    script(bin_dir, "kind", f'echo "$@" >> {calls}\n')
    script(bin_dir, "docker", "exit 0\n")
    config = tmp_path / "bad.yaml"
    config.write_text("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n- role: worker\n  gpu: all\n")
    out = gpulab("kind", "up", "--config", str(config), path=str(bin_dir), home=tmp_path)
    assert (out.returncode, out.stderr) == (1, f"error: {config}: unable to decode config: yaml: unmarshal errors:\n"
                                               "  line 5: field gpu not found in type v1alpha4.Node\n")
    assert not calls.exists()


# --- the whole flow, with an embedded cluster standing in for kind ------------------------------------------------

def standin_topology(path: Path) -> Path:
    """The kind config's nodes as an embedded-cluster topology: same names and labels, no GPU annotations."""
    cluster = kind.default_config("gpulab", kind.load_simulated_gpus())
    nodes, workers = [], 0
    for node in cluster["nodes"]:
        if node.get("role", "control-plane") == "control-plane":
            nodes.append({"name": "gpulab-control-plane", "role": "control-plane",
                          "taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]})
        else:
            workers += 1
            nodes.append({"name": f"gpulab-worker{workers if workers > 1 else ''}", "cpu": "32", "memory": "128Gi",
                          "labels": dict(node.get("labels") or {})})
    path.write_text(yaml.safe_dump({"nodes": nodes}))
    return path


wait_for = partial(wait_for, timeout=120)


@pytest.mark.slow
def test_kind_up_annotates_gpu_nodes_and_the_emulation_drives_the_cluster_by_kubeconfig(tmp_path, bin_dir):
    home = tmp_path / "home"
    standin, path = start_stand_in(tmp_path, bin_dir)
    calls = tmp_path / "kind-calls"
    kubeconfig = home / "kind" / "gpulab" / "kubeconfig"
    fast = {"GPULAB_DEVICE_PLUGIN_STOP_GRACE": "3"}

    def kubectl(*args: str) -> str:
        return subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), *args], capture_output=True, text=True,
                              check=True, timeout=60, env={**os.environ, "KUBECACHEDIR": str(tmp_path / "kc")}).stdout

    def node(name: str) -> dict:
        return json.loads(kubectl("get", "node", name, "-o", "json"))

    def allocatable(name: str, resource: str = "nvidia.com/gpu") -> str | None:
        return node(name)["status"]["allocatable"].get(resource)

    try:
        before = gpulab("doctor", "--kubeconfig", str(standin), "-o", "json", path=path, home=home)
        report = json.loads(before.stdout)
        assert before.returncode == 1 and report["emulated"] is False        # no annotations yet: a "real" cluster
        operator = next(f for f in report["findings"] if f["subject"] == "GPU Operator")
        assert operator["next"].startswith("helm repo add nvidia https://helm.ngc.nvidia.com/nvidia && helm repo "
                                           "update && helm install --wait --generate-name -n gpu-operator "
                                           "--create-namespace nvidia/gpu-operator --version=v26.7.0 -f "
                                           "cluster-setup/real/gpu-operator-values.yaml")

        up = gpulab("kind", "up", path=path, home=home, check=True, extra=fast)
        lines = up.stdout.splitlines()
        assert lines[:2] == ["node/gpulab-worker2 annotated: 8x NVIDIA H100 80GB HBM3",
                             "node/gpulab-worker3 annotated: 4x NVIDIA A100-SXM4-40GB"]
        assert lines[-1] == str(kubeconfig)
        config = home / "kind" / "gpulab" / "kind-config.yaml"
        assert kindconfig.load(config.read_text()) == kind.default_config("gpulab", kind.load_simulated_gpus())
        assert calls.read_text().splitlines() == [
            "get clusters", f"create cluster --name gpulab --config {config} --kubeconfig {kubeconfig} --wait 2m"]
        notes = node("gpulab-worker2")["metadata"]["annotations"]
        assert (notes["gpulab.dev/gpu-model"], notes["gpulab.dev/gpu-count"]) == ("NVIDIA H100 80GB HBM3", "8")
        assert "gpulab.dev/gpu-model" not in (node("gpulab-worker")["metadata"].get("annotations") or {})
        pid = int((home / "kind" / "gpulab" / "gpustack.pid").read_text())

        install = gpulab("install", "gpu-operator", "--kubeconfig", str(kubeconfig), path=path, home=home,
                         check=True)
        assert "started the GPU stack emulation in the background" not in install.stderr    # kind up's runner holds it
        holder = kubectl("get", "lease", "-n", "kube-system", "gpulab-gpustack", "-o", "jsonpath={.spec.holderIdentity}")
        assert holder.endswith(f"_{pid}")
        wait_for(lambda: allocatable("gpulab-worker2") == "8", what="8 H100s")
        wait_for(lambda: allocatable("gpulab-worker3") == "4", what="4 A100s")

        kubectl("label", "node", "gpulab-worker2", "nvidia.com/mig.config=all-1g.10gb", "--overwrite")
        wait_for(lambda: node("gpulab-worker2")["metadata"]["labels"].get("nvidia.com/mig.config.state") == "success"
                 and allocatable("gpulab-worker2") == "56", timeout=180, what="56 MIG slices as nvidia.com/gpu")
        assert node("gpulab-worker2")["metadata"]["labels"]["nvidia.com/gpu.product"] == \
            "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"
        kubectl("label", "node", "gpulab-worker2", "nvidia.com/mig.config=all-disabled", "--overwrite")
        wait_for(lambda: allocatable("gpulab-worker2") == "8", timeout=180, what="MIG off again")

        kubectl("apply", "-f", str(ROOT / "cluster-setup" / "real" / "time-slicing-config.yaml"))
        kubectl("patch", "clusterpolicies.nvidia.com/cluster-policy", "--type", "merge", "-p",
                '{"spec":{"devicePlugin":{"config":{"name":"time-slicing-config","default":"any"}}}}')
        wait_for(lambda: allocatable("gpulab-worker2") == "32", timeout=180, what="32 time-sliced H100 replicas")
        labels = wait_for(lambda: (lambda got: got if got.get("nvidia.com/gpu.replicas") == "4" else None)(
            node("gpulab-worker2")["metadata"]["labels"]), what="GFD's sharing labels")
        assert (labels["nvidia.com/gpu.product"], labels["nvidia.com/gpu.sharing-strategy"]) == (
            "NVIDIA-H100-80GB-HBM3-SHARED", "time-slicing")

        after = wait_for(lambda: (lambda p: p if p.returncode == 0 else None)(
            gpulab("doctor", "--kubeconfig", str(kubeconfig), "-o", "json", path=path, home=home)),
            timeout=120, interval=2, what="doctor with nothing missing")
        findings = {(f["node"], f["subject"]): f for f in json.loads(after.stdout)["findings"]}
        assert findings[(None, "GPU stack emulation")]["detail"].endswith(f"_{pid})")
        assert findings[("gpulab-worker2", "sharing")]["detail"] == "time-slicing, 4 replicas per GPU"

        down = gpulab("kind", "down", path=path, home=home, check=True)
        assert down.stdout == "GPU stack emulation stopped\nkind cluster 'gpulab' deleted\n"
        assert calls.read_text().splitlines()[-1] == "delete cluster --name gpulab"
        wait_for(lambda: not _alive(pid), timeout=30, what="the emulation process to exit")
    finally:
        stop_stand_in(tmp_path, home)


def start_stand_in(tmp_path: Path, bin_dir: Path) -> tuple[Path, str]:
    """An embedded cluster standing in for kind (no GPU stack inside it) and fake ``kind``/``docker`` commands in
    ``bin_dir`` that hand out its kubeconfig; returns that kubeconfig and a PATH finding the fakes first."""
    os.environ["GPULAB_HOME"] = str(tmp_path / "standin")
    try:
        standin = lifecycle.up("gpulab", topology=standin_topology(tmp_path / "topology.yaml"),
                               server_module="gpulab.cluster.serve")
    finally:
        os.environ.pop("GPULAB_HOME")
    script(bin_dir, "kind", fake_kind_script(tmp_path / "kind-calls", standin))
    script(bin_dir, "docker", "exit 0\n")
    return standin, f"{bin_dir}{os.pathsep}{VENV_BIN}{os.pathsep}/usr/bin:/bin"


def stop_stand_in(tmp_path: Path, home: Path) -> None:
    """Stop what :func:`start_stand_in` and ``gpulab kind up`` (with ``GPULAB_HOME=home``) left running."""
    pid_file = home / "kind" / "gpulab" / "gpustack.pid"
    if pid_file.exists() and _alive(int(pid_file.read_text())):
        os.kill(int(pid_file.read_text()), signal.SIGTERM)
    os.environ["GPULAB_HOME"] = str(tmp_path / "standin")
    try:
        lifecycle.reset("gpulab")
    finally:
        os.environ.pop("GPULAB_HOME")


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def fake_kind_script(calls: Path, standin: Path) -> str:
    """A kind stand-in: logs its arguments; ``create cluster ... --kubeconfig P`` copies the stand-in's kubeconfig."""
    return (f'echo "$@" >> {calls}\n'
            'if [ "$1" = create ]; then\n'
            '  while [ $# -gt 0 ]; do\n'
            f'    if [ "$1" = --kubeconfig ]; then cp {standin} "$2"; fi\n'
            '    shift\n'
            '  done\n'
            'fi\n'
            'exit 0\n')
