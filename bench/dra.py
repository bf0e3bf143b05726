"""DRA and gang scheduling throughput, in process (issue 14's speed targets).

* ``claim_templates``: kube-scheduler's scheduler_perf SchedulingWithResourceClaimTemplate at 500 nodes: each node
  publishes a ResourceSlice of 10 devices of ``driver.example.com``, a DeviceClass selects them in CEL, and every
  pod asks for one device through a ResourceClaimTemplate. 2,500 pods are scheduled first (half the devices taken),
  then 500 measured ones. The ResourceClaim controller makes each pod's claim before the clock starts (upstream
  runs it beside the scheduler); the measured part is scheduling: PreFilter to PreBind writing the allocation,
  ``reservedFor`` and finalizer, then the binding. Target: 200 pods/s (upstream's threshold 40, typically ~51).
* ``gangs``: 1,000 PodGroups (``scheduling.k8s.io/v1beta1``, gang ``minCount`` 3) of 3 pods at 5,000 nodes, with
  the GenericWorkload gate on (which puts the GangScheduling plugin in the profile): the mean scheduling attempt of a pod (each group's three pods are placed in one
  pod group cycle, then Permit releases them to binding together), and the mean pod group cycle. Target: under
  4 ms (upstream's figure ~3.7 ms).

Run ``python -m bench dra`` (or ``make bench``); results go to ``bench/results/dra.json``.
"""
from __future__ import annotations

import asyncio
import gc
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpulab.cluster import features  # noqa: E402
from gpulab.cluster.api import Api  # noqa: E402
from gpulab.cluster.controllers.resourceclaim import ResourceClaimController  # noqa: E402
from gpulab.cluster.dra.claims import CLASSES, SLICES, TEMPLATES  # noqa: E402
from gpulab.cluster.scheduler import DEFAULT_PROFILE, ProfileScheduler  # noqa: E402
from gpulab.cluster.store import Store  # noqa: E402

DRIVER = "driver.example.com"
NODES, DEVICES, INIT_PODS, MEASURED_PODS = 500, 10, 2_500, 500
GANG_NODES, GANGS, GANG_SIZE = 5_000, 1_000, 3


def _api(nodes: int, resources: dict) -> Api:
    api = Api(Store())
    api.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    api.create("serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount",
                                   "metadata": {"name": "default", "namespace": "default"}})
    for i in range(nodes):
        name = f"node-{i:05d}"
        api.create("nodes", {"apiVersion": "v1", "kind": "Node",
                             "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                             "status": {"capacity": dict(resources), "allocatable": dict(resources)}})
    return api


def _pod(name: str, **spec) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": "100m"}}}], **spec}}


def _schedule(scheduler: ProfileScheduler) -> tuple[int, float]:
    gc.collect()
    gc.freeze()  # the collector as the cluster's server sets it (gpulab/cluster/serve.py), as bench/scheduler.py does
    gc.set_threshold(20_000, 50, 50)
    attempts, start = 0, time.perf_counter()
    while scheduler.schedule_next():
        attempts += 1
    return attempts, time.perf_counter() - start


def claim_templates() -> dict:
    api = _api(NODES, {"cpu": "64", "memory": "256Gi", "pods": "110"})
    api.create(CLASSES, {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                         "metadata": {"name": "accel.example.com"},
                         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    for i in range(NODES):
        node = f"node-{i:05d}"
        api.create(SLICES, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                            "metadata": {"name": f"{node}-{DRIVER}"},
                            "spec": {"driver": DRIVER, "nodeName": node,
                                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                                     "devices": [{"name": f"accel-{d}", "attributes": {"index": {"int": d}}}
                                                 for d in range(DEVICES)]}})
    api.create(TEMPLATES, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                           "metadata": {"name": "one-accel", "namespace": "default"},
                           "spec": {"spec": {"devices": {"requests": [
                               {"name": "accel", "exactly": {"deviceClassName": "accel.example.com"}}]}}}},
              "default")
    controller = ResourceClaimController(api)
    scheduler = ProfileScheduler(api, DEFAULT_PROFILE)
    scheduler.start()

    def add_pods(first: int, count: int) -> None:
        for i in range(first, first + count):
            name = f"claimer-{i:05d}"
            api.create("pods", _pod(name, resourceClaims=[{"name": "accel",
                                                           "resourceClaimTemplateName": "one-accel"}]))
            asyncio.run(controller.reconcile(("pod", "default", name)))

    add_pods(0, INIT_PODS)
    init_attempts, init_seconds = _schedule(scheduler)
    add_pods(INIT_PODS, MEASURED_PODS)
    attempts, seconds = _schedule(scheduler)
    bound = sum(1 for p in api.store.list("pods") if (p.get("spec") or {}).get("nodeName"))
    return {"nodes": NODES, "devices_per_node": DEVICES, "init_pods": INIT_PODS, "measured_pods": attempts,
            "bound": bound, "init_pods_per_second": round(init_attempts / init_seconds),
            "seconds": round(seconds, 3), "pods_per_second": round(attempts / seconds)}


def gangs() -> dict:
    old = os.environ.get(features.ENV)
    os.environ[features.ENV] = "GenericWorkload=true"
    features.gates.cache_clear()
    try:
        api = _api(GANG_NODES, {"cpu": "96", "memory": "1Ti", "pods": "110"})
        scheduler = ProfileScheduler(api, DEFAULT_PROFILE)
        scheduler.start()
        for g in range(GANGS):
            api.create("podgroups.scheduling.k8s.io", {
                "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                "metadata": {"name": f"gang-{g:04d}", "namespace": "default"},
                "spec": {"schedulingPolicy": {"gang": {"minCount": GANG_SIZE}}}}, "default")
            for m in range(GANG_SIZE):
                api.create("pods", _pod(f"gang-{g:04d}-{m}", schedulingGroup={"podGroupName": f"gang-{g:04d}"}))
        cycles, seconds = _schedule(scheduler)
        bound = sum(1 for p in api.store.list("pods") if (p.get("spec") or {}).get("nodeName"))
    finally:
        if old is None:
            os.environ.pop(features.ENV, None)
        else:
            os.environ[features.ENV] = old
        features.gates.cache_clear()
    attempts = GANGS * GANG_SIZE
    return {"nodes": GANG_NODES, "pod_groups": GANGS, "pods_per_group": GANG_SIZE, "attempts": attempts,
            "group_cycles": cycles, "bound": bound, "seconds": round(seconds, 3),
            "mean_attempt_ms": round(seconds / attempts * 1000, 3),
            "mean_group_cycle_ms": round(seconds / cycles * 1000, 3)}


def main() -> dict:
    dra = claim_templates()
    print(f"claim templates, {dra['nodes']} nodes: {dra['pods_per_second']} pods/s over {dra['measured_pods']} "
          f"pods after {dra['init_pods']} ({dra['init_pods_per_second']} pods/s); {dra['bound']} bound", flush=True)
    gang = gangs()
    print(f"gangs, {gang['nodes']} nodes: {gang['pod_groups']} groups of {gang['pods_per_group']}, "
          f"mean attempt {gang['mean_attempt_ms']} ms ({gang['mean_group_cycle_ms']} ms per pod group cycle), "
          f"{gang['bound']} bound", flush=True)
    return {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "load_average_1m": round(os.getloadavg()[0], 1), "claim_templates": dra, "gangs": gang}


if __name__ == "__main__":
    main()
