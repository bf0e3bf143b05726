"""Workshop sizing: what an idle cluster, a learner beside others, and a cell run by everyone at once cost.

``cluster-setup/jupyterhub/`` sized learners per node by memory alone; in a
workshop the CPU fills first, when every learner runs the same cell together.
This measures, on the machine it runs on (``python -m bench workshop``, a few
minutes; ``GPULAB_BENCH_LEARNERS``, default 4, sets how many learners):

* **a cell alone**: lab 02's first cell, ``gpulab lab reset lab02-node-pools``
  (a fresh embedded cluster with the GPU Operator installed), its wall time
  and the CPU seconds it takes (the command's and the cluster server's);
* **an idle cluster**: that cluster's CPU share over 20 s of nothing, and its
  PSS (proportional set size: shared pages split between the processes that
  map them, which is what a memory cgroup is charged);
* **N learners at once**: the same cell run by N learners together, each in
  a ``GPULAB_HOME`` of their own, its wall time (mean and slowest);
* **a learner beside others**: all the learners' processes measured in one
  pass, so shared pages are split between them, per learner: their cluster and
  a kernel that has done what a lab's first cells do (connect, ``kubectl get
  nodes``, the cluster map and a Check button), then also a
  Jupyter Server each (what a JupyterHub single-user server runs).

The CPU bound follows from the cell's CPU seconds ``c`` (the larger of alone
and together: waiting loops burn more while the CPU is contended): on ``C``
cores, N learners who start it at once wait at least ``N*c/C`` seconds, so
keeping that within ``T`` (15 s, twice the 7-8 s the cell takes alone on an
idle core) allows ``T/c`` learners per core. Wall times measured on a shared
machine are upper bounds; CPU seconds move less. Learners per node = min(memory
bound, CPU bound).
"""
from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil

BIN = Path(sys.executable).parent
CELL = ("lab", "reset", "lab02-node-pools")     # lab 02's first cell: connect and rebuild the starting state
KERNEL_CODE = ("import gpulab\nfrom gpulab import widgets\ngpulab.connect()\ngpulab.kubectl('get nodes')\n"
               "display(widgets.cluster_map())\ndisplay(widgets.check_button('lab02.pools_labelled'))")
IDLE_SECONDS = 20
TARGET_SECONDS = 15   # a cell all learners start at once should end within this: twice its 7-8 s alone
MIB = 1 << 20


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GPULAB_CLUSTER", "KUBECONFIG", "GPULAB_ENGINE",
                                                           "GPULAB_CLUSTER_NAME", "JUPYTER_CONFIG_DIR")}
    return {**env, "GPULAB_HOME": str(home), "PATH": os.pathsep.join([str(BIN), env.get("PATH", "")]),
            "JUPYTER_RUNTIME_DIR": str(home / "jupyter-runtime")}


def _server(home: Path) -> psutil.Process:
    return psutil.Process(int((home / "clusters" / "gpulab" / "server.pid").read_text()))


def _tree(root: psutil.Process) -> list[psutil.Process]:
    try:
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _cpu(processes: list[psutil.Process]) -> float:
    total = 0.0
    for p in processes:
        try:
            times = p.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            pass
    return total


def _pss(processes: list[psutil.Process]) -> int:
    total = 0
    for p in processes:
        try:
            total += p.memory_full_info().pss
        except psutil.NoSuchProcess:
            pass
    return total


def _cell(home: Path) -> tuple[float, float]:
    """Run lab 02's first cell for the learner in ``home``: (wall seconds, CPU seconds of the command and of the
    cluster server it started)."""
    before = os.times()
    start = time.perf_counter()
    proc = subprocess.run([str(BIN / "gpulab"), *CELL], env=_env(home), capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"`gpulab {' '.join(CELL)}` failed: {proc.stderr[-2000:]}")
    after = os.times()
    return wall, after.children_user - before.children_user + after.children_system - before.children_system


def _kernel(home: Path):
    """An IPython kernel of the learner in ``home`` that has done what a lab's first cells do."""
    from jupyter_client.manager import KernelManager

    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(env=_env(home), cwd=str(home))
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=120)
    client.execute_interactive(KERNEL_CODE, timeout=120, output_hook=lambda msg: None)
    return manager, client


def _jupyter_server(home: Path) -> subprocess.Popen:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([str(BIN / "jupyter"), "server", "--no-browser", f"--port={port}",
                             "--ServerApp.token=", f"--ServerApp.root_dir={home}",
                             *(["--allow-root"] if os.geteuid() == 0 else [])], env=_env(home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.5)
    raise RuntimeError("jupyter server did not start within 120 s")


def main() -> dict:
    learners = int(os.environ.get("GPULAB_BENCH_LEARNERS", "4"))
    scratch = Path(tempfile.mkdtemp(prefix="gpulab-bench-workshop-"))
    homes = [scratch / f"learner{i}" for i in range(learners + 1)]     # homes[0]: the one that runs alone
    kernels, servers = [], []
    load_before = os.getloadavg()
    try:
        alone_wall, command_cpu = _cell(homes[0])
        first = _server(homes[0])
        cell_cpu = command_cpu + _cpu(_tree(first))            # the server is fresh: all its CPU is the cell's
        print(f"cell alone: {alone_wall:.1f} s, {cell_cpu:.1f} CPU s", flush=True)
        time.sleep(5)                                           # the operator's last reconciles
        cpu_before = _cpu(_tree(first))
        time.sleep(IDLE_SECONDS)
        idle_share = (_cpu(_tree(first)) - cpu_before) / IDLE_SECONDS
        idle_pss = _pss(_tree(first))
        print(f"idle cluster: {idle_share * 100:.2f}% of a core, {idle_pss / MIB:.0f} MiB PSS", flush=True)

        before = os.times()
        with ThreadPoolExecutor(max_workers=learners) as pool:
            together = list(pool.map(_cell, homes[1:]))
        after = os.times()
        walls = [wall for wall, _ in together]
        commands_cpu = after.children_user - before.children_user + after.children_system - before.children_system
        together_cpu = (commands_cpu + sum(_cpu(_tree(_server(home))) for home in homes[1:])) / learners
        print(f"cell, {learners} learners at once: mean {sum(walls) / learners:.1f} s, slowest {max(walls):.1f} s, "
              f"{together_cpu:.1f} CPU s each", flush=True)

        for home in homes[1:]:
            kernels.append(_kernel(home))
        clusters = [p for home in homes[1:] for p in _tree(_server(home))]
        kernel_processes = [p for manager, _ in kernels for p in _tree(psutil.Process(manager.provisioner.pid))]
        per_learner = _pss(clusters + kernel_processes) / learners
        for home in homes[1:]:
            servers.append(_jupyter_server(home))
        server_processes = [p for s in servers for p in _tree(psutil.Process(s.pid))]
        per_learner_with_server = _pss(clusters + kernel_processes + server_processes) / learners
        print(f"a learner beside {learners - 1} others: {per_learner / MIB:.0f} MiB PSS, "
              f"{per_learner_with_server / MIB:.0f} MiB with Jupyter Server", flush=True)
    finally:
        for manager, client in kernels:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
        for server in servers:
            server.terminate()
            server.wait(timeout=30)
        for home in homes:
            subprocess.run([str(BIN / "gpulab"), "cluster", "reset"], env=_env(home), capture_output=True, timeout=120)
        shutil.rmtree(scratch, ignore_errors=True)
    learners_per_core = TARGET_SECONDS / max(cell_cpu, together_cpu)
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "learners": learners,
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
            "cell": " ".join(("gpulab", *CELL)), "cell_alone_seconds": round(alone_wall, 1),
            "cell_cpu_seconds": round(cell_cpu, 1),
            "cell_together_mean_seconds": round(sum(walls) / learners, 1),
            "cell_together_slowest_seconds": round(max(walls), 1),
            "cell_together_cpu_seconds_each": round(together_cpu, 1),
            "idle_cluster_core_percent": round(idle_share * 100, 2), "idle_cluster_pss_mib": round(idle_pss / MIB),
            "learner_pss_mib": round(per_learner / MIB),
            "learner_with_jupyter_server_pss_mib": round(per_learner_with_server / MIB),
            "learners_per_core": round(learners_per_core, 1), "target_seconds": TARGET_SECONDS}
