"""The scheduler's default profile through the real kubectl: a Deployment's replicas spread over the workers, as
kube-scheduler's system default topology spreading does, and inter-pod anti-affinity keeps replicas apart with
upstream's FailedScheduling text."""
from __future__ import annotations

import json
from collections import Counter

from .conftest import wait_for

WORKERS = {"gpulab-worker", "gpulab-worker2", "gpulab-worker3"}


def nodes_of(kubectl, selector: str) -> list[str]:
    pods = json.loads(kubectl("get", "pods", "-l", selector, "-o", "json").stdout)["items"]
    return [p["spec"].get("nodeName") or "" for p in pods]


def test_a_deployments_replicas_spread_over_equal_nodes(kubectl):
    kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=12")
    placed = wait_for(lambda: (lambda nodes: nodes if len(nodes) == 12 and all(nodes) else None)(
        nodes_of(kubectl, "app=web")), what="12 scheduled replicas")
    # Best-effort replicas score alike on every worker by resources; spreading by hostname evens them out.
    assert Counter(placed) == {node: 4 for node in WORKERS}
    kubectl("delete", "deployment", "web")


def test_required_anti_affinity_keeps_replicas_apart(kubectl):
    manifest = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "db"},
        "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "db"}},
                 "template": {"metadata": {"labels": {"app": "db"}}, "spec": {
                     "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                         {"topologyKey": "kubernetes.io/hostname",
                          "labelSelector": {"matchLabels": {"app": "db"}}}]}},
                     "containers": [{"name": "db", "image": "postgres:16"}]}}}}
    kubectl("apply", "-f", "-", input=json.dumps(manifest))
    wait_for(lambda: sorted(n for n in nodes_of(kubectl, "app=db") if n) == sorted(WORKERS) or None,
             what="one replica per worker")
    expected = ("0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 node(s) didn't match pod "
                "anti-affinity rules. preemption: 0/4 nodes are available: 1 Preemption is not helpful for "
                "scheduling, 3 No preemption victims found for incoming pod.")

    def pending_message() -> str:
        pods = json.loads(kubectl("get", "pods", "-l", "app=db", "-o", "json").stdout)["items"]
        pending = [p for p in pods if not p["spec"].get("nodeName")]
        conditions = pending[0]["status"].get("conditions", []) if len(pending) == 1 else []
        return next((c["message"] for c in conditions if c["type"] == "PodScheduled"), "")

    # An attempt made while a node was still starting may have failed otherwise; the latest one is upstream's.
    assert wait_for(lambda: pending_message() == expected or None, what="the anti-affinity FailedScheduling")
    events = kubectl("get", "events", "--field-selector", "reason=FailedScheduling", "-o",
                     "jsonpath={range .items[*]}{.message}{'\\n'}{end}").stdout.splitlines()
    assert expected in events
