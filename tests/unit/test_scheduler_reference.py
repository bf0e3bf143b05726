"""The grouped search (taint classes, resource buckets, label index) against a brute-force reference.

The reference filters every node one by one (first failing plugin wins),
scores every feasible node, normalises, weights and finds the best score,
exactly as written below; on a randomized cluster of 50 nodes and 500 pods the
scheduler must pick one of the best nodes for every pod and count the same
failure reasons.
"""
from __future__ import annotations

import random
from collections import Counter

import pytest

from gpulab.cluster.api import Api
from gpulab.cluster.scheduler import DEFAULT_PROFILE, PLUGINS_PROFILE, ProfileScheduler
from gpulab.cluster.scheduler.nodeselectors import term_matches
from gpulab.cluster.scheduler.plugins.balancedallocation import balanced
from gpulab.cluster.scheduler.plugins.noderesourcesallocatable import normalize, score_node
from gpulab.cluster.scheduler.plugins.noderesourcesfit import insufficient, least_allocated
from gpulab.cluster.scheduler.podinfo import PodInfo
from gpulab.cluster.scheduler.status import fit_error_message
from gpulab.cluster.scheduler.tolerations import tolerated
from gpulab.cluster.store import Store

TAINTS = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
          {"key": "spot", "value": "true", "effect": "PreferNoSchedule"},
          {"key": "maintenance", "effect": "NoExecute"},
          {"key": "slow", "effect": "PreferNoSchedule"}]
UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def reference(cache, pod: PodInfo, allocatable_score: bool):
    """Filter all, score all: (the best nodes, failure reason counts)."""
    reasons: Counter = Counter()
    feasible = []
    for name in sorted(cache.nodes):
        info = cache.nodes[name]
        labels = info.labels
        if info.unschedulable and not tolerated(pod.tolerations, UNSCHEDULABLE_TAINT):
            reasons["node(s) were unschedulable"] += 1
            continue
        if any(t["effect"] in ("NoSchedule", "NoExecute") and not tolerated(pod.tolerations, t) for t in info.taints):
            reasons["node(s) had untolerated taint(s)"] += 1
            continue
        if not pod.required.matches(labels, name):
            reasons["node(s) didn't match Pod's node affinity/selector"] += 1
            continue
        status = insufficient(pod.request, info.alloc, info.allowed_pods, info.requested, len(info.pods))
        if status is not None:
            reasons.update(status.reasons)
            continue
        feasible.append(name)
    if not feasible:
        return set(), reasons
    prefer = [t for t in pod.tolerations if (t.get("effect") or "") in ("", "PreferNoSchedule")]
    raw = {}
    for name in feasible:
        info = cache.nodes[name]
        score = least_allocated(pod.non_zero, info.alloc, info.non_zero)
        if pod.real_cpu_memory != (0, 0):
            score += balanced(pod.real_cpu_memory, info.alloc, info.requested)
        taint = sum(1 for t in info.taints if t["effect"] == "PreferNoSchedule" and not tolerated(prefer, t))
        affinity = sum(w for w, term in pod.preferred if term_matches(term, info.labels, name))
        raw[name] = (score, taint, affinity, score_node(info.alloc))
    max_taint = max(v[1] for v in raw.values())
    max_affinity = max(v[2] for v in raw.values())
    allocatable = dict(zip(feasible, normalize([raw[n][3] for n in feasible])))
    totals = {}
    for name, (score, taint, affinity, _) in raw.items():
        total = score + 3 * (100 if max_taint == 0 else 100 - 100 * taint // max_taint)
        if pod.preferred and max_affinity:
            total += 2 * (100 * affinity // max_affinity)
        if allocatable_score:
            total += allocatable[name]
        totals[name] = total
    best = max(totals.values())
    return {n for n in feasible if totals[n] == best}, reasons


def random_cluster(rng: random.Random) -> Api:
    api = Api(Store())
    api.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    api.create("serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount",
                                   "metadata": {"name": "default", "namespace": "default"}})
    for i in range(50):
        name = f"node-{i:02d}"
        gpus = rng.choice([0, 0, 4, 8])
        labels = {"kubernetes.io/hostname": name, "zone": rng.choice("abc")}
        if gpus:
            labels["gpu"] = rng.choice(["h100", "a100"])
        if rng.random() < 0.3:
            labels["tier"] = rng.choice(["gold", "silver"])
        resources = {"cpu": rng.choice(["8", "16", "32"]), "memory": rng.choice(["32Gi", "64Gi", "256Gi"]),
                     "pods": rng.choice(["4", "20", "110"]), "ephemeral-storage": "100Gi"}
        if gpus:
            resources["nvidia.com/gpu"] = str(gpus)
        spec = {}
        taints = [t for t in TAINTS if rng.random() < 0.15]
        if taints:
            spec["taints"] = taints
        if rng.random() < 0.08:
            spec["unschedulable"] = True
        api.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
                             "spec": spec, "status": {"capacity": dict(resources), "allocatable": dict(resources)}})
    return api


def random_pod(rng: random.Random, i: int) -> dict:
    requests, limits = {}, {}
    if rng.random() < 0.7:
        requests["cpu"] = rng.choice(["250m", "1", "2", "6"])
    if rng.random() < 0.6:
        requests["memory"] = rng.choice(["512Mi", "4Gi", "24Gi"])
    gpus = rng.choice([0, 0, 1, 2, 4])
    if gpus:
        limits["nvidia.com/gpu"] = str(gpus)
    spec: dict = {"containers": [{"name": "c", "image": "x", "resources": {"requests": requests, "limits": limits}}]}
    if rng.random() < 0.2:
        spec["nodeSelector"] = {"zone": rng.choice("abc")}
    affinity: dict = {}
    if rng.random() < 0.2:
        op = rng.choice(["In", "NotIn", "Exists", "DoesNotExist"])
        expr = {"key": rng.choice(["gpu", "tier"]), "operator": op}
        if op in ("In", "NotIn"):
            expr["values"] = rng.sample(["h100", "a100", "gold", "silver"], 2)
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [{"matchExpressions": [expr]}]}
    if rng.random() < 0.3:
        affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": rng.randint(1, 100), "preference": {"matchExpressions": [
                {"key": rng.choice(["zone", "tier", "gpu"]), "operator": "In",
                 "values": [rng.choice(["a", "b", "gold", "h100"])]}]}} for _ in range(rng.randint(1, 2))]
    if affinity:
        spec["affinity"] = {"nodeAffinity": affinity}
    tolerations = [{"key": t["key"], "operator": "Exists"} for t in TAINTS if rng.random() < 0.3]
    if rng.random() < 0.05:
        tolerations.append({"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"})
    if tolerations:
        spec["tolerations"] = tolerations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"pod-{i:03d}", "namespace": "default"},
            "spec": spec}


def schedule_and_compare(api, scheduler, profile) -> tuple[int, int]:
    """Schedule every queued pod, checking each decision (and failure reasons) against the reference."""
    placed = failed = 0
    while (qpi := scheduler.queue.pop()) is not None:
        expected, reasons = reference(scheduler.cache, qpi.info, "NodeResourcesAllocatable" in profile.plugin_names)
        scheduler.schedule_one(qpi)
        got = api.get("pods", qpi.info.name, "default")
        assert got["spec"].get("nodeName") in (expected or {None}), qpi.info.pod
        if not expected:
            failed += 1
            condition = next(c for c in got["status"]["conditions"] if c["type"] == "PodScheduled")
            assert condition["message"].startswith(fit_error_message(50, reasons) + " "), qpi.info.pod
        else:
            placed += 1
    return placed, failed


@pytest.mark.parametrize("profile", [DEFAULT_PROFILE, PLUGINS_PROFILE], ids=lambda p: p.name)
def test_grouped_search_matches_the_brute_force_reference(profile):
    rng = random.Random(2036)
    api = random_cluster(rng)
    scheduler = ProfileScheduler(api, profile)
    scheduler.start()
    placed = failed = 0
    for i in range(500):
        body = random_pod(rng, i)
        body["spec"]["schedulerName"] = profile.name
        api.create("pods", body)
        if rng.random() < 0.03:  # some pods finish: buckets move back and waiting pods are requeued
            running = [p for p in api.list("pods", "default") if p["spec"].get("nodeName")]
            if running:
                api.delete("pods", rng.choice(running)["metadata"]["name"], "default", grace_period_seconds=0)
        done = schedule_and_compare(api, scheduler, profile)
        placed, failed = placed + done[0], failed + done[1]
    assert placed > 150 and failed > 50
