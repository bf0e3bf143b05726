"""API server benchmark: cold `gpulab cluster up`, request latency over HTTPS, idle memory, a big object load.

Run with `make bench` (or `python -m bench apiserver`). Writes bench/results/apiserver.json.
Targets (issue 2): up <= 1 s, idle RSS <= 150 MB, p99 of a single-object GET <= 10 ms.
"""
from __future__ import annotations

import http.client
import json
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import yaml

GPULAB = str(Path(sys.executable).parent / "gpulab")


def _gpulab(home: Path, *args: str) -> str:
    env = {**os.environ, "GPULAB_HOME": str(home)}
    return subprocess.run([GPULAB, *args], capture_output=True, text=True, env=env, check=True).stdout


class Conn:
    """One keep-alive HTTPS connection with the cluster's token."""

    def __init__(self, kubeconfig: Path, ca: Path):
        cfg = yaml.safe_load(kubeconfig.read_text())
        server = cfg["clusters"][0]["cluster"]["server"]
        self.host, self.port = server.removeprefix("https://").split(":")
        self.token = cfg["users"][0]["user"]["token"]
        self.ctx = ssl.create_default_context(cafile=str(ca))
        self.conn = http.client.HTTPSConnection(self.host, int(self.port), context=self.ctx)

    def request(self, method: str, path: str, body=None, content_type="application/json") -> tuple[int, bytes]:
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        self.conn.request(method, path, body=data, headers=headers)
        resp = self.conn.getresponse()
        return resp.status, resp.read()


def _percentiles(samples: list[float]) -> dict:
    s = sorted(samples)
    return {"n": len(s), "p50_ms": round(s[len(s) // 2] * 1000, 3), "p99_ms": round(s[int(len(s) * 0.99) - 1] * 1000, 3),
            "max_ms": round(s[-1] * 1000, 3)}


def _timed(fn, n: int) -> dict:
    samples = []
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        samples.append(time.perf_counter() - t)
    return _percentiles(samples)


def bench_up(runs: int = 5) -> dict:
    cold, resume = [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp)
            t = time.perf_counter()
            _gpulab(home, "cluster", "up")
            cold.append(time.perf_counter() - t)
            _gpulab(home, "cluster", "down")
            t = time.perf_counter()
            _gpulab(home, "cluster", "up")
            resume.append(time.perf_counter() - t)
            _gpulab(home, "cluster", "reset")
    return {"cold_up_s": {"median": round(statistics.median(cold), 3), "max": round(max(cold), 3)},
            "resume_up_s": {"median": round(statistics.median(resume), 3), "max": round(max(resume), 3)}}


def bench_requests(home: Path) -> dict:
    kubeconfig = Path(_gpulab(home, "cluster", "up").strip().splitlines()[-1])
    conn = Conn(kubeconfig, home / "clusters" / "gpulab" / "pki" / "ca.crt")
    base = "/api/v1/namespaces/default/configmaps"
    results = {}
    results["create"] = _timed(lambda i: conn.request("POST", base, {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}"}, "data": {"i": str(i)}}), 1000)
    results["get"] = _timed(lambda i: conn.request("GET", f"{base}/cm-{i % 1000}"), 3000)
    results["list_1000"] = _timed(lambda i: conn.request("GET", base), 100)
    results["patch"] = _timed(lambda i: conn.request("PATCH", f"{base}/cm-{i % 1000}", {"data": {"p": str(i)}},
                                                      "application/merge-patch+json"), 1000)
    pid = int((home / "clusters" / "gpulab" / "server.pid").read_text())
    return {"latency": results, "server_pid": pid}


def idle_rss(home: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp)
        _gpulab(fresh, "cluster", "up")
        pid = int((fresh / "clusters" / "gpulab" / "server.pid").read_text())
        time.sleep(5)
        rss = psutil.Process(pid).memory_info().rss
        _gpulab(fresh, "cluster", "reset")
    return {"idle_rss_mb": round(rss / 2**20, 1)}


def bench_load(nodes: int = 1000, pods: int = 10000) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        topo = home / "fleet.yaml"
        topo.write_text(yaml.safe_dump({"nodes": [
            {"name": "{cluster}-control-plane", "role": "control-plane",
             "taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]},
            {"name": "gpu-{i}", "replicas": nodes - 1, "cpu": "96", "memory": "1Ti",
             "gpu": {"model": "NVIDIA H100 80GB HBM3", "count": 8}}]}))
        t = time.perf_counter()
        kubeconfig = Path(_gpulab(home, "cluster", "up", "--topology", str(topo)).strip().splitlines()[-1])
        up_s = time.perf_counter() - t
        ca = home / "clusters" / "gpulab" / "pki" / "ca.crt"
        pid = int((home / "clusters" / "gpulab" / "server.pid").read_text())

        def create_batch(start: int) -> None:
            c = Conn(kubeconfig, ca)
            for i in range(start, min(start + 500, pods)):
                c.request("POST", "/api/v1/namespaces/default/pods", {
                    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p-{i}"},
                    "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                             "resources": {"requests": {"cpu": "100m"}}}]}})

        t = time.perf_counter()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(create_batch, range(0, pods, 500)))
        create_s = time.perf_counter() - t
        conn = Conn(kubeconfig, ca)
        t = time.perf_counter()
        status, body = conn.request("GET", "/api/v1/pods")
        list_s = time.perf_counter() - t
        count = len(json.loads(body)["items"])
        rss = psutil.Process(pid).memory_info().rss
        _gpulab(home, "cluster", "reset")
    return {"nodes": nodes, "pods": count, "up_with_nodes_s": round(up_s, 2), "create_pods_s": round(create_s, 2),
            "pods_created_per_s": round(pods / create_s, 1), "list_all_pods_s": round(list_s, 3),
            "rss_mb_after_load": round(rss / 2**20, 1)}


def main() -> dict:
    out: dict = {"machine": {"cpus": os.cpu_count(), "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
                             "python": sys.version.split()[0]}}
    out.update(bench_up())
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        out.update(bench_requests(home))
        _gpulab(home, "cluster", "reset")
    out.pop("server_pid", None)
    out.update(idle_rss(Path(tempfile.gettempdir())))
    out["load"] = bench_load()
    return out


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
