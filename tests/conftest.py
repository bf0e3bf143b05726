"""Shared fixtures: a running embedded cluster, the real kubectl against it, the official client.

Each test module that asks for ``cluster`` gets its own cluster (its own
``GPULAB_HOME``), started with ``gpulab cluster up`` semantics and reset
afterwards, so modules can run in parallel under pytest-xdist.

Tests that must hold on real Kubernetes too take the ``engine`` fixture: they run once on the embedded cluster and
once on the upstream engine (kube-apiserver, kube-scheduler, kube-controller-manager and etcd built from source,
KWOK nodes; ``make upstream``). Where the upstream binaries are not built, those runs are skipped with the reason,
except under CI (``CI=true``), where that fails them: CI must judge the course on both engines.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
KUBECTL = str(VENV_BIN / "kubectl") if (VENV_BIN / "kubectl").exists() else shutil.which("kubectl")


@dataclass
class Cluster:
    name: str
    home: Path
    kubeconfig: Path
    cache_dir: Path

    def env(self) -> dict:
        return {**os.environ, "GPULAB_HOME": str(self.home), "KUBECONFIG": str(self.kubeconfig),
                "KUBECACHEDIR": str(self.cache_dir), "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}

    def kubectl(self, *args: str, input: str | None = None, check: bool = True,
                timeout: float = 60) -> subprocess.CompletedProcess:
        proc = subprocess.run([KUBECTL, *args], input=input, capture_output=True, text=True, env=self.env(),
                              timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
        return proc

    def gpulab(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
        proc = subprocess.run([str(VENV_BIN / "gpulab"), *args], capture_output=True, text=True, env=self.env(),
                              timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"gpulab {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
        return proc

    def client(self):
        """An ApiClient of the official kubernetes package, loaded from the kubeconfig."""
        from kubernetes import config

        return config.new_client_from_config(config_file=str(self.kubeconfig))


def wait_for(check, timeout: float = 90, interval: float = 0.5, what: str = "condition"):
    """Poll ``check`` until it returns something truthy and return that; fail saying what was awaited and the
    last value seen."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}; last value: {last!r}")


ENGINES = ("embedded", pytest.param("upstream", marks=pytest.mark.upstream))


def require_upstream() -> None:
    """Skip (fail under CI) unless the upstream engine's binaries are built from the current pins."""
    from gpulab.upstream import build

    if build.built():
        return
    reason = (f"the upstream engine is not built in {build.bin_dir()} (run `make upstream`; it needs Go "
              f"{build.MIN_GO[0]}.{build.MIN_GO[1]}+)")
    if build.under_ci():
        pytest.fail(f"CI must run the upstream engine's tests: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module", params=ENGINES)
def engine(request) -> str:
    """The engine a module's clusters run on: each module using it runs once per engine."""
    if request.param == "upstream":
        require_upstream()
    return request.param


def start_cluster(tmp: Path, *, topology: Path | None = None, name: str = "gpulab", engine: str = "embedded",
                  gpu_stack: bool = True, feature_gates: str | None = None) -> Cluster:
    """A cluster of ``engine`` in a new ``GPULAB_HOME`` under ``tmp`` (``gpu_stack=False``: without the GPU stack
    emulation, for tests that write its objects themselves; ``feature_gates``: its control plane's
    ``--feature-gates``, ``A=false,B=true``)."""
    from gpulab import embedded

    home = tmp / f"home-{uuid.uuid4().hex[:6]}"
    old = os.environ.get("GPULAB_HOME")
    os.environ["GPULAB_HOME"] = str(home)
    try:
        if engine == "upstream":
            from gpulab.upstream import engine as upstream

            kubeconfig = upstream.up(name, topology_format=embedded.TOPOLOGY, topology=topology,
                                     gpu_stack=gpu_stack, feature_gates=feature_gates)
        elif gpu_stack:
            kubeconfig = embedded.up(name, topology=topology, feature_gates=feature_gates)
        else:
            kubeconfig = embedded.up(name, topology=topology, server_module="gpulab.cluster.serve",
                                     feature_gates=feature_gates)
    finally:
        if old is None:
            os.environ.pop("GPULAB_HOME", None)
        else:
            os.environ["GPULAB_HOME"] = old
    return Cluster(name, home, kubeconfig, tmp / f"kubecache-{uuid.uuid4().hex[:6]}")


def stop_cluster(c: Cluster) -> None:
    from gpulab.cluster import lifecycle
    from gpulab.upstream import engine_of

    old = os.environ.get("GPULAB_HOME")
    os.environ["GPULAB_HOME"] = str(c.home)
    try:
        if engine_of(c.name) == "upstream":
            from gpulab.upstream import engine as upstream

            upstream.reset(c.name)
        else:
            lifecycle.reset(c.name)
    finally:
        if old is None:
            os.environ.pop("GPULAB_HOME", None)
        else:
            os.environ["GPULAB_HOME"] = old


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Cluster:
    c = start_cluster(tmp_path_factory.mktemp("cluster"))
    yield c
    stop_cluster(c)


@pytest.fixture(scope="module")
def kubectl(cluster):
    return cluster.kubectl
