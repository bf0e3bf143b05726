"""Lab 03, the H100 pod: one whole GPU selected by product, reading why a pod is Pending, why 0.5 GPU is refused.

The questions are multiple choice, and each option may also be given in the
words the cluster itself uses for it (the scheduler's reason, the API
server's error), so a learner can answer by quoting what they read. Which
option is right is not stored: it is read from the cluster each time (the
scheduler's FailedScheduling message for ``stuck-worker``, the API server's
answer to a half-GPU pod created with ``dryRun=All``).
"""
from __future__ import annotations

from dataclasses import replace

import yaml

from .answers import NO_ANSWER, MultipleChoice
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


PENDING = MultipleChoice(
    options={
        "a": f"No node it selects has a free {GPU} left.",
        "b": "No node carries the GPU product the pod selects.",
        "c": "The pod does not tolerate the GPU nodes' taint.",
        "d": "The API server has not finished creating the pod.",
    },
    why_not={      # what the scheduler does not report; the check says why a reason it does report is not the one
        "a": f"the scheduler does not report Insufficient {GPU} for stuck-worker",
        "b": "the scheduler reports no node whose labels fail the pod's nodeSelector",
        "c": "the scheduler reports no untolerated taint for stuck-worker",
        "d": "the pod exists: the API server stored it, and Pending with a FailedScheduling event is the "
             "scheduler's verdict",
    },
    hint="`kubectl describe pod stuck-worker` lists the scheduler's FailedScheduling event; its message gives a "
         "reason per group of nodes: pick the one for the node the pod selects (or quote that reason)",
    key="c",            # in the lab's state; the check reads the right option off the scheduler's message
)


def _option_of_reason(reason: str) -> str | None:
    """Which option a scheduler reason is (``node(s) had untolerated taint(s) {...}`` is option c)."""
    if "untolerated taint" in reason:
        return "c"
    if reason.startswith(f"Insufficient {GPU}"):
        return "a"
    if reason == AFFINITY_MISMATCH:
        return "b"
    return None


@check("lab03.pending_reason", "answer: why stuck-worker is Pending, as the scheduler says it",
       answer="pending_reason", question=PENDING)
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
    said = {_option_of_reason(r) for r in reasons} - {None}
    right = {_option_of_reason(r) for r in decisive} - {None}
    beside = {"b": "that is why the scheduler ruled out the nodes stuck-worker does not select; it is not what "
                   "stops it on the nodes it does select"} if "b" in said else {}
    question = replace(
        PENDING,
        why_not={**PENDING.why_not, **beside},
        words={option: tuple(r for r in reasons if _option_of_reason(r) == option) for option in said},
        quotes={option: tuple(r for r in decisive if _option_of_reason(r) == option) for option in right})
    picked = question.pick(answer)
    if picked in right:
        quoted = next(r for r in decisive if _option_of_reason(r) == picked)
        return passed(f"right: ({picked}) {PENDING.options[picked]} The scheduler reports \"{quoted}\" for "
                      f"stuck-worker: {message}")
    return question.judge(answer, key=next(iter(right), ""))


def _manifest_pod(manifest) -> dict | None:
    """The pod ``infer-worker`` in the manifest the learner applied (YAML or JSON text, or a dict)."""
    try:
        documents = [manifest] if isinstance(manifest, dict) else list(yaml.safe_load_all(str(manifest)))
    except yaml.YAMLError:
        return None
    return next((d for d in documents if isinstance(d, dict) and d.get("kind") == "Pod"
                 and (d.get("metadata") or {}).get("name") == "infer-worker"), None)


def _absent(cluster, manifest) -> Result:
    """Why there is no pod infer-worker: the API server's refusal of the learner's manifest, when it refuses it."""
    hint = "start from the exercise's manifest, keep it in infer_worker and `kubectl apply -f -` it"
    pod = _manifest_pod(manifest) if manifest is not NO_ANSWER else None
    if pod is None:
        return failed(f"there is no pod infer-worker in namespace {NAMESPACE}", hint)
    status = cluster.dry_run_create_pod(pod, (pod.get("metadata") or {}).get("namespace") or NAMESPACE)
    if status is None:
        return failed(f"there is no pod infer-worker in namespace {NAMESPACE}: the API server accepts the manifest "
                      "in infer_worker, but it was not applied", "run the cell that applies it")
    return failed(f"there is no pod infer-worker: the API server refused to create it ({status.get('reason')}): "
                  f"{status.get('message')}", "kubectl apply printed the same refusal; fix the field it names")


@check("lab03.infer_worker_running", "infer-worker: 1 whole GPU, selected by product, Running on the H100 node",
       answer="infer_worker", optional=True)
def infer_worker_running(cluster, manifest=NO_ANSWER) -> Result:
    pod = cluster.pod("infer-worker", NAMESPACE)
    if pod is None:
        return _absent(cluster, manifest)
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


FRACTION = MultipleChoice(
    options={
        "a": "The scheduler refuses it: no node has half a GPU free.",
        "b": f"The API server refuses it: {GPU} must be whole.",
        "c": "The kubelet refuses it: the device plugin cannot split a GPU.",
        "d": "Nothing refuses it: the node just has no free GPU right now.",
    },
    why_not={
        "a": "the pod never reaches the scheduler: the API server refuses it when it is created, before it is stored",
        "b": "",       # never wrong while the API server refuses the pod
        "c": "the pod never reaches a node: the API server refuses it before it is stored, so no kubelet or device "
             "plugin sees it",
        "d": "fractions are not fine: the API server refuses the pod outright, whatever GPUs are free",
    },
    hint=f"try it: `kubectl apply --dry-run=server -f` a pod with {GPU}: 0.5 in its limits, and read the error "
         "(you may answer with the option's letter or quote the error's reason)",
    words={"b": ("must be an integer",)},
    key="b",
    because="An extended resource is counted in whole units: its request must be an integer.",
)


@check("lab03.fraction_refused", "answer: why nvidia.com/gpu: 0.5 is refused", answer="fraction_refused",
       question=FRACTION)
def fraction_refused(cluster, answer) -> Result:
    status = cluster.dry_run_create_pod(FRACTION_PROBE, NAMESPACE)
    if status is None:
        return failed(f"this cluster accepted a pod asking for {GPU}: 0.5, so there is no refusal to explain",
                      "the API servers this course targets refuse it; are you connected to the right cluster?")
    causes = tuple(c["message"] for c in (status.get("details") or {}).get("causes") or [] if c.get("message"))
    result = replace(FRACTION, quotes={FRACTION.key: causes}).judge(answer)   # its error quoted, as kubectl prints it
    if result.passed:
        return passed(f"{result.reason} It refuses the pod before it is stored: {status.get('message')}")
    return result


CHECK_YOURSELF = MultipleChoice(
    options={
        "a": "A memory amount would be split evenly among the pods, which is slower.",
        "b": "The scheduler reads free GPU memory from nvidia-smi; 1 means all of it.",
        "c": "No reason: memory: 40Gi would get half of an 80 GB GPU just as well.",
        "d": "The device plugin advertises whole GPUs, so the scheduler counts GPUs.",
    },
    why_not={
        "a": "Kubernetes has no resource for GPU memory at all: a pod can only ask for the devices the device "
             "plugin advertises, counted whole",
        "b": "the scheduler never talks to a GPU: it compares the counts the device plugin advertises in the node's "
             "status with what pods request",
        "c": "memory is the node's RAM, not the GPU's: a memory request gives the pod no GPU at all",
    },
    hint=f"`kubectl describe node` lists {GPU} under Allocatable: what kind of number is it, and who puts it there?",
    key="d",
    because=f"It advertises them as an integer resource ({GPU}), and Kubernetes knows nothing of GPU memory.",
)


@check("lab03.check_yourself", "check yourself: why nvidia.com/gpu: 1 rather than a memory amount",
       answer="check_yourself", question=CHECK_YOURSELF)
def check_yourself(cluster, answer) -> Result:
    return CHECK_YOURSELF.judge(answer)
