"""Lab 02, node pools: pool labels, the GPU taint, a CPU Deployment kept off GPU nodes, a tolerating trainer.

The lab walks through the source's mistake "forgetting the taint": the CPU
Deployment ``web`` is created before the GPU nodes are tainted, and the
learner counts how many of its pods the scheduler put on GPU nodes (nothing
kept them off, and LeastAllocated scoring favours the nodes with the most
free CPU and memory, which GPU machines are); then the taint, and what it
does not do to pods already there; then moving ``web`` off the GPU nodes.
"""
from __future__ import annotations

from .answers import MultipleChoice, as_int
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


def web_pods(cluster, deployment: dict) -> list[dict]:
    """The Deployment's pods that are not on their way out (any ReplicaSet of it, as a rollout has two)."""
    sets = {rs["metadata"]["uid"] for rs in cluster.replicasets(NAMESPACE)
            if owned_by(rs, deployment["metadata"]["uid"])}
    return [p for p in cluster.pods(NAMESPACE) if any(owned_by(p, uid) for uid in sets)
            and not p["metadata"].get("deletionTimestamp") and phase(p) not in ("Succeeded", "Failed")]


def _on_gpu_nodes(cluster, pods: list[dict]) -> list[dict]:
    nodes = {name(n): n for n in cluster.nodes()}
    return [p for p in pods if node_name(p) in nodes and is_gpu_node(nodes[node_name(p)])]


def _web(cluster) -> tuple[dict | None, Result | None]:
    """Deployment web with the exercise's replicas, or the failure that says what is wrong with it."""
    deployment = cluster.deployment("web", NAMESPACE)
    if deployment is None:
        return None, failed(f"there is no Deployment web in namespace {NAMESPACE}",
                            "`kubectl create deployment` or `kubectl apply -f` a manifest creates one")
    replicas = (deployment.get("spec") or {}).get("replicas", 1)
    if replicas != WEB_REPLICAS:
        return None, failed(f"Deployment web asks for {replicas} replicas; the exercise asks for {WEB_REPLICAS}",
                            "`kubectl scale deployment web --replicas=N`")
    return deployment, None


def _not_ready(deployment: dict, pods: list[dict]) -> Result | None:
    ready = (deployment.get("status") or {}).get("readyReplicas") or 0
    if ready >= WEB_REPLICAS:
        return None
    waiting = [p for p in pods if not is_running(p)]
    detail = f"; {name(waiting[0])} is {state_text(waiting[0])}" if waiting else ""
    return failed(f"Deployment web has {ready} of {WEB_REPLICAS} replicas ready{detail}",
                  "`kubectl rollout status deployment/web` waits for them; `kubectl describe pod POD` says why "
                  "one does not start")


def _gpu_taint_on(node: dict) -> bool:
    return any(t.get("effect") in ("NoSchedule", "NoExecute") for t in gpu_taints(node))


@check("lab02.web_before_taint", "answer: how many of web's pods the scheduler put on GPU nodes before the taint",
       answer="web_pods_on_gpu_nodes")
def web_before_taint(cluster, answer) -> Result:
    nodes = cluster.nodes()
    if not gpu_nodes(nodes):
        return _no_gpu_nodes()
    deployment, problem = _web(cluster)
    if problem is not None:
        return problem
    pods = web_pods(cluster, deployment)
    problem = _not_ready(deployment, pods)
    if problem is not None:
        return problem
    on_gpu = _on_gpu_nodes(cluster, pods)
    tainted = [name(n) for n in gpu_nodes(nodes) if _gpu_taint_on(n)]
    if tainted and not on_gpu:
        return failed(f"the GPU nodes are tainted ({', '.join(tainted)}) and none of web's pods runs on them: these "
                      "pods were scheduled with the taint in place (or replaced since), so they show nothing about "
                      "a cluster without it",
                      "this exercise comes before the taint: create web while the GPU nodes are untainted, count, "
                      "and taint them in the next exercise (`kubectl taint nodes NODE nvidia.com/gpu-` removes the "
                      "taint, `kubectl rollout restart deployment/web` replaces the pods)")
    hint = ("`kubectl get pods -l app=web -o wide` shows each pod's node; `kubectl get nodes -L "
            "nvidia.com/gpu.product` shows which nodes have GPUs")
    count = as_int(answer)
    if count is None:
        return failed(f"{answer!r} is not a whole number of pods", hint)
    if count != len(on_gpu):
        return failed(f"{count} is not how many of web's {len(pods)} pods run on GPU nodes now", hint)
    if not on_gpu:
        return passed(f"right: none of web's pods landed on a GPU node this time, but nothing kept the scheduler "
                      f"from putting them there: without a taint, a GPU node is open to every pod")
    where = ", ".join(sorted({node_name(p) for p in on_gpu}))
    return passed(f"right: {len(on_gpu)} of web's {len(pods)} pods run on GPU nodes ({where}): nothing kept them "
                  "off, and the scheduler prefers the nodes with the most free CPU and memory (LeastAllocated "
                  "scoring), which big GPU machines are; those pods now take room GPU work needs")


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


TAINT_EFFECT = MultipleChoice(
    options={
        "a": "They were evicted and recreated on the CPU node.",
        "b": "They turned Pending until the CPU node had room.",
        "c": "The Deployment was scaled down to fit the CPU node.",
        "d": "Nothing: they keep running on the GPU nodes.",
    },
    why_not={
        "a": "evicting running pods is what a NoExecute taint does (the taint eviction controller acts on it); "
             "NoSchedule only filters where new pods may be scheduled",
        "b": "a pod bound to a node is never scheduled again: Pending is for pods not on a node yet",
        "c": "a taint never changes a Deployment's replicas; only you, or an autoscaler, do",
    },
    hint="compare `kubectl get pods -l app=web -o wide` before and after the taint; `kubectl explain "
         "node.spec.taints.effect` lists what each effect does",
    key="d",
    because="NoSchedule only keeps new pods without a matching toleration from being scheduled there; it never "
            "moves pods that already run.",
)


@check("lab02.taint_kept_pods", "answer: what the NoSchedule taint did to web's pods already on GPU nodes",
       answer="taint_effect", question=TAINT_EFFECT)
def taint_kept_pods(cluster, answer) -> Result:
    result = TAINT_EFFECT.judge(answer)
    deployment = cluster.deployment("web", NAMESPACE) if result.passed else None
    still = _on_gpu_nodes(cluster, web_pods(cluster, deployment)) if deployment else []
    if still:
        return passed(f"{result.reason} Here {len(still)} of web's pods still run on GPU nodes.")
    return result


@check("lab02.web_off_gpu_nodes", "Deployment web: 3 ready replicas, none on a GPU node")
def web_off_gpu_nodes(cluster) -> Result:
    deployment, problem = _web(cluster)
    if problem is not None:
        return problem
    pods = web_pods(cluster, deployment)
    on_gpu = _on_gpu_nodes(cluster, pods)
    if on_gpu:
        where = ", ".join(f"{name(p)} on {node_name(p)}" for p in on_gpu)
        return failed(f"web pods run on GPU nodes: {where}",
                      "a NoSchedule taint keeps new pods off a node but leaves running ones where they are: replace "
                      "web's pods (`kubectl rollout restart deployment/web`) and the new ones cannot land on the "
                      "tainted nodes, since web has no toleration; a nodeSelector or node affinity can keep it on "
                      "CPU nodes too")
    problem = _not_ready(deployment, pods)
    if problem is not None:
        return problem
    ready = (deployment.get("status") or {}).get("readyReplicas") or 0
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
