"""Streaming benchmark: the wall time of whole kubectl commands (exec, port-forwarded HTTP) on the embedded cluster.

Run with `make bench` (or `python -m bench streaming`). Writes bench/results/streaming.json.
Target (issue 12): `kubectl exec POD -- nvidia-smi -L` median under 0.3 s wall, the whole kubectl process measured.
"""
from __future__ import annotations

import http.client
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
GPULAB, KUBECTL = str(BIN / "gpulab"), str(BIN / "kubectl")
RUNS = 21

GPU_POD = """
apiVersion: v1
kind: Pod
metadata: {name: gpu}
spec:
  containers:
  - {name: cuda, image: "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", command: [sleep, infinity],
     resources: {limits: {nvidia.com/gpu: 1}}}
"""


class Cluster:
    def __init__(self, home: Path):
        self.env = {**os.environ, "GPULAB_HOME": str(home), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
        out = subprocess.run([GPULAB, "cluster", "up"], capture_output=True, text=True, env=self.env, check=True)
        self.env["KUBECONFIG"] = out.stdout.strip().splitlines()[-1]

    def kubectl(self, *args: str, input: str | None = None) -> str:
        return subprocess.run([KUBECTL, *args], capture_output=True, text=True, env=self.env, input=input,
                              check=True).stdout

    def wait(self, check, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise TimeoutError("the benchmark's cluster did not get ready")
            time.sleep(0.5)

    def running(self, pod: str) -> bool:
        return self.kubectl("get", "pod", pod, "-o", "jsonpath={.status.phase}") == "Running"


def _summary(samples: list[float]) -> dict:
    s = sorted(samples)
    return {"n": len(s), "median_s": round(statistics.median(s), 3), "p90_s": round(s[int(len(s) * 0.9)], 3),
            "max_s": round(s[-1], 3)}


def _kubectl_wall(cluster: Cluster, *args: str) -> dict:
    samples = []
    for _ in range(RUNS):
        t = time.perf_counter()
        cluster.kubectl(*args)
        samples.append(time.perf_counter() - t)
    return _summary(samples)


def _port_forward(cluster: Cluster) -> dict:
    proc = subprocess.Popen([KUBECTL, "port-forward", "pod/web", ":80"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=cluster.env)
    try:
        port = int(re.match(r"Forwarding from 127\.0\.0\.1:(\d+)", proc.stdout.readline()).group(1))
        samples = []
        for _ in range(RUNS * 5):
            t = time.perf_counter()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("GET", "/")
            conn.getresponse().read()
            conn.close()
            samples.append(time.perf_counter() - t)
        return _summary(samples)
    finally:
        proc.terminate()
        proc.wait(10)


def main() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        cluster = Cluster(Path(tmp))
        try:
            cluster.kubectl("run", "box", "--image=busybox", "--", "sleep", "infinity")
            cluster.kubectl("run", "web", "--image=nginx")
            cluster.wait(lambda: cluster.running("box") and cluster.running("web"))
            out = {"exec_true": _kubectl_wall(cluster, "exec", "box", "--", "true"),
                   "exec_shell_pipeline": _kubectl_wall(cluster, "exec", "box", "--", "sh", "-c",
                                                        "seq 1 100 | grep 7 | wc -l"),
                   "port_forward_http_get": _port_forward(cluster)}
            subprocess.run([GPULAB, "install", "gpu-operator"], capture_output=True, env=cluster.env, check=True)
            cluster.kubectl("apply", "-f", "-", input=GPU_POD)
            cluster.wait(lambda: cluster.running("gpu"), timeout=180)
            out["exec_nvidia_smi_L"] = _kubectl_wall(cluster, "exec", "gpu", "--", "nvidia-smi", "-L")
            t = time.perf_counter()
            subprocess.run([KUBECTL, "version", "--client"], capture_output=True, env=cluster.env, check=True)
            out["kubectl_version_client_s"] = round(time.perf_counter() - t, 3)
            return out
        finally:
            subprocess.run([GPULAB, "cluster", "reset"], capture_output=True, env=cluster.env)


if __name__ == "__main__":
    import json

    print(json.dumps(main(), indent=1))
