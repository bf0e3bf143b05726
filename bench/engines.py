"""The two engines side by side on the same work: the embedded cluster and the upstream engine (Kubernetes' own
control plane built from source, KWOK nodes).

For each engine, in one run, through the commands and the API a learner uses:

* cold ``gpulab cluster up`` (a new cluster of the course's topology, GPU stack on): seconds until ``/readyz``
  answers and until every node reports Ready (median of 3, each in a fresh ``GPULAB_HOME``);
* resident memory of everything the start left running (the embedded server; etcd, kube-apiserver,
  kube-controller-manager, kube-scheduler, kwok, the GPU stack emulation and the stand-ins' supervisor), after the
  cluster has idled 10 s;
* ``gpulab lab reset lab03-h100-pod`` (recreate the cluster, install the GPU Operator, label and taint the pools,
  the pending pod), the whole command;
* scheduling throughput: 1,000 nodes (96 cpu, 1 TiB each), 10,000 pods of 1 cpu created through the API by 8
  threads, pods per second from the first create until every pod is bound, and the rate at which the scheduler
  cleared the backlog left when the last create returned (on two cores the creating client is the bottleneck of
  the first figure). Each engine's scheduler runs as it does for a learner: kube-scheduler with its default client
  rate limit (50 requests/s, burst 100).

Ratios are embedded over upstream for speed (higher: embedded faster) and upstream over embedded for memory.
``python -m bench engines`` (part of ``make bench``); needs ``make upstream``.
"""
from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
VENV_BIN = Path(sys.executable).parent
ENGINES = ("embedded", "upstream")
STARTS = 3
NODES, PODS, CREATORS = 1_000, 10_000, 8


def gpulab(home: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "GPULAB_HOME": home}
    env.pop("KUBECONFIG", None)
    out = subprocess.run([str(VENV_BIN / "gpulab"), *args], capture_output=True, text=True, env=env,
                         timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"gpulab {' '.join(args)} failed: {out.stderr or out.stdout}")
    return out


def client(kubeconfig: Path):
    from kubernetes import config

    return config.new_client_from_config(config_file=str(kubeconfig), persist_config=False)


def _kubeconfig(home: str) -> Path:
    return Path(home) / "clusters" / "gpulab" / "kubeconfig"


def cold_start(engine: str) -> dict:
    """Seconds from `gpulab cluster up` to /readyz answering and to every node Ready; then the memory."""
    import json

    import psutil
    import urllib3

    urllib3.disable_warnings()
    with tempfile.TemporaryDirectory(prefix=f"gpulab-bench-{engine}-") as home:
        ready = {}
        started = time.perf_counter()
        launch = subprocess.Popen([str(VENV_BIN / "gpulab"), "cluster", "up", "--engine", engine],
                                  env={**os.environ, "GPULAB_HOME": home}, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        meta = Path(home) / "clusters" / "gpulab" / "cluster.json"
        while "api" not in ready or "nodes" not in ready:
            if launch.poll() not in (None, 0):
                raise RuntimeError(f"gpulab cluster up --engine {engine} failed")
            kubeconfig = _kubeconfig(home)
            if "api" not in ready and meta.exists():
                port = json.loads(meta.read_text())["port"]
                try:
                    http = urllib3.PoolManager(cert_reqs="CERT_NONE", timeout=0.5, retries=False)
                    if http.request("GET", f"https://127.0.0.1:{port}/readyz").status in (200, 401, 403):
                        ready["api"] = time.perf_counter() - started
                except Exception:  # noqa: BLE001 - not serving yet
                    pass
            if "api" in ready and kubeconfig.exists():
                try:
                    from kubernetes import client as k8s

                    nodes = k8s.CoreV1Api(client(kubeconfig)).list_node().items
                    if nodes and all(any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])
                                     for n in nodes):
                        ready["nodes"] = time.perf_counter() - started
                except Exception:  # noqa: BLE001 - not ready yet
                    pass
            time.sleep(0.02)
        launch.wait()
        time.sleep(10)
        rss = sum(p.memory_info().rss for p in psutil.process_iter()
                  if home in " ".join(_cmdline(p)) and p.pid != os.getpid())
        gpulab(home, "cluster", "reset")
    return {"api_seconds": round(ready["api"], 2), "nodes_seconds": round(ready["nodes"], 2),
            "rss_mb": round(rss / 2**20)}


def _cmdline(process) -> list[str]:
    try:
        return process.cmdline()
    except Exception:  # noqa: BLE001 - gone, or not ours to read
        return []


def lab_reset(engine: str) -> float:
    with tempfile.TemporaryDirectory(prefix=f"gpulab-bench-reset-{engine}-") as home:
        gpulab(home, "cluster", "up", "--engine", engine)
        started = time.perf_counter()
        gpulab(home, "lab", "reset", "lab03-h100-pod")
        seconds = time.perf_counter() - started
        gpulab(home, "cluster", "reset")
    return round(seconds, 1)


def scheduling(engine: str) -> dict:
    """Pods per second bound, 10,000 pods of 1 cpu on 1,000 nodes."""
    from kubernetes import client as k8s

    with tempfile.TemporaryDirectory(prefix=f"gpulab-bench-sched-{engine}-") as home:
        topology = Path(home) / "topology.yaml"
        topology.write_text(f"nodes:\n- name: node-{{i}}\n  replicas: {NODES}\n  cpu: '96'\n  memory: 1Ti\n"
                            "  maxPods: 110\n")
        gpulab(home, "cluster", "up", "--engine", engine, "--topology", str(topology), "--no-gpu-stack")
        core = k8s.CoreV1Api(client(_kubeconfig(home)))
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {},
               "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10.1",
                                        "resources": {"requests": {"cpu": "1"}}}]}}
        started = time.perf_counter()

        def create(index: int) -> None:
            body = {**pod, "metadata": {"name": f"p-{index}"}}
            core.create_namespaced_pod("default", body)

        with ThreadPoolExecutor(CREATORS) as pool:
            list(pool.map(create, range(PODS)))
        created = time.perf_counter() - started
        bound_when_created = len(core.list_namespaced_pod("default", field_selector="spec.nodeName!=",
                                                          _request_timeout=120).items)
        bound = 0
        while bound < PODS:
            items = core.list_namespaced_pod("default", field_selector="spec.nodeName!=", _request_timeout=120).items
            bound = len(items)
            if time.perf_counter() - started > 1800:
                break
            time.sleep(0.5)
        seconds = time.perf_counter() - started
        gpulab(home, "cluster", "reset")
    backlog = bound - bound_when_created
    return {"created_seconds": round(created, 1), "bound_when_created": bound_when_created,
            "all_bound_seconds": round(seconds, 1), "bound": bound,
            "pods_per_second": round(bound / seconds, 1),
            # the scheduler alone: the pods still unbound when the last create returned, over the time it took
            "backlog_pods_per_second": round(backlog / (seconds - created), 1) if backlog > 0 else None}


PARTS_ENV = "GPULAB_BENCH_ENGINE_PARTS"     # e.g. "scheduling": only those parts (default: all)


def main() -> dict:
    from gpulab.upstream import build

    if not build.built():
        raise SystemExit("the upstream engine is not built: run `make upstream` first")
    figures: dict = {"machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cpus",
                     "load_before": [round(x, 2) for x in os.getloadavg()], "versions": build.versions()}
    parts = set(filter(None, os.environ.get(PARTS_ENV, "start,reset,scheduling").split(",")))
    for engine in ENGINES:
        figures[engine] = {}
        if "start" in parts:
            starts = [cold_start(engine) for _ in range(STARTS)]
            figures[engine].update({
                "cold_up_to_api_seconds": statistics.median(s["api_seconds"] for s in starts),
                "cold_up_to_ready_nodes_seconds": statistics.median(s["nodes_seconds"] for s in starts),
                "rss_mb": statistics.median(s["rss_mb"] for s in starts)})
        if "reset" in parts:
            figures[engine]["lab03_reset_seconds"] = lab_reset(engine)
        if "scheduling" in parts:
            figures[engine]["scheduling"] = scheduling(engine)
    if parts != {"start", "reset", "scheduling"}:
        return figures
    emb, up = figures["embedded"], figures["upstream"]
    figures["ratios"] = {
        "cold_up_to_api (upstream/embedded seconds)": round(up["cold_up_to_api_seconds"] / emb["cold_up_to_api_seconds"], 1),
        "cold_up_to_ready_nodes": round(up["cold_up_to_ready_nodes_seconds"] / emb["cold_up_to_ready_nodes_seconds"], 1),
        "memory (upstream/embedded)": round(up["rss_mb"] / emb["rss_mb"], 1),
        "lab03_reset": round(up["lab03_reset_seconds"] / emb["lab03_reset_seconds"], 1),
        "pods_per_second (embedded/upstream)": round(emb["scheduling"]["pods_per_second"]
                                                    / up["scheduling"]["pods_per_second"], 1),
    }
    return figures
