"""Measure the memory of one learner's server: Jupyter Server, a kernel working through a lab, the embedded cluster.

Run from the repository root with the project's environment:

    .venv/bin/python cluster-setup/jupyterhub/measure_learner_memory.py [--json out.json]

What a learner's JupyterHub server runs, in one temporary ``GPULAB_HOME``:
``jupyter server`` (JupyterLab's backend), an IPython kernel, and the embedded
cluster's server process that ``gpulab.connect()`` starts (with the GPU stack
emulation in it once the operator is installed). The kernel then does what the
labs do: connect, ``kubectl get nodes``, ``gpulab install gpu-operator``, wait
for the GPUs, label and taint a node, run GPU pods under time-slicing, show the
cluster map, a Check button and a latency plot (ipywidgets, matplotlib), run a check (each wait
bounded: the figure wanted is memory, not whether the lab passes). A thread
samples every process of the server's tree every 0.2 s; the script prints the
peak and final RSS and PSS of each part and of the whole, the figure
``cluster-setup/jupyterhub/README.md`` sizes ``singleuser.memory`` with.
PSS (proportional set size) counts shared pages once across processes, so the
PSS total is what the pod's memory cgroup is charged, closer than summed RSS.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import psutil
from jupyter_client.manager import KernelManager

LAB_CODE = textwrap.dedent("""
    import json, subprocess, time
    import gpulab
    gpulab.connect()
    gpulab.kubectl("get nodes")
    subprocess.run(["gpulab", "install", "gpu-operator", "--timeout", "2m"], capture_output=True, timeout=300)
    def allocatable(node, resource="nvidia.com/gpu"):
        out = subprocess.run(["kubectl", "get", "node", node, "-o", "json"], capture_output=True, text=True).stdout
        return json.loads(out)["status"]["allocatable"].get(resource)
    deadline = time.time() + 90
    while allocatable("gpulab-worker2") != "8" and time.time() < deadline:
        time.sleep(1)
    gpulab.kubectl("label node gpulab-worker2 pool=h100")
    gpulab.kubectl("taint node gpulab-worker2 nvidia.com/gpu=true:NoSchedule")
    subprocess.run(["kubectl", "apply", "-f", CONFIG], check=True, capture_output=True)
    subprocess.run(["kubectl", "patch", "clusterpolicies.nvidia.com/cluster-policy", "-n", "gpu-operator",
                    "--type", "merge", "-p",
                    '{"spec":{"devicePlugin":{"config":{"name":"time-slicing-config","default":"any"}}}}'],
                   check=True, capture_output=True)
    deadline = time.time() + 90
    while allocatable("gpulab-worker2") != "32" and time.time() < deadline:
        time.sleep(1)
    for i in range(8):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"infer-{i}"},
               "spec": {"restartPolicy": "Never", "nodeSelector": {"pool": "h100"},
                        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                        "containers": [{"name": "main", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                                        "command": ["nvidia-smi"],
                                        "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}
        subprocess.run(["kubectl", "apply", "-f", "-"], input=json.dumps(pod), text=True, check=True,
                       capture_output=True)
    time.sleep(10)
    gpulab.kubectl("get pods -o wide")
    from gpulab import widgets
    from gpulab.widgets.latency_plot import figure_png
    display(widgets.cluster_map())
    display(widgets.check_button("lab01.allocatable_gpus"))
    figure_png(widgets.latency_figure(model="H200"))
    print(gpulab.check("lab01.allocatable_gpus", 12))
""")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _part(process: psutil.Process, server_pid: int, kernel_pid: int) -> str:
    try:
        command = " ".join(process.cmdline())
    except psutil.Error:
        return "other (kubectl, gpulab CLI)"
    if process.pid == server_pid:
        return "jupyter server"
    if process.pid == kernel_pid:
        return "kernel"
    if "gpulab.embedded" in command or "gpulab.cluster.serve" in command:
        return "embedded cluster"
    if "gpustack" in command:
        return "gpu stack emulation"
    return "other (kubectl, gpulab CLI)"


class Sampler(threading.Thread):
    """Sample RSS and PSS of every process under ``roots`` (and the embedded cluster) by part."""

    def __init__(self, roots: list[int], server_pid: int, kernel_pid: int, home: Path):
        super().__init__(daemon=True)
        self.roots, self.server_pid, self.kernel_pid, self.home = roots, server_pid, kernel_pid, home
        self.peak: dict[str, dict[str, int]] = {}
        self.last: dict[str, dict[str, int]] = {}
        self.stop = threading.Event()

    def processes(self) -> list[psutil.Process]:
        found: dict[int, psutil.Process] = {}
        for pid in self.roots:
            try:
                root = psutil.Process(pid)
            except psutil.NoSuchProcess:
                continue
            for p in [root, *root.children(recursive=True)]:
                found[p.pid] = p
        for p in psutil.process_iter(["environ"]):      # the cluster runs in its own session, not under the kernel
            try:
                if (p.info.get("environ") or {}).get("GPULAB_HOME") == str(self.home):
                    found.setdefault(p.pid, p)
            except psutil.Error:
                continue
        return list(found.values())

    def sample(self) -> dict[str, dict[str, int]]:
        parts: dict[str, dict[str, int]] = {}
        for p in self.processes():
            try:
                info = p.memory_full_info()
            except psutil.Error:
                continue
            part = parts.setdefault(_part(p, self.server_pid, self.kernel_pid), {"rss": 0, "pss": 0})
            part["rss"] += info.rss
            part["pss"] += getattr(info, "pss", info.rss)
        parts["total"] = {"rss": sum(v["rss"] for v in parts.values()), "pss": sum(v["pss"] for v in parts.values())}
        return parts

    def run(self) -> None:
        while not self.stop.is_set():
            self.last = self.sample()
            for part, values in self.last.items():
                peak = self.peak.setdefault(part, {"rss": 0, "pss": 0})
                for key in ("rss", "pss"):
                    peak[key] = max(peak[key], values[key])
            self.stop.wait(0.2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    root = Path(__file__).resolve().parents[2]
    venv_bin = Path(sys.executable).parent
    with tempfile.TemporaryDirectory(prefix="gpulab-learner-") as tmp:
        home = Path(tmp)
        env = {**os.environ, "GPULAB_HOME": str(home), "HOME": str(home),
               "PATH": f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}", "KUBECACHEDIR": str(home / "kcache"),
               "PYTHONPATH": str(root)}
        env.pop("KUBECONFIG", None)
        port = _free_port()
        server = subprocess.Popen([str(venv_bin / "jupyter"), "server", "--no-browser", f"--port={port}",
                                   "--ServerApp.token=", f"--ServerApp.root_dir={tmp}", "--allow-root"],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        kernel = KernelManager(kernel_name="python3")
        kernel.start_kernel(env=env, cwd=tmp)
        client = kernel.client()
        client.start_channels()
        client.wait_for_ready(timeout=120)
        sampler = Sampler([server.pid, kernel.provisioner.process.pid], server.pid, kernel.provisioner.process.pid,
                          home)
        sampler.start()
        started = time.monotonic()
        try:
            config = root / "cluster-setup" / "real" / "time-slicing-config.yaml"
            reply = client.execute_interactive(f"CONFIG = {str(config)!r}\n" + LAB_CODE, timeout=900,
                                               output_hook=lambda msg: None)
            if reply["content"]["status"] != "ok":
                print(f"the lab code failed: {reply['content'].get('ename')}: {reply['content'].get('evalue')}",
                      file=sys.stderr)
                return 1
            time.sleep(5)
        finally:
            sampler.stop.set()
            sampler.join()
            client.stop_channels()
            kernel.shutdown_kernel(now=True)
            server.terminate()
            server.wait(30)
            subprocess.run([str(venv_bin / "gpulab"), "cluster", "reset"], env=env, capture_output=True, timeout=120)
    mib = 2**20
    print(f"one learner's server, {time.monotonic() - started:.0f} s of lab work (MiB):")
    print(f"{'part':<30} {'peak RSS':>9} {'peak PSS':>9} {'end RSS':>8} {'end PSS':>8}")
    for part in sorted(sampler.peak, key=lambda p: (p == "total", p)):
        peak, last = sampler.peak[part], sampler.last.get(part, {"rss": 0, "pss": 0})
        print(f"{part:<30} {peak['rss'] / mib:>9.0f} {peak['pss'] / mib:>9.0f} {last['rss'] / mib:>8.0f} "
              f"{last['pss'] / mib:>8.0f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"peak": sampler.peak, "end": sampler.last}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
