"""The GPU stack needs nothing but a kubeconfig: an embedded cluster without the in-process stack,
driven by ``gpulab gpustack run --kubeconfig K`` as a separate process that never imports ``gpulab.cluster``."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import uuid

import pytest

from .conftest import KUBECTL, VENV_BIN, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("gpustack-kubeconfig")]
RUNNER = textwrap.dedent("""
    import atexit, json, sys
    def report():
        loaded = sorted(m for m in sys.modules if m == "gpulab.cluster" or m.startswith("gpulab.cluster."))
        open(sys.argv[1], "w").write(json.dumps(loaded))
    atexit.register(report)
    from gpulab.cli import main
    sys.exit(main(["gpustack", "run", "--kubeconfig", sys.argv[2]]))
""")




@pytest.fixture(scope="module")
def home(tmp_path_factory):
    path = tmp_path_factory.mktemp(f"gpustack-kubeconfig-{uuid.uuid4().hex[:6]}")
    yield path
    subprocess.run([str(VENV_BIN / "gpulab"), "cluster", "reset"], env={**os.environ, "GPULAB_HOME": str(path)},
                   capture_output=True, timeout=60)


def gpulab(home, *args, check=True, timeout=180):
    env = {**os.environ, "GPULAB_HOME": str(home)}
    env.pop("KUBECONFIG", None)
    proc = subprocess.run([str(VENV_BIN / "gpulab"), *args], capture_output=True, text=True, env=env,
                          timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"gpulab {' '.join(args)}: {proc.stdout}{proc.stderr}")
    return proc


def kubectl(home, kubeconfig, *args):
    env = {**os.environ, "KUBECONFIG": kubeconfig, "KUBECACHEDIR": str(home / "kcache")}
    return subprocess.run([KUBECTL, *args], capture_output=True, text=True, env=env, timeout=60, check=True).stdout


def test_gpustack_run_drives_a_cluster_through_a_kubeconfig_only(home):
    kubeconfig = gpulab(home, "cluster", "up", "--no-gpu-stack").stdout.strip().splitlines()[-1]
    meta = json.loads((home / "clusters" / "gpulab" / "cluster.json").read_text())
    assert meta["gpuStack"] is False
    report = home / "modules.json"
    runner = subprocess.Popen([sys.executable, "-c", RUNNER, str(report), kubeconfig],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env={k: v for k, v in os.environ.items() if k != "KUBECONFIG"})
    try:
        out = gpulab(home, "install", "gpu-operator", "--kubeconfig", kubeconfig)
        assert "started the GPU stack emulation in the background" not in out.stderr   # the runner holds the lease
        holder = kubectl(home, kubeconfig, "get", "lease", "-n", "kube-system", "gpulab-gpustack",
                         "-o", "jsonpath={.spec.holderIdentity}")
        assert holder.endswith(f"_{runner.pid}")

        def gpus() -> str:
            return kubectl(home, kubeconfig, "get", "node", "gpulab-worker2", "-o",
                           "jsonpath={.status.allocatable.nvidia\\.com/gpu}")
        assert wait_for(gpus, what="nvidia.com/gpu on the H100 node") == "8"
        product = wait_for(lambda: kubectl(home, kubeconfig, "get", "node", "gpulab-worker2", "-o",
                                           "jsonpath={.metadata.labels.nvidia\\.com/gpu\\.product}"),
                           what="GFD's product label")
        assert product == "NVIDIA-H100-80GB-HBM3"
    finally:
        runner.send_signal(signal.SIGTERM)
        output = runner.communicate(timeout=60)[0]
    assert runner.returncode == 0, output
    assert json.loads(report.read_text()) == []
