"""The plugins of the default profile beyond resources and node constraints: topology spreading (with the system
default constraints), inter-pod affinity, host ports, image locality, volume claims; random tie-breaking.

Scores are checked against upstream's own test tables, failures by the FailedScheduling text, and the grouped
search against the same plugins run node by node on randomized clusters.
"""
from __future__ import annotations

import random
from collections import Counter

import pytest

from gpulab.cluster.api import Api
from gpulab.cluster.scheduler import DEFAULT_PROFILE, ProfileScheduler
from gpulab.cluster.scheduler.interface import CycleState
from gpulab.cluster.scheduler.podinfo import PodInfo
from gpulab.cluster.scheduler.search import Cell, FeasibleNodes
from gpulab.cluster.scheduler.status import fit_error_message
from gpulab.cluster.store import Store

from test_scheduler import Cluster

HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
NOT_HELPFUL = "Preemption is not helpful for scheduling"


def plain_cluster(nodes: dict[str, dict], resources: dict | None = None) -> Api:
    """An API with nodes of 192 cpu / 2Ti / 110 pods (a few small pods leave their LeastAllocated score alone)
    and the given extra labels (and ``images``)."""
    api = Api(Store())
    for ns in ("default", "other"):
        api.create("namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                  "metadata": {"name": ns, "labels": {"team": ns}}})
        api.create("serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount",
                                       "metadata": {"name": "default", "namespace": ns}})
    resources = resources or {"cpu": "192", "memory": "2Ti", "pods": "110", "ephemeral-storage": "100Gi"}
    for name, extra in nodes.items():
        extra = dict(extra)
        images = extra.pop("images", [])
        api.create("nodes", {"apiVersion": "v1", "kind": "Node",
                             "metadata": {"name": name, "labels": {HOST: name, **extra}},
                             "status": {"capacity": dict(resources), "allocatable": dict(resources),
                                        "images": images}})
    return api


def pod(name: str, labels=None, node=None, namespace="default", image="registry.example/app:1", **spec) -> dict:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace,
                                                             "labels": labels or {}},
            "spec": {"containers": [{"name": "main", "image": image}], **spec}}
    if node:
        body["spec"]["nodeName"] = node
    return body


def node_by_node(scheduler: ProfileScheduler, info: PodInfo):
    """The framework's plugins run on every node one by one: (best nodes, failure reasons or None)."""
    framework, cache = scheduler.framework, scheduler.cache
    state = CycleState()
    pre = framework.run_pre_filter(state, info)
    if pre is not None:
        return set(), fit_error_message(len(cache.nodes), {}, pre.message)
    reasons: Counter = Counter()
    feasible = []
    for name in sorted(cache.nodes):
        node = cache.nodes[name]
        status = framework.run_filters_with_nominated(state, info, node)
        if status is None:
            feasible.append(node)
        else:
            reasons.update(status.reasons)
    if not feasible:
        return set(), fit_error_message(len(cache.nodes), dict(reasons))
    cells = [Cell(node.taint_class, node.bucket, node.bit) for node in feasible]
    plugins = [plugin for plugin, _ in framework.score_plugins]
    framework.run_pre_score(state, info, FeasibleNodes(cells), plugins)
    totals = [0] * len(feasible)
    for plugin, weight in framework.score_plugins:
        if plugin.NAME in state.skip_score:
            continue
        raw = [plugin.score(state, info, node) for node in feasible]
        for i, score in enumerate(plugin.normalize_score(state, info, raw)):
            totals[i] += weight * score
    best = max(totals)
    return {node.name for node, total in zip(feasible, totals) if total == best}, None


def plugin_scores(scheduler: ProfileScheduler, name: str, info: PodInfo, nodes: list[str]) -> dict[str, int]:
    """One plugin's normalised scores over the given feasible nodes, as RunScorePlugins computes them."""
    plugin = next(p for p, _ in scheduler.framework.score_plugins if p.NAME == name)
    cache, state = scheduler.cache, CycleState()
    cells = [Cell(cache.nodes[n].taint_class, cache.nodes[n].bucket, cache.nodes[n].bit) for n in nodes]
    scheduler.framework.run_pre_score(state, info, FeasibleNodes(cells), [plugin])
    assert plugin.NAME not in state.skip_score
    raw = [plugin.score(state, info, cache.nodes[n]) for n in nodes]
    return dict(zip(nodes, plugin.normalize_score(state, info, raw)))


def spread_pod(max_skew: int) -> PodInfo:
    return PodInfo(pod("p", {"foo": ""}, topologySpreadConstraints=[{
        "maxSkew": max_skew, "topologyKey": HOST, "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}}]) | {
        "metadata": {"name": "p", "namespace": "default", "uid": "p", "labels": {"foo": ""}}})


# --- upstream's tables ------------------------------------------------------------
@pytest.mark.parametrize("max_skew,expected", [(1, [20, 60, 100, 0]), (2, [33, 66, 100, 16])])
def test_topology_spread_scores_match_upstream(max_skew, expected):
    # scoring_test.go TestPodTopologySpreadScore: "one constraint on node, all 4 nodes are candidates" (2/1/0/3).
    api = plain_cluster({n: {} for n in ("node-a", "node-b", "node-c", "node-d")})
    for i, node in enumerate("aabddd"):
        api.create("pods", pod(f"p-{i}", {"foo": ""}, node=f"node-{node}"))
    scheduler = ProfileScheduler(api, DEFAULT_PROFILE)
    scheduler.start()
    nodes = ["node-a", "node-b", "node-c", "node-d"]
    assert list(plugin_scores(scheduler, "PodTopologySpread", spread_pod(max_skew), nodes).values()) == expected


def test_inter_pod_affinity_scores_weigh_preferred_terms_and_existing_pods():
    api = plain_cluster({"n1": {"region": "r1"}, "n2": {"region": "r1"}, "n3": {"region": "r2"}})
    api.create("pods", pod("db", {"app": "db"}, node="n1"))
    api.create("pods", pod("cache", {"app": "cache"}, node="n3", affinity={"podAntiAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 40, "podAffinityTerm": {
            "topologyKey": "region", "labelSelector": {"matchLabels": {"app": "web"}}}}]}}))
    scheduler = ProfileScheduler(api, DEFAULT_PROFILE)
    scheduler.start()
    web = PodInfo(pod("web", {"app": "web"}, affinity={"podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 80, "podAffinityTerm": {
            "topologyKey": "region", "labelSelector": {"matchLabels": {"app": "db"}}}}]}}) | {
        "metadata": {"name": "web", "namespace": "default", "uid": "w", "labels": {"app": "web"}}})
    # region r1: +80 (near db); r2: -40 (cache avoids web); normalised between -40 and 80.
    assert plugin_scores(scheduler, "InterPodAffinity", web, ["n1", "n2", "n3"]) == {"n1": 100, "n2": 100, "n3": 0}


# --- filters and their messages ------------------------------------------------------
def test_spread_constraints_reject_skewed_and_unlabelled_nodes():
    c = Cluster()
    for node, zone in (("gpulab-worker", "a"), ("gpulab-worker2", "a"), ("gpulab-worker3", "b")):
        c.api.patch("nodes", node, {"metadata": {"labels": {ZONE: zone}}}, "merge")
    c.pod("web-0", labels={"app": "web"}, nodeName="gpulab-worker")
    constraint = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                   "labelSelector": {"matchLabels": {"app": "web"}}}]
    c.pod("web-1", labels={"app": "web"}, topologySpreadConstraints=constraint)
    c.run()
    assert c.node_of("web-1") == "gpulab-worker3"  # zone a already holds one: a skew of 2
    c.pod("web-x", labels={"app": "web"}, nodeName="gpulab-worker2")
    c.pod("web-2", labels={"app": "web"}, nodeSelector={"kubernetes.io/hostname": "gpulab-worker2"},
          topologySpreadConstraints=[{**constraint[0], "nodeAffinityPolicy": "Ignore"}])
    c.pod("web-3", labels={"app": "web"}, topologySpreadConstraints=constraint,
          tolerations=[{"operator": "Exists"}], nodeSelector={"kubernetes.io/hostname": "gpulab-control-plane"})
    c.run()
    assert c.message("web-2").startswith(
        "0/4 nodes are available: 1 node(s) didn't match pod topology spread constraints, 1 node(s) had untolerated "
        "taint(s), 2 node(s) didn't match Pod's node affinity/selector. preemption: ")
    assert c.message("web-3").startswith(
        "0/4 nodes are available: 1 node(s) didn't match pod topology spread constraints (missing required label), "
        "3 node(s) didn't match Pod's node affinity/selector.")


def test_pod_affinity_anti_affinity_and_existing_anti_affinity():
    c = Cluster()
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": HOST, "labelSelector": {"matchLabels": {"app": "db"}}}]}}
    c.pod("db-0", labels={"app": "db"}, affinity=anti)
    c.pod("db-1", labels={"app": "db"}, affinity=anti)
    c.pod("db-2", labels={"app": "db"}, affinity=anti)
    c.pod("db-3", labels={"app": "db"}, affinity=anti)
    c.run()
    placed = {c.node_of(f"db-{i}") for i in range(3)}
    assert placed == {"gpulab-worker", "gpulab-worker2", "gpulab-worker3"}
    assert c.message("db-3").startswith("0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 node(s) "
                                        "didn't match pod anti-affinity rules.")
    # An unrelated pod may not join a node whose db pod would have it as a neighbour it excludes.
    c.pod("intruder", labels={"app": "db"})
    c.run()
    assert c.message("intruder").startswith("0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 node(s) "
                                            "didn't satisfy existing pods anti-affinity rules.")
    near = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": HOST, "labelSelector": {"matchLabels": {"app": "cache"}}}]}}
    c.pod("needs-cache", labels={"app": "web"}, affinity=near)
    c.run()
    assert c.message("needs-cache").startswith("0/4 nodes are available: 1 node(s) had untolerated taint(s), "
                                               "3 node(s) didn't match pod affinity rules.")
    # The first pod of a group with affinity to itself is let in.
    c.pod("cache-0", labels={"app": "cache"}, affinity=near)
    c.run()
    assert c.node_of("cache-0") is not None


def test_host_ports_conflict_until_the_holder_goes():
    c = Cluster()
    port = {"containerPort": 8080, "hostPort": 8080}
    for i in range(3):
        c.pod(f"agent-{i}", containers=[{"name": "a", "image": "x", "ports": [port]}])
    c.pod("late", containers=[{"name": "a", "image": "x", "ports": [port]}])
    c.pod("other-ip", containers=[{"name": "a", "image": "x", "ports": [{**port, "hostIP": "10.0.0.1",
                                                                          "protocol": "UDP"}]}])
    c.run()
    assert c.message("late").startswith("0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 node(s) "
                                        "didn't have free ports for the requested pod ports. preemption: 0/4 nodes "
                                        "are available: ")
    assert c.node_of("other-ip") is not None  # another protocol does not conflict
    holder = c.node_of("agent-1")
    c.finish("agent-1")
    c.run()
    assert c.node_of("late") == holder


def test_a_missing_claim_fails_at_prefilter():
    c = Cluster()
    c.pod("trainer", volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}])
    c.pod("scratch", volumes=[{"name": "tmp", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}])
    c.run()
    assert c.message("trainer") == ('0/4 nodes are available: persistentvolumeclaim "data" not found. preemption: '
                                    f'0/4 nodes are available: 4 {NOT_HELPFUL}.')
    assert c.message("scratch").startswith('0/4 nodes are available: waiting for ephemeral volume controller to '
                                           'create the persistentvolumeclaim "scratch-tmp".')


def test_image_locality_prefers_the_node_holding_the_image():
    api = plain_cluster({"n1": {}, "n2": {"images": [{"names": ["registry.example/big:1"], "sizeBytes": 800 << 20}]},
                         "n3": {}})
    scheduler = ProfileScheduler(api, DEFAULT_PROFILE)
    scheduler.start()
    api.create("pods", pod("big", image="registry.example/big:1"))
    while scheduler.schedule_next():
        pass
    assert api.get("pods", "big", "default")["spec"]["nodeName"] == "n2"
    info = PodInfo(pod("big", image="registry.example/big:1") | {"metadata": {"name": "big", "namespace": "default",
                                                                               "uid": "b"}})
    # 800 MiB held by 1 of 3 nodes: 266 MiB scaled, (266-23)/(1000-23) of 100.
    assert plugin_scores(scheduler, "ImageLocality", info, ["n1", "n2", "n3"]) == {"n1": 0, "n2": 24, "n3": 0}


# --- spreading by default, random ties, reproducibility --------------------------------
def replicaset_cluster(seed: int) -> tuple[Api, ProfileScheduler]:
    api = plain_cluster({f"node-{i}": {} for i in range(4)})
    scheduler = ProfileScheduler(api, DEFAULT_PROFILE, seed=seed)
    scheduler.start()
    rs = api.create("replicasets.apps", {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web-6d4b", "namespace": "default"},
        "spec": {"replicas": 12, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "main", "image": "x"}]}}}})
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-6d4b", "uid": rs["metadata"]["uid"],
             "controller": True, "blockOwnerDeletion": True}
    for i in range(12):
        body = pod(f"web-6d4b-{i:02d}", {"app": "web"})
        body["metadata"]["ownerReferences"] = [owner]
        api.create("pods", body)
    while scheduler.schedule_next():
        pass
    return api, scheduler


def placements(api: Api) -> dict[str, str]:
    return {p["metadata"]["name"]: p["spec"].get("nodeName") for p in api.list("pods", "default")}


def test_replicas_of_a_replicaset_spread_over_equal_nodes():
    api, _ = replicaset_cluster(seed=1)
    assert sorted(Counter(placements(api).values()).values()) == [3, 3, 3, 3]


def test_ties_are_random_but_the_same_for_the_same_seed():
    first, second, other = (placements(replicaset_cluster(seed)[0]) for seed in (7, 7, 8))
    assert first == second
    assert first != other


# --- the grouped search against the plugins node by node --------------------------------
def random_pod(rng: random.Random, i: int) -> dict:
    app = rng.choice(["web", "db", "cache", "batch"])
    body = pod(f"pod-{i:03d}", {"app": app, "tier": rng.choice(["a", "b"])},
               namespace=rng.choice(["default", "default", "other"]),
               image=rng.choice(["registry.example/app:1", "registry.example/big:1", "registry.example/small"]))
    spec = body["spec"]
    spec["containers"][0]["resources"] = {"requests": {"cpu": rng.choice(["100m", "500m", "1"])}}
    if rng.random() < 0.2:
        spec["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": rng.choice([80, 81, 82])}]
    roll = rng.random()
    selector = {"matchLabels": {"app": app}}
    if roll < 0.25:
        when = rng.choice(["DoNotSchedule", "ScheduleAnyway"])
        spec["topologySpreadConstraints"] = [{
            "maxSkew": rng.choice([1, 2]), "topologyKey": rng.choice([ZONE, HOST, "rack"]),
            "whenUnsatisfiable": when, "labelSelector": selector,
            **({"minDomains": 3} if when == "DoNotSchedule" and rng.random() < 0.2 else {}),
            **({"nodeTaintsPolicy": "Honor"} if rng.random() < 0.2 else {})}]
    elif roll < 0.45:
        term = {"topologyKey": rng.choice([ZONE, HOST]), "labelSelector": {"matchLabels": {"app": rng.choice(
            ["web", "db", "cache"])}}}
        if rng.random() < 0.3:
            term["namespaceSelector"] = rng.choice([{}, {"matchLabels": {"team": "other"}}])
        kind = rng.choice(["podAffinity", "podAntiAffinity"])
        if rng.random() < 0.5:
            spec["affinity"] = {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
        else:
            spec["affinity"] = {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": rng.randint(1, 100), "podAffinityTerm": term}]}}
    elif roll < 0.55:
        spec["nodeSelector"] = {ZONE: rng.choice(["z1", "z2"])}
    return body


@pytest.mark.parametrize("seed", [11, 12])
def test_grouped_search_matches_the_plugins_node_by_node(seed):
    rng = random.Random(seed)
    nodes = {}
    for i in range(24):
        labels = {ZONE: f"z{i % 3}"} if i % 8 else {}
        if rng.random() < 0.5:
            labels["rack"] = f"r{rng.randrange(4)}"
        if rng.random() < 0.4:
            labels["images"] = [{"names": ["registry.example/big:1"], "sizeBytes": rng.choice([300, 900]) << 20}]
        nodes[f"node-{i:02d}"] = labels
    api = plain_cluster(nodes, {"cpu": "4", "memory": "16Gi", "pods": "12", "ephemeral-storage": "100Gi"})
    api.patch("nodes", "node-05", {"spec": {"taints": [{"key": "spot", "effect": "NoSchedule"}]}}, "strategic")
    scheduler = ProfileScheduler(api, DEFAULT_PROFILE, seed=seed)
    scheduler.start()
    placed = failed = 0
    for i in range(240):
        api.create("pods", random_pod(rng, i))
        if rng.random() < 0.05:  # some pods finish
            running = [p for p in api.list("pods") if p["spec"].get("nodeName")]
            if running:
                gone = rng.choice(running)["metadata"]
                api.delete("pods", gone["name"], gone["namespace"], grace_period_seconds=0)
        while (qpi := scheduler.queue.pop()) is not None:
            best, message = node_by_node(scheduler, qpi.info)
            scheduler.schedule_one(qpi)
            got = api.get("pods", qpi.info.name, qpi.info.namespace)
            if best:
                assert got["spec"].get("nodeName") in best, qpi.info.pod
                placed += 1
            else:
                assert got["spec"].get("nodeName") is None
                condition = next(c for c in got["status"]["conditions"] if c["type"] == "PodScheduled")
                assert condition["message"].startswith(message + " "), qpi.info.pod
                failed += 1
    assert placed > 120 and failed > 10
