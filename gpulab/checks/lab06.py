"""Lab 06, asking for GPUs by what they are: a ResourceClaimTemplate by memory, a claim shared by two containers,
and reading why a DRA pod is Pending.

The checks judge what the scheduler did with the learner's objects (is the claim allocated, to which device, with
how much memory as its ResourceSlice publishes it) and, when it did nothing, say which of the typical mistakes
stopped it: a claim or template in another namespace than the pod's, a selector over an attribute no device
publishes (the scheduler's ``CEL runtime error: no such key``), a request no device in the cluster satisfies
(``cannot allocate all claims``). A selector is read as the scheduler reads it only for the names it uses
(``device.attributes['<domain>'].<name>``, ``device.capacity['<domain>'].<name>``): evaluating CEL is the
scheduler's job, and the allocation it records is the verdict.
"""
from __future__ import annotations

import re
from dataclasses import replace

from .answers import MultipleChoice
from .kube import node_name, phase, quantity, unschedulable_message
from .registry import check
from .result import Result, failed, passed

NAMESPACE = "team-a"
DRA = ("resource.k8s.io", "v1")
GPU_CLASS = "gpu.nvidia.com"
MEMORY = "memory"
MIN_MEMORY = quantity("40Gi")
TEMPLATE, BIG_POD = "gpu-40gb", "big-gpu"
SHARED_CLAIM, PAIR_POD = "shared-gpu", "pair"
TOO_BIG_POD = "too-big"
CANNOT_ALLOCATE = "cannot allocate all claims"
RESET = "`gpulab lab reset lab06-dra` restores the starting state"
_NAME_USE = re.compile(r"device\.(attributes|capacity)\[\s*['\"]([^'\"]+)['\"]\s*\]\.([A-Za-z0-9_]+)")


def _dra(cluster, plural: str, name: str, namespace: str | None = NAMESPACE) -> dict | None:
    return cluster.custom_object(*DRA, plural, name, namespace)


def _elsewhere(cluster, plural: str, name: str) -> list[str]:
    """The namespaces other than the lab's where an object ``name`` of ``plural`` exists."""
    return sorted(o["metadata"]["namespace"] for o in cluster.custom_objects(*DRA, plural)
                  if o["metadata"]["name"] == name and o["metadata"]["namespace"] != NAMESPACE)


def _missing(cluster, plural: str, kind: str, name: str) -> Result:
    others = _elsewhere(cluster, plural, name)
    if others:
        return failed(f"{kind} {name} is in namespace {others[0]}, not {NAMESPACE}: a pod can use only claims and "
                      f"templates of its own namespace",
                      f"create it with `kubectl apply -n {NAMESPACE} -f ...` (or `metadata.namespace: {NAMESPACE}`)")
    return failed(f"there is no {kind} {name} in namespace {NAMESPACE}", f"create it in namespace {NAMESPACE}")


def devices(cluster) -> dict[tuple[str, str, str], dict]:
    """Every published device by (driver, pool, name), from the ResourceSlices."""
    out = {}
    for slice_ in cluster.custom_objects(*DRA, "resourceslices"):
        spec = slice_.get("spec") or {}
        for device in spec.get("devices") or ():
            out[(spec.get("driver"), (spec.get("pool") or {}).get("name"), device.get("name"))] = device
    return out


def _published_names(cluster) -> dict[str, set[tuple[str, str]]]:
    """``attributes``/``capacity`` -> the (domain, name) pairs some device publishes (a bare name is the driver's)."""
    found: dict[str, set[tuple[str, str]]] = {"attributes": set(), "capacity": set()}
    for (driver, _, _), device in devices(cluster).items():
        for part in found:
            for key in device.get(part) or {}:
                domain, _, short = key.rpartition("/")
                found[part].add((domain or driver, short))
    return found


def _selector_problem(cluster, expressions: list[str]) -> str | None:
    """A selector naming an attribute or capacity that no device publishes, in the learner's terms."""
    published = _published_names(cluster)
    for expression in expressions:
        for part, domain, name in _NAME_USE.findall(expression):
            if (domain, name) in published[part]:
                continue
            other = "capacity" if part == "attributes" else "attributes"
            also = (f"; {name} is published as a {'capacity' if other == 'capacity' else 'attribute'}: "
                    f"device.{other}['{domain}'].{name}") if (domain, name) in published[other] else ""
            return f"the selector uses device.{part}['{domain}'].{name}, which no device publishes{also}"
    return None


def _requests(spec: dict) -> list[dict]:
    """The claim spec's device requests, each as its ``exactly`` part (the v1 shape) with its name."""
    out = []
    for request in (spec.get("devices") or {}).get("requests") or ():
        exactly = request.get("exactly")
        out.append({"name": request.get("name"), **(exactly or {})})
    return out


def _expressions(request: dict) -> list[str]:
    return [s["cel"].get("expression") or "" for s in request.get("selectors") or () if s.get("cel")]


def _allocated(cluster, claim: dict) -> list[dict]:
    """The devices allocated to ``claim``, as their ResourceSlices publish them."""
    published = devices(cluster)
    results = ((((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")) or ()
    return [published.get((r.get("driver"), r.get("pool"), r.get("device")), {"name": r.get("device")})
            for r in results]


def memory_of(device: dict) -> str:
    return str(((device.get("capacity") or {}).get(MEMORY) or {}).get("value") or "0")


def _pending_text(pod: dict) -> str:
    message = unschedulable_message(pod)
    return f" (the scheduler: {message})" if message else ""


def _pod_claim(pod: dict, *, template: str | None = None, claim: str | None = None) -> dict | None:
    for ref in (pod.get("spec") or {}).get("resourceClaims") or ():
        if (template and ref.get("resourceClaimTemplateName") == template) or \
                (claim and ref.get("resourceClaimName") == claim):
            return ref
    return None


def _claim_of_pod(cluster, pod: dict, ref_name: str) -> dict | None:
    """The ResourceClaim the pod's entry ``ref_name`` resolved to (``status.resourceClaimStatuses``)."""
    for entry in (pod.get("status") or {}).get("resourceClaimStatuses") or ():
        if entry.get("name") == ref_name and entry.get("resourceClaimName"):
            return _dra(cluster, "resourceclaims", entry["resourceClaimName"])
    return None


@check("lab06.big_gpu_template", "ResourceClaimTemplate gpu-40gb (one GPU, at least 40Gi) used by pod big-gpu")
def big_gpu_template(cluster) -> Result:
    template = _dra(cluster, "resourceclaimtemplates", TEMPLATE)
    if template is None:
        return _missing(cluster, "resourceclaimtemplates", "ResourceClaimTemplate", TEMPLATE)
    requests = _requests(((template.get("spec") or {}).get("spec")) or {})
    if len(requests) != 1:
        return failed(f"{TEMPLATE} has {len(requests)} device requests; the exercise asks for one",
                      "one entry under spec.spec.devices.requests, with `exactly:`")
    request = requests[0]
    if request.get("deviceClassName") != GPU_CLASS:
        return failed(f"{TEMPLATE}'s request asks for class {request.get('deviceClassName')!r}, not {GPU_CLASS} "
                      "(whole GPUs)", f"deviceClassName: {GPU_CLASS}")
    if (request.get("allocationMode") or "ExactCount") != "ExactCount" or int(request.get("count") or 1) != 1:
        return failed(f"{TEMPLATE} asks for more than one GPU", "one device: allocationMode ExactCount, count 1")
    expressions = _expressions(request)
    problem = _selector_problem(cluster, expressions)
    if problem:
        return failed(f"{TEMPLATE}: {problem}", "`kubectl get resourceslices -o yaml` lists each device's "
                      "attributes and capacity; memory is a capacity, compared with quantity('40Gi')")
    if not any(f"capacity['{GPU_CLASS}'].{MEMORY}" in e.replace('"', "'") for e in expressions):
        return failed(f"{TEMPLATE} does not select by memory, so any GPU would do",
                      f"a CEL selector on device.capacity['{GPU_CLASS}'].{MEMORY} with compareTo(quantity('40Gi'))")
    pod = cluster.pod(BIG_POD, NAMESPACE)
    if pod is None:
        return failed(f"there is no pod {BIG_POD} in namespace {NAMESPACE}",
                      f"a pod whose spec.resourceClaims names resourceClaimTemplateName {TEMPLATE}")
    ref = _pod_claim(pod, template=TEMPLATE)
    if ref is None:
        return failed(f"pod {BIG_POD} does not use {TEMPLATE}",
                      f"spec.resourceClaims: [{{name: gpu, resourceClaimTemplateName: {TEMPLATE}}}], and the "
                      "container's resources.claims names it")
    claim = _claim_of_pod(cluster, pod, ref.get("name"))
    allocated = _allocated(cluster, claim) if claim else []
    if not allocated or not node_name(pod):
        return failed(f"pod {BIG_POD} is {phase(pod) or 'Pending'} and its claim is not allocated{_pending_text(pod)}",
                      "`kubectl describe pod` shows the scheduler's reason: is there a device that satisfies every "
                      "selector, and is one free?")
    small = [d for d in allocated if quantity(memory_of(d)) < MIN_MEMORY]
    if small:
        return failed(f"{BIG_POD} got {small[0].get('name')} with {memory_of(small[0])} of memory, less than 40Gi",
                      "the selector must keep smaller devices out: compareTo(quantity('40Gi')) >= 0")
    device = allocated[0]
    product = ((device.get("attributes") or {}).get("productName") or {}).get("string", "a GPU")
    return passed(f"{BIG_POD} runs on {node_name(pod)} with {device.get('name')} ({product}, {memory_of(device)})")


@check("lab06.shared_claim", "ResourceClaim shared-gpu used by both containers of pod pair")
def shared_claim(cluster) -> Result:
    claim = _dra(cluster, "resourceclaims", SHARED_CLAIM)
    if claim is None:
        return _missing(cluster, "resourceclaims", "ResourceClaim", SHARED_CLAIM)
    problem = _selector_problem(cluster, [e for r in _requests(claim.get("spec") or {}) for e in _expressions(r)])
    if problem:
        return failed(f"{SHARED_CLAIM}: {problem}", "`kubectl get resourceslices -o yaml` lists what devices publish")
    pod = cluster.pod(PAIR_POD, NAMESPACE)
    if pod is None:
        return failed(f"there is no pod {PAIR_POD} in namespace {NAMESPACE}",
                      f"a pod with two containers whose spec.resourceClaims names resourceClaimName {SHARED_CLAIM}")
    ref = _pod_claim(pod, claim=SHARED_CLAIM)
    if ref is None:
        return failed(f"pod {PAIR_POD} does not use the claim {SHARED_CLAIM}",
                      f"spec.resourceClaims: [{{name: gpu, resourceClaimName: {SHARED_CLAIM}}}]")
    containers = (pod.get("spec") or {}).get("containers") or ()
    using = [c["name"] for c in containers
             if any(e.get("name") == ref.get("name") for e in (c.get("resources") or {}).get("claims") or ())]
    if len(containers) < 2 or len(using) < len(containers):
        return failed(f"{len(using)} of {PAIR_POD}'s {len(containers)} containers use the claim; the exercise "
                      "wants two containers sharing it",
                      f"each container lists it: resources: {{claims: [{{name: {ref.get('name')}}}]}}")
    allocated = _allocated(cluster, claim)
    if not allocated or not node_name(pod):
        return failed(f"pod {PAIR_POD} is {phase(pod) or 'Pending'} and {SHARED_CLAIM} is not allocated"
                      f"{_pending_text(pod)}", "`kubectl describe pod pair` shows the scheduler's reason")
    reserved = [r.get("name") for r in (claim.get("status") or {}).get("reservedFor") or ()]
    return passed(f"{', '.join(using)} share {allocated[0].get('name')} on {node_name(pod)} "
                  f"(the claim is reserved for {', '.join(reserved) or PAIR_POD})")


PENDING = MultipleChoice(
    options={
        "a": "No node has a free nvidia.com/gpu left for it.",
        "b": "Its ResourceClaimTemplate is in another namespace.",
        "c": "The DRA driver has not prepared its device on the node.",
        "d": "No device satisfies the selectors of its claim.",
    },
    why_not={
        "a": "the pod asks for no nvidia.com/gpu at all: its GPU comes through a ResourceClaim",
        "b": f"the template is in {NAMESPACE}, beside the pod, and its claim was created",
        "c": "preparing happens on the node after scheduling; this pod has no node",
        "d": "",
    },
    hint=f"`kubectl describe pod {TOO_BIG_POD} -n {NAMESPACE}`: the FailedScheduling event's words, then the "
         "claim's selector beside `kubectl get resourceslices -o yaml`",
    key="d",             # while the scheduler says it cannot allocate the claim
    because="So the scheduler cannot allocate the claim, and a pod whose claims cannot all be allocated is placed "
            "on no node.",
)


@check("lab06.pending_reason", "answer: why too-big is Pending, as the scheduler says it", answer="pending_reason",
       question=PENDING)
def pending_reason(cluster, answer) -> Result:
    pod = cluster.pod(TOO_BIG_POD, NAMESPACE)
    if pod is None:
        return failed(f"there is no pod {TOO_BIG_POD} in namespace {NAMESPACE} to look at", RESET)
    message = unschedulable_message(pod)
    if message is None or node_name(pod):
        return failed(f"the scheduler has not reported {TOO_BIG_POD} unschedulable (yet)",
                      f"wait a few seconds; if it runs, {RESET}")
    question = replace(PENDING, words={PENDING.key: (CANNOT_ALLOCATE,)} if CANNOT_ALLOCATE in message else {})
    result = question.judge(answer)
    if result.passed:
        return passed(f"{result.reason} The scheduler: {message}")
    return result
