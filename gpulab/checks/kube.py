"""Kubernetes semantics the checks need, over wire-format dicts.

Checks must accept every correct solution, so they judge what the cluster will
*do* (does this toleration tolerate that taint, how many GPUs does this pod
request, why is it Pending) rather than compare spellings. Each rule follows its
upstream source, cited below; they are small enough that depending on the
embedded cluster's own ports (``gpulab.cluster``, which checks must not import
so they work on kind and real clusters) would cost more than it saves.
"""
from __future__ import annotations

import re
from decimal import Decimal


# --- taints and tolerations (staging/src/k8s.io/api/core/v1/toleration.go, ToleratesTaint) -----------------

def tolerates(toleration: dict, taint: dict) -> bool:
    """Empty effect matches all effects; empty key with Exists matches all keys; Equal (the default) compares values.

    The v1.35 alpha comparison operators (Lt/Gt) are off by default upstream and tolerate nothing.
    """
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return operator == "Exists"


def tolerated(pod: dict, taint: dict) -> bool:
    return any(tolerates(t, taint) for t in (pod.get("spec") or {}).get("tolerations") or [])


def taint_text(taint: dict) -> str:
    """``key=value:Effect`` as ``kubectl describe node`` writes it (``key:Effect`` without a value)."""
    value = taint.get("value")
    return f"{taint.get('key')}{'=' + value if value else ''}:{taint.get('effect')}"


def toleration_text(toleration: dict) -> str:
    """A toleration as ``kubectl describe pod`` prints it (kubectl describe.go printTolerationsMultilineWithIndent)."""
    key, value, effect = (toleration.get(k) or "" for k in ("key", "value", "effect"))
    text = key + (f"={value}" if value else "") + (f":{effect}" if effect else "")
    if toleration.get("operator") == "Exists" and not value:
        text += " op=Exists" if key or effect else "op=Exists"
    if toleration.get("tolerationSeconds") is not None:
        text += f" for {toleration['tolerationSeconds']}s"
    return text


# --- resources (pkg/api/v1/resource/helpers.go PodRequests; extended resources need limits) ---------------

def quantity(value) -> Decimal:
    from kubernetes.utils import parse_quantity

    return Decimal(parse_quantity(str(value)))


def container_request(container: dict, resource: str) -> Decimal:
    """A container's request for ``resource``: its request, else its limit (which the request defaults to)."""
    resources = container.get("resources") or {}
    for part in ("requests", "limits"):
        value = (resources.get(part) or {}).get(resource)
        if value is not None:
            return quantity(value)
    return Decimal(0)


def pod_request(pod: dict, resource: str) -> Decimal:
    """PodRequests: the sum over app containers, or the largest init container request if that is bigger."""
    spec = pod.get("spec") or {}
    total = sum((container_request(c, resource) for c in spec.get("containers") or []), Decimal(0))
    init = max((container_request(c, resource) for c in spec.get("initContainers") or []), default=Decimal(0))
    return max(total, init)


def requested_resources(pod: dict, prefix: str = "nvidia.com/") -> dict[str, Decimal]:
    """Every resource under ``prefix`` the pod requests, with its amount."""
    names = set()
    for container in (pod.get("spec") or {}).get("containers") or []:
        for part in ("requests", "limits"):
            names.update(n for n in ((container.get("resources") or {}).get(part) or {}) if n.startswith(prefix))
    return {name: pod_request(pod, name) for name in sorted(names)}


# --- pod state --------------------------------------------------------------------------------

def phase(pod: dict) -> str:
    return (pod.get("status") or {}).get("phase") or "Pending"


def condition(obj: dict, type_: str) -> dict | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_:
            return cond
    return None


def node_name(pod: dict) -> str | None:
    return (pod.get("spec") or {}).get("nodeName")


def is_running(pod: dict) -> bool:
    """Running as ``kubectl get pod`` would say it: phase Running, not being deleted, and no container waiting.

    A container that keeps exiting leaves its pod in phase Running while kubectl shows ``CrashLoopBackOff``;
    a check must not call that running.
    """
    return (phase(pod) == "Running" and not (pod.get("metadata") or {}).get("deletionTimestamp")
            and _waiting_reason(pod) is None)


def _waiting_reason(pod: dict) -> str | None:
    """The reason of the first container that waits instead of running (``CrashLoopBackOff``, ``ErrImagePull``)."""
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        waiting = (status.get("state") or {}).get("waiting")
        if waiting is not None:
            return waiting.get("reason") or "waiting"
    return None


def unschedulable_message(pod: dict) -> str | None:
    """The scheduler's message on an unscheduled pod (``PodScheduled=False``, reason ``Unschedulable``)."""
    cond = condition(pod, "PodScheduled")
    if cond and cond.get("status") == "False" and cond.get("message"):
        return cond["message"]
    return None


def state_text(pod: dict) -> str:
    """What ``kubectl get pod`` / ``describe`` would tell: the phase, and why it is not Running."""
    current = phase(pod)
    if current == "Pending":
        message = unschedulable_message(pod)
        if message:
            return f"Pending (not scheduled: {message})"
        reason = _waiting_reason(pod)
        if reason:
            return f"Pending ({reason} on {node_name(pod)})"
        return f"Pending (on {node_name(pod)})" if node_name(pod) else "Pending (not scheduled yet)"
    if current == "Running" and _waiting_reason(pod):
        return f"Running but not serving: a container is in {_waiting_reason(pod)} (`kubectl logs` says why)"
    if current == "Failed" and (pod.get("status") or {}).get("reason"):
        return f"Failed ({pod['status']['reason']}: {pod['status'].get('message', '')})".replace(": )", ")")
    return current


def owned_by(obj: dict, uid: str) -> bool:
    return any(ref.get("uid") == uid for ref in (obj.get("metadata") or {}).get("ownerReferences") or [])


# --- the scheduler's FailedScheduling message (pkg/scheduler/framework/types.go, FitError.Error) -----------

_FIT_ERROR = re.compile(r"^0/\d+ nodes are available: ")
_COUNTED = re.compile(r"^(?P<count>\d+) (?P<reason>.+)$")


def scheduler_reasons(message: str) -> dict[str, int]:
    """``{"node(s) had untolerated taint(s)": 3, ...}`` from ``0/N nodes are available: 3 ..., 1 .... <postfilter>``.

    The filter reasons end at the first full stop followed by a space (or the
    end); what follows is the PostFilter plugins' part (``preemption: ...``).
    Entries are ``"<count> <reason>"`` joined by ``", "``; a reason never starts
    with a digit, so a comma followed by a count starts the next entry.
    """
    head = _FIT_ERROR.match(message.strip())
    if not head:
        return {}
    text = re.split(r"\.(?: |$)", message.strip()[head.end():], maxsplit=1)[0]
    reasons: dict[str, int] = {}
    for part in re.split(r", (?=\d+ )", text):
        counted = _COUNTED.match(part.strip())
        if counted:
            reasons[counted.group("reason")] = int(counted.group("count"))
    return reasons
