"""Lab 03, the H100 pod: one whole GPU selected by product, reading why a pod is Pending, why 0.5 GPU is refused."""
from __future__ import annotations

import re

from .answers import normalise, words
from .gpus import GPU, PRODUCT, family, name, nodes_of_family
from .kube import is_running, node_name, phase, pod_request, scheduler_reasons, state_text, unschedulable_message
from .registry import check
from .result import Result, failed, passed

NAMESPACE = "default"
AFFINITY_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
HOSTNAME = "kubernetes.io/hostname"
# The pod whose refusal the learner explains; created with dryRun=All, so nothing is stored.
FRACTION_PROBE = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "gpulab-half-gpu-probe"},
    "spec": {"containers": [{"name": "infer", "image": "nvcr.io/nvidia/tritonserver:25.01-py3",
                             "resources": {"limits": {GPU: "0.5"}}}]},
}


def _required_terms(pod: dict) -> list[dict]:
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    return (affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []


def product_selection(pod: dict) -> tuple[str, list[str]]:
    """How the pod picks its node by GPU product: ("selector"|"affinity", product values), or ("", [])."""
    spec = pod.get("spec") or {}
    wanted = (spec.get("nodeSelector") or {}).get(PRODUCT)
    if wanted is not None:
        return "selector", [wanted]
    values: list[str] = []
    terms = _required_terms(pod)
    for term in terms:  # terms are ORed: every one must constrain the product
        matching = [e for e in term.get("matchExpressions") or []
                    if e.get("key") == PRODUCT and e.get("operator") == "In"]
        if not matching:
            return "", []
        values += [v for e in matching for v in e.get("values") or []]
    return ("affinity", values) if terms else ("", [])


def _pinned_by_name(pod: dict) -> bool:
    """A hostname nodeSelector, or node affinity on the hostname label or the node's metadata.name field."""
    if HOSTNAME in ((pod.get("spec") or {}).get("nodeSelector") or {}):
        return True
    return any(e.get("key") in (HOSTNAME, "metadata.name") for term in _required_terms(pod)
               for e in (term.get("matchExpressions") or []) + (term.get("matchFields") or []))


@check("lab03.infer_worker_running", "infer-worker: 1 whole GPU, selected by product, Running on the H100 node")
def infer_worker_running(cluster) -> Result:
    pod = cluster.pod("infer-worker", NAMESPACE)
    if pod is None:
        return failed(f"there is no pod infer-worker in namespace {NAMESPACE}",
                      "start from course/manifests/infer-worker.yaml and `kubectl apply -f` it")
    gpus = pod_request(pod, GPU)
    if gpus != 1:
        said = "does not request" if gpus == 0 else f"requests {gpus}"
        return failed(f"infer-worker {said} {GPU}; the exercise asks for one whole GPU",
                      f"a GPU is requested under resources.limits as {GPU}")
    how, values = product_selection(pod)
    if not how:
        if _pinned_by_name(pod):
            return failed("infer-worker is tied to a node by its name; the exercise selects the node by its GPU "
                          f"product (the {PRODUCT} label), which keeps working when nodes are replaced",
                          f"a nodeSelector or node affinity on {PRODUCT}")
        return failed(f"infer-worker does not select a GPU product: without a {PRODUCT} selector it may run on "
                      "any node with a free GPU", f"a nodeSelector or node affinity on {PRODUCT}")
    nodes = cluster.nodes()
    h100 = nodes_of_family(nodes, "h100")
    not_h100 = [v for v in values if family(v) != "h100"]
    if not_h100:
        return failed(f"infer-worker selects {PRODUCT}={not_h100[0]}, which is not an H100",
                      f"`kubectl get nodes -L {PRODUCT}` shows each node's product")
    if not any(v in {(n["metadata"].get("labels") or {}).get(PRODUCT) for n in h100} for v in values):
        return failed(f"infer-worker selects {PRODUCT}={values[0]}, and no node has that value",
                      f"copy the value from `kubectl get nodes -L {PRODUCT}`")
    if not is_running(pod):
        message = unschedulable_message(pod) or ""
        hint = ("the GPU nodes are tainted (lab 02): the pod needs a toleration for the taint"
                if "untolerated taint" in message else "`kubectl describe pod infer-worker` shows its events")
        return failed(f"infer-worker is {state_text(pod)}", hint)
    if node_name(pod) not in {name(n) for n in h100}:
        return failed(f"infer-worker runs on {node_name(pod)}, which is not an H100 node",
                      f"`kubectl get nodes -L {PRODUCT}`")
    return passed(f"infer-worker runs on H100 node {node_name(pod)} with one whole {GPU}, "
                  f"selected by {PRODUCT} ({how})")


def _core(reason: str) -> str:
    """The words that carry a scheduler reason: ``node(s) had untolerated taint(s)`` -> ``untolerated taint``."""
    return re.sub(r"^node (had |were |didn't )?", "", words(reason))


@check("lab03.pending_reason", "answer: why stuck-worker is Pending, as the scheduler says it", answer=True)
def pending_reason(cluster, answer) -> Result:
    reset = "`gpulab lab reset lab03-h100-pod` recreates it"
    pod = cluster.pod("stuck-worker", NAMESPACE)
    if pod is None:
        return failed("there is no pod stuck-worker to look at", reset)
    message = unschedulable_message(pod)
    if message is None:
        if phase(pod) != "Pending" or node_name(pod):
            return failed(f"stuck-worker is not stuck any more ({state_text(pod)}), so there is no reason to read",
                          reset)
        return failed("the scheduler has not reported on stuck-worker yet", "wait a few seconds and check again")
    reasons = scheduler_reasons(message) or {message: 1}
    decisive = [r for r in reasons if r != AFFINITY_MISMATCH] or list(reasons)
    given = words(answer)
    hint = ("`kubectl describe pod stuck-worker` lists the scheduler's FailedScheduling event; quote the reason "
            "from its message")
    if not given:
        return failed("the answer is empty", hint)
    for reason in decisive:
        if _core(reason) in given:
            return passed(f"right: the scheduler reports \"{reason}\" for stuck-worker: {message}")
    if AFFINITY_MISMATCH in reasons and _core(AFFINITY_MISMATCH) in given:
        return failed(f"{normalise(answer)!r} is why the scheduler ruled out the nodes stuck-worker does not "
                      "select; it is not what stops it on the nodes it does select", hint)
    return failed(f"{normalise(answer)!r} is not one of the reasons the scheduler gives for stuck-worker", hint)


@check("lab03.fraction_refused", "answer: why nvidia.com/gpu: 0.5 is refused", answer=True)
def fraction_refused(cluster, answer) -> Result:
    status = cluster.dry_run_create_pod(FRACTION_PROBE, NAMESPACE)
    if status is None:
        return failed(f"this cluster accepted a pod asking for {GPU}: 0.5, so there is no refusal to explain",
                      "the API servers this course targets refuse it; are you connected to the right cluster?")
    causes = (status.get("details") or {}).get("causes") or [{"message": status.get("message", "")}]
    detail = causes[0].get("message", "").rsplit(": ", 1)[-1]     # "must be an integer"
    given = normalise(answer)
    hint = (f"try it: `kubectl apply --dry-run=server -f` a pod with {GPU}: 0.5 in its limits, and read "
            "the error")
    if (detail and detail.lower() in given) or re.search(r"\b(integers?|whole|fractions?|fractional)\b", given):
        return passed(f"right: the API server refuses it before it is stored: {status.get('message')}")
    if re.search(r"insufficient|pending|schedul|no node|not enough", given):
        return failed(f"{given!r} describes scheduling, but the pod never reaches the scheduler: the API server "
                      "refuses it when it is created", hint)
    return failed(f"{given!r} is not why the API server refuses the pod", hint)
