"""Whether a pod's tolerations tolerate a node's taints.

Ports ``Toleration.ToleratesTaint`` (staging/src/k8s.io/api/core/v1/toleration.go)
and ``FindMatchingUntoleratedTaint`` / ``TolerationsTolerateTaint``
(staging/src/k8s.io/component-helpers/scheduling/corev1/helpers.go). The
v1.35 alpha comparison operators (Gt/Lt) are off by default and tolerate
nothing, as upstream with the feature gate disabled.
"""
from __future__ import annotations

DO_NOT_SCHEDULE_EFFECTS = ("NoSchedule", "NoExecute")  # helper.DoNotScheduleTaintsFilterFunc


def tolerates(toleration: dict, taint: dict) -> bool:
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


def tolerated(tolerations: list[dict], taint: dict) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


def first_untolerated(taints: list[dict], tolerations: list[dict], effects: tuple[str, ...]) -> dict | None:
    """The first taint with one of ``effects`` that no toleration tolerates."""
    for taint in taints:
        if taint.get("effect") in effects and not tolerated(tolerations, taint):
            return taint
    return None
