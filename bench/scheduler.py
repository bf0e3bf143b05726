"""Scheduler throughput: 10,000 GPU pods on 100, 1,000 and 5,000 nodes of 8 GPUs, in process.

Each size gets a fresh in-memory API, its nodes (8 ``nvidia.com/gpu``, 96 cpu,
1 TiB) and 10,000 pending pods (1 GPU, 1 cpu, 4 GiB each), then one profile
scheduler schedules until its queue is empty. Every attempt counts, with its
API writes: a bound pod costs a binding and a ``Scheduled`` event, a pod that
does not fit a ``FailedScheduling`` event and a status update. Because the
mix of bound and unschedulable pods differs with the cluster size (800 of the
pods fit on 100 nodes), the growth ratio compares the first 800 pods, which
bind at every size: seconds per pod at 5,000 nodes over seconds per pod at
100 nodes (1.0 is flat, 50 would be linear in the node count).

Run ``python -m bench scheduler`` (or ``make bench``); results go to
``bench/results/scheduler.json``.
"""
from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpulab.cluster.api import Api  # noqa: E402
from gpulab.cluster.scheduler import DEFAULT_PROFILE, ProfileScheduler  # noqa: E402
from gpulab.cluster.store import Store  # noqa: E402

SIZES = (100, 1_000, 5_000)
PODS = 10_000
COMMON_PREFIX = 800  # pods that fit at every size (100 nodes x 8 GPUs)


def cluster(nodes: int) -> Api:
    api = Api(Store())
    api.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    api.create("serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount",
                                   "metadata": {"name": "default", "namespace": "default"}})
    resources = {"cpu": "96", "memory": "1Ti", "pods": "110", "ephemeral-storage": "1Ti", "nvidia.com/gpu": "8"}
    for i in range(nodes):
        name = f"gpu-node-{i:05d}"
        api.create("nodes", {"apiVersion": "v1", "kind": "Node",
                             "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                                   "kubernetes.io/os": "linux"}},
                             "status": {"capacity": dict(resources), "allocatable": dict(resources)}})
    for i in range(PODS):
        api.create("pods", {"apiVersion": "v1", "kind": "Pod",
                            "metadata": {"name": f"trainer-{i:05d}", "namespace": "default"},
                            "spec": {"containers": [{"name": "cuda", "image": "nvcr.io/nvidia/cuda:12.4.1-base",
                                                     "resources": {"requests": {"cpu": "1", "memory": "4Gi"},
                                                                   "limits": {"nvidia.com/gpu": "1"}}}]}})
    return api


def run(nodes: int) -> dict:
    api = cluster(nodes)
    scheduler = ProfileScheduler(api, DEFAULT_PROFILE)
    scheduler.start()
    attempts = 0
    start = time.perf_counter()
    prefix_seconds = None
    while scheduler.schedule_next():
        attempts += 1
        if attempts == COMMON_PREFIX:
            prefix_seconds = time.perf_counter() - start
    seconds = time.perf_counter() - start
    bound = sum(1 for p in api.store.list("pods") if (p.get("spec") or {}).get("nodeName"))
    return {"nodes": nodes, "pods": attempts, "bound": bound, "unschedulable": attempts - bound,
            "seconds": round(seconds, 3), "pods_per_second": round(attempts / seconds),
            "first_800_pods_per_second": round(COMMON_PREFIX / prefix_seconds)}


def main() -> dict:
    results = []
    for nodes in SIZES:
        result = run(nodes)
        results.append(result)
        print(f"{nodes:>5} nodes: {result['pods_per_second']:>5} pods/s over {result['pods']} pods "
              f"({result['bound']} bound, {result['unschedulable']} unschedulable); "
              f"first 800 pods: {result['first_800_pods_per_second']} pods/s", flush=True)
    smallest, largest = results[0], results[-1]
    growth = smallest["first_800_pods_per_second"] / largest["first_800_pods_per_second"]
    node_ratio = largest["nodes"] / smallest["nodes"]
    print(f"growth: {growth:.2f}x time per pod for {node_ratio:.0f}x nodes")
    return {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "results": results, "growth_ratio": round(growth, 3), "node_ratio": node_ratio}


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
