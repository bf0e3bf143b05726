"""Lab 02, node pools: pool labels, the GPU taint, a CPU Deployment kept off GPU nodes, a tolerating trainer."""
from __future__ import annotations

from .gpus import GPU_TAINT, family, gpu_nodes, gpu_taints, is_gpu_node, labels, name, product
from .kube import is_running, node_name, owned_by, phase, state_text, taint_text, tolerated, toleration_text
from .registry import check
from .result import Result, failed, passed

POOL = "pool"
NAMESPACE = "default"
WEB_REPLICAS = 3
# Tolerations the DefaultTolerationSeconds admission plugin adds to every pod; not the learner's.
_ADMISSION_TOLERATIONS = {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}


def _no_gpu_nodes() -> Result:
    return failed("no node is known as a GPU node yet (none has nvidia.com/gpu.present=true or advertises "
                  "nvidia.com/gpu): the GPU Operator is not running",
                  "this lab starts with the GPU Operator installed: `gpulab lab reset lab02-node-pools`")


def gpu_pool_taints(nodes: list[dict]) -> list[dict]:
    """The GPU taints the GPU nodes carry (the course's nvidia.com/gpu=true:NoSchedule when there are none)."""
    seen: dict[str, dict] = {}
    for node in gpu_nodes(nodes):
        for taint in gpu_taints(node):
            seen.setdefault(taint_text(taint), taint)
    return list(seen.values()) or [GPU_TAINT]


@check("lab02.pools_labelled", "pool=h100 / pool=a100 on the GPU nodes only")
def pools_labelled(cluster) -> Result:
    nodes = cluster.nodes()
    gpus = gpu_nodes(nodes)
    if not gpus:
        return _no_gpu_nodes()
    pools = {family(product(n)) for n in gpus} - {None}
    problems, done = [], []
    for node in gpus:
        wanted, actual = family(product(node)), labels(node).get(POOL)
        if actual is None:
            problems.append(f"GPU node {name(node)} ({product(node)}) has no {POOL} label")
        elif wanted is not None and actual != wanted:
            problems.append(f"GPU node {name(node)} has {POOL}={actual}, but its GPUs are {product(node)}")
        else:
            done.append(f"{name(node)} {POOL}={actual}")
    for node in nodes:
        actual = labels(node).get(POOL)
        if not is_gpu_node(node) and actual in pools:
            problems.append(f"node {name(node)} has no GPUs but is labelled {POOL}={actual}")
    if problems:
        return failed("; ".join(problems),
                      f"`kubectl label nodes NODE {POOL}=VALUE` sets a label (--overwrite changes one, "
                      f"`{POOL}-` removes it); `kubectl get nodes -L {POOL},nvidia.com/gpu.product` shows them")
    return passed(f"pools match the GPUs ({', '.join(done)}) and no CPU node claims a GPU pool")


@check("lab02.gpu_nodes_tainted", "nvidia.com/gpu=true:NoSchedule on every GPU node, not on CPU nodes")
def gpu_nodes_tainted(cluster) -> Result:
    nodes = cluster.nodes()
    gpus = gpu_nodes(nodes)
    if not gpus:
        return _no_gpu_nodes()
    wanted = taint_text(GPU_TAINT)
    problems = []
    for node in gpus:
        taints = gpu_taints(node)
        if any(t.get("effect") == GPU_TAINT["effect"] and (t.get("value") or "") == GPU_TAINT["value"]
               for t in taints):
            continue
        if not taints:
            problems.append(f"GPU node {name(node)} has no {GPU_TAINT['key']} taint")
        for taint in taints:
            if taint.get("effect") != GPU_TAINT["effect"]:
                problems.append(f"GPU node {name(node)} has {taint_text(taint)}: effect {taint.get('effect')}, "
                                f"where the exercise asks for {GPU_TAINT['effect']}")
            else:
                problems.append(f"GPU node {name(node)} has {taint_text(taint)}: value "
                                f"{taint.get('value') or '(none)'!r}, where the exercise's taint has "
                                f"{GPU_TAINT['value']!r}")
    for node in nodes:
        if not is_gpu_node(node):
            problems += [f"node {name(node)} has no GPUs but carries {taint_text(t)}" for t in gpu_taints(node)]
    if problems:
        return failed("; ".join(problems),
                      "`kubectl taint nodes NODE KEY=VALUE:EFFECT` adds a taint, the same with a trailing `-` "
                      "removes it; `kubectl describe node NODE | grep Taints` shows them")
    return passed(f"every GPU node ({', '.join(name(n) for n in gpus)}) carries {wanted} and no CPU node does")


@check("lab02.web_off_gpu_nodes", "Deployment web: 3 ready replicas, none on a GPU node")
def web_off_gpu_nodes(cluster) -> Result:
    deployment = cluster.deployment("web", NAMESPACE)
    if deployment is None:
        return failed(f"there is no Deployment web in namespace {NAMESPACE}",
                      "`kubectl create deployment` or `kubectl apply -f` a manifest creates one")
    replicas = (deployment.get("spec") or {}).get("replicas", 1)
    if replicas != WEB_REPLICAS:
        return failed(f"Deployment web asks for {replicas} replicas; the exercise asks for {WEB_REPLICAS}",
                      "`kubectl scale deployment web --replicas=N`")
    nodes = {name(n): n for n in cluster.nodes()}
    sets = {rs["metadata"]["uid"] for rs in cluster.replicasets(NAMESPACE)
            if owned_by(rs, deployment["metadata"]["uid"])}
    pods = [p for p in cluster.pods(NAMESPACE) if any(owned_by(p, uid) for uid in sets)
            and not p["metadata"].get("deletionTimestamp") and phase(p) not in ("Succeeded", "Failed")]
    on_gpu = [p for p in pods if node_name(p) in nodes and is_gpu_node(nodes[node_name(p)])]
    if on_gpu:
        where = ", ".join(f"{name(p)} on {node_name(p)}" for p in on_gpu)
        return failed(f"web pods run on GPU nodes: {where}",
                      "a pod lands on a tainted node only if it tolerates the taint; web needs no toleration, "
                      "and a nodeSelector or node affinity can also keep it on CPU nodes")
    ready = (deployment.get("status") or {}).get("readyReplicas") or 0
    if ready < WEB_REPLICAS:
        waiting = [p for p in pods if not is_running(p)]
        detail = f"; {name(waiting[0])} is {state_text(waiting[0])}" if waiting else ""
        return failed(f"Deployment web has {ready} of {WEB_REPLICAS} replicas ready{detail}",
                      "`kubectl get pods -o wide` and `kubectl describe pod POD` show where and why")
    placed = sorted({node_name(p) for p in pods if node_name(p)})
    return passed(f"Deployment web has {ready} ready replicas, all on nodes without GPUs ({', '.join(placed)})")


def _own_tolerations(pod: dict) -> list[dict]:
    return [t for t in (pod.get("spec") or {}).get("tolerations") or [] if t.get("key") not in _ADMISSION_TOLERATIONS]


@check("lab02.trainer_tolerates", "pod trainer tolerates the GPU taint and runs on a GPU node")
def trainer_tolerates(cluster) -> Result:
    pod = cluster.pod("trainer", NAMESPACE)
    if pod is None:
        return failed(f"there is no pod trainer in namespace {NAMESPACE}", "create it with `kubectl apply -f`")
    nodes = {name(n): n for n in cluster.nodes()}
    for taint in gpu_pool_taints(list(nodes.values())):
        if not tolerated(pod, taint):
            own = _own_tolerations(pod)
            listed = ("its tolerations are " + ", ".join(toleration_text(t) for t in own)) if own \
                else "it has no tolerations of its own"
            return failed(f"pod trainer does not tolerate the GPU nodes' taint {taint_text(taint)}: {listed}",
                          "a toleration matches a taint by key and effect, and with operator Equal (the default) "
                          "by value too; `kubectl explain pod.spec.tolerations`")
    node = node_name(pod)
    if not is_running(pod):
        return failed(f"pod trainer tolerates the GPU taint but is {state_text(pod)}",
                      "`kubectl describe pod trainer` shows its events")
    if node not in nodes or not is_gpu_node(nodes[node]):
        return failed(f"pod trainer runs on {node}, which has no GPUs: a toleration lets a pod onto a tainted "
                      "node, it does not send it there",
                      "ask for a GPU in resources.limits, or select GPU nodes with a nodeSelector")
    return passed(f"pod trainer tolerates the GPU taint and runs on GPU node {node}")
