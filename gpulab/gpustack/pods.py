"""What the stack asks of a pod: is it running, does it still hold devices, which operand is it.

Shared by the reconciler and the components it plays (MIG manager, upgrade controller); the
operand's identity is its ``app`` label, as the operator's own selectors use it, except
nfd-worker whose chart labels it ``app.kubernetes.io/name``/``role``.
"""
from __future__ import annotations

OPERATOR_APP = "gpu-operator"
NFD_WORKER = "nfd-worker"
TERMINAL = ("Succeeded", "Failed")


def meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


def running(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and not meta(pod).get("deletionTimestamp")


def active(pod: dict) -> bool:
    """A pod that holds its devices: not finished (a terminating pod keeps them until it is gone)."""
    return (pod.get("status") or {}).get("phase") not in TERMINAL


def operand_app(pod: dict) -> str | None:
    labels = meta(pod).get("labels") or {}
    if labels.get("app.kubernetes.io/name") == "node-feature-discovery" and labels.get("role") == "worker":
        return NFD_WORKER
    return labels.get("app")


def containers_ready(pod: dict) -> bool:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return bool(statuses) and all(s.get("ready") for s in statuses)
