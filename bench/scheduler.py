"""Scheduler throughput with the whole default profile: 10,000 pods on 100, 1,000 and 5,000 nodes, in process.

Each size gets a fresh in-memory API, its nodes (8 ``nvidia.com/gpu``, 96 cpu,
1 TiB; three zones; half of them already hold the CUDA image) and 10,000
pending pods, then one profile scheduler schedules until its queue is empty.
Two workloads:

* ``basic``: 10,000 bare pods (1 GPU, 1 cpu, 4 GiB each), no labels, no
  owners: kube-scheduler's scheduler_perf ``SchedulingBasic``;
* ``spread``: 100 Deployments of 100 replicas (a ReplicaSet each, pods owned
  by it), half GPU training pods (1 GPU, 1 cpu, 4 GiB), half CPU services
  (2 cpu, 8 GiB): 70 rely on the system default spreading, 15 spread across
  zones with ``maxSkew: 1`` (DoNotSchedule) and across hosts (ScheduleAnyway),
  10 prefer not to share a host (preferred anti-affinity), 5 must not
  (required anti-affinity); the CPU services also prefer the zone of the first
  training Deployment (preferred affinity).

The garbage collector is set up as in the cluster's server (objects stored
before the run frozen, larger thresholds). Every attempt counts, with its API
writes: a bound pod costs a binding and a
``Scheduled`` event, a pod that does not fit a ``FailedScheduling`` event and a
status update. Because the mix of bound and unschedulable pods differs with
the cluster size, the growth ratio compares the first 800 pods, which bind at
every size: seconds per pod at 5,000 nodes over seconds per pod at 100 nodes
(1.0 is flat, 50 would be linear in the node count). Besides wall-clock
rates, each run reports pods per CPU second of the process, which a machine
shared with other work disturbs less.

Run ``python -m bench scheduler`` (or ``make bench``); results go to
``bench/results/scheduler.json``.
"""
from __future__ import annotations

import gc
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
IMAGE = "nvcr.io/nvidia/cuda:12.4.1-base"
ZONE, HOST = "topology.kubernetes.io/zone", "kubernetes.io/hostname"
GPU_REQUEST = {"requests": {"cpu": "1", "memory": "4Gi"}, "limits": {"nvidia.com/gpu": "1"}}
CPU_REQUEST = {"requests": {"cpu": "2", "memory": "8Gi"}}


def cluster(nodes: int) -> Api:
    api = Api(Store())
    api.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    api.create("serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount",
                                   "metadata": {"name": "default", "namespace": "default"}})
    resources = {"cpu": "96", "memory": "1Ti", "pods": "110", "ephemeral-storage": "1Ti", "nvidia.com/gpu": "8"}
    for i in range(nodes):
        name = f"gpu-node-{i:05d}"
        images = [{"names": [IMAGE], "sizeBytes": 2_400_000_000}] if i % 2 else []
        api.create("nodes", {"apiVersion": "v1", "kind": "Node",
                             "metadata": {"name": name, "labels": {HOST: name, "kubernetes.io/os": "linux",
                                                                   ZONE: f"zone-{'abc'[i % 3]}"}},
                             "status": {"capacity": dict(resources), "allocatable": dict(resources),
                                        "images": images}})
    return api


def basic_pods(api: Api) -> None:
    for i in range(PODS):
        api.create("pods", {"apiVersion": "v1", "kind": "Pod",
                            "metadata": {"name": f"trainer-{i:05d}", "namespace": "default"},
                            "spec": {"containers": [{"name": "cuda", "image": IMAGE, "resources": GPU_REQUEST}]}})


def _scheduling(app: int) -> dict:
    """The spec fields that make Deployment ``app`` spread or keep apart (see the module docstring)."""
    own = {"labelSelector": {"matchLabels": {"app": f"app-{app:03d}"}}}
    spec: dict = {}
    if 70 <= app < 85:
        spec["topologySpreadConstraints"] = [
            {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", **own},
            {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "ScheduleAnyway", **own}]
    elif 85 <= app < 95:
        spec["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": {"topologyKey": HOST, **own}}]}}
    elif app >= 95:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": HOST, **own}]}}
    if app % 2:  # CPU services near the first training job's zone
        spec.setdefault("affinity", {})["podAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 50, "podAffinityTerm": {"topologyKey": ZONE, "labelSelector": {
                "matchLabels": {"app": "app-000"}}}}]}
    return spec


def spread_pods(api: Api) -> None:
    for app in range(PODS // 100):
        name = f"app-{app:03d}"
        labels = {"app": name, "pod-template-hash": "5d9c7b"}
        container = {"name": "main", "image": IMAGE if app % 2 == 0 else "registry.example/service:1.0",
                     "resources": GPU_REQUEST if app % 2 == 0 else CPU_REQUEST}
        template = {"metadata": {"labels": labels}, "spec": {"containers": [container], **_scheduling(app)}}
        rs = api.create("replicasets.apps", {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": f"{name}-5d9c7b", "namespace": "default", "labels": labels},
            "spec": {"replicas": 100, "selector": {"matchLabels": labels}, "template": template}})
        owner = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs["metadata"]["name"],
                  "uid": rs["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
        for i in range(100):
            api.create("pods", {"apiVersion": "v1", "kind": "Pod",
                                "metadata": {"name": f"{name}-5d9c7b-{i:03d}", "namespace": "default",
                                             "labels": labels, "ownerReferences": owner},
                                "spec": json.loads(json.dumps(template["spec"]))})


WORKLOADS = {"basic": basic_pods, "spread": spread_pods}


def run(nodes: int, workload: str = "basic") -> dict:
    api = cluster(nodes)
    WORKLOADS[workload](api)
    gc.collect()
    gc.freeze()  # as the cluster's server does (gpulab/cluster/serve.py): stored objects live as long as it
    gc.set_threshold(20_000, 50, 50)
    scheduler = ProfileScheduler(api, DEFAULT_PROFILE)
    scheduler.start()
    attempts = 0
    start, cpu_start = time.perf_counter(), time.process_time()
    prefix_seconds = None
    while scheduler.schedule_next():
        attempts += 1
        if attempts == COMMON_PREFIX:
            prefix_seconds = time.perf_counter() - start
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    bound = sum(1 for p in api.store.list("pods") if (p.get("spec") or {}).get("nodeName"))
    gc.unfreeze()
    return {"workload": workload, "nodes": nodes, "pods": attempts, "bound": bound,
            "unschedulable": attempts - bound, "seconds": round(seconds, 3),
            "pods_per_second": round(attempts / seconds), "pods_per_cpu_second": round(attempts / cpu_seconds),
            "first_800_pods_per_second": round(COMMON_PREFIX / prefix_seconds)}


def main() -> dict:
    figures = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()}
    for workload in WORKLOADS:
        results = []
        for nodes in SIZES:
            result = run(nodes, workload)
            results.append(result)
            print(f"{workload:>6} {nodes:>5} nodes: {result['pods_per_second']:>5} pods/s "
                  f"({result['pods_per_cpu_second']} per CPU second) over {result['pods']} "
                  f"pods ({result['bound']} bound, {result['unschedulable']} unschedulable); "
                  f"first 800 pods: {result['first_800_pods_per_second']} pods/s", flush=True)
        smallest, largest = results[0], results[-1]
        growth = smallest["first_800_pods_per_second"] / largest["first_800_pods_per_second"]
        node_ratio = largest["nodes"] / smallest["nodes"]
        print(f"{workload:>6} growth: {growth:.2f}x time per pod for {node_ratio:.0f}x nodes")
        figures[workload] = {"results": results, "growth_ratio": round(growth, 3), "node_ratio": node_ratio}
    return figures


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
