"""The warnings kube-apiserver sends back when a pod or pod template is created (``Warning:`` lines in kubectl).

A port of the parts of pkg/api/pod/warnings.go (warningsForPodSpecAndMeta)
a learner's manifests meet: deprecated node labels in ``nodeSelector`` and
node affinity (pkg/api/node/util.go deprecatedNodeLabels), a topology spread
constraint without a labelSelector, deprecated annotations, fractional byte
quantities and an env var that hides an earlier one. Warnings never reject the
object; the strategies return them from WarningsOnCreate.
"""
from __future__ import annotations

from fractions import Fraction

from .. import quantity
from ..gofmt import go_quote
from .path import Path

# pkg/api/node/util.go deprecatedNodeLabels
DEPRECATED_NODE_LABELS = {
    "beta.kubernetes.io/arch": 'deprecated since v1.14; use "kubernetes.io/arch" instead',
    "beta.kubernetes.io/os": 'deprecated since v1.14; use "kubernetes.io/os" instead',
    "failure-domain.beta.kubernetes.io/region": 'deprecated since v1.17; use "topology.kubernetes.io/region" instead',
    "failure-domain.beta.kubernetes.io/zone": 'deprecated since v1.17; use "topology.kubernetes.io/zone" instead',
    "beta.kubernetes.io/instance-type": 'deprecated since v1.17; use "node.kubernetes.io/instance-type" instead',
    "app.kubernetes.io/created-by": "deprecated since v1.9",
    "scheduler.alpha.kubernetes.io/preferAvoidPods": "deprecated since v1.22; use Taints and Tolerations instead",
    "node-role.kubernetes.io/master": 'use "node-role.kubernetes.io/control-plane" instead',
}
_DEPRECATED_ANNOTATIONS = {
    "scheduler.alpha.kubernetes.io/critical-pod": 'non-functional in v1.16+; use the "priorityClassName" field instead',
    "security.alpha.kubernetes.io/sysctls": 'non-functional in v1.11+; use the "sysctls" field instead',
    "security.alpha.kubernetes.io/unsafe-sysctls": 'non-functional in v1.11+; use the "sysctls" field instead',
}
_BYTE_RESOURCES = ("memory", "ephemeral-storage")


def pod_warnings(pod: dict) -> list[str]:
    """GetWarningsForPod for a new pod."""
    return _warnings(Path(), pod.get("spec") or {}, pod.get("metadata") or {})


def template_warnings(obj: dict) -> list[str]:
    """GetWarningsForPodTemplate for the ``spec.template`` of a new workload."""
    template = (obj.get("spec") or {}).get("template") or {}
    return _warnings(Path("spec").child("template"), template.get("spec") or {}, template.get("metadata") or {})


def _warnings(base: Path, spec: dict, meta: dict) -> list[str]:
    spec_path = base.child("spec")
    out = [f"{spec_path.child('nodeSelector').key(k)}: {DEPRECATED_NODE_LABELS[k]}"
           for k in spec.get("nodeSelector") or {} if k in DEPRECATED_NODE_LABELS]
    node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = (node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
    terms = spec_path.child("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                            "nodeSelectorTerms")
    for i, term in enumerate(required or []):
        out += _term_warnings(term, terms.index(i))
    preferred = spec_path.child("affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
    for i, weighted in enumerate(node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
        out += _term_warnings(weighted.get("preference") or {}, preferred.index(i).child("preference"))
    for i, constraint in enumerate(spec.get("topologySpreadConstraints") or []):
        at = spec_path.child("topologySpreadConstraints").index(i)
        key = constraint.get("topologyKey", "")
        if key in DEPRECATED_NODE_LABELS:
            out.append(f"{at.child('topologyKey')}: {key} is {DEPRECATED_NODE_LABELS[key]}")
        if constraint.get("labelSelector") is None:
            out.append(f"{at.child('labelSelector')}: a null labelSelector results in matching no pod")
    annotations = meta.get("annotations") or {}
    out += [f"{base.child('metadata', 'annotations').key(k)}: {message}"
            for k, message in _DEPRECATED_ANNOTATIONS.items() if k in annotations]
    for kind in ("initContainers", "containers", "ephemeralContainers"):  # VisitContainersWithPath's order
        for i, container in enumerate(spec.get(kind) or []):
            out += _container_warnings(container, spec_path.child(kind).index(i))
    return out


def _term_warnings(term: dict, path: Path) -> list[str]:
    return [f"{path.child('matchExpressions').index(i).child('key')}: {e.get('key')} is "
            f"{DEPRECATED_NODE_LABELS[e.get('key')]}"
            for i, e in enumerate(term.get("matchExpressions") or []) if e.get("key") in DEPRECATED_NODE_LABELS]


def _container_warnings(container: dict, path: Path) -> list[str]:
    out = []
    resources = container.get("resources") or {}
    for name in _BYTE_RESOURCES:
        for kind in ("limits", "requests"):
            value = (resources.get(kind) or {}).get(name)
            if value is not None and quantity.parse_quantity(value) % 1 != Fraction(0):
                out.append(f"{path.child('resources', kind).key(name)}: fractional byte value {go_quote(str(value))} "
                           "is invalid, must be an integer")
    seen: set[str] = set()
    for i, var in enumerate(container.get("env") or []):
        name = var.get("name", "")
        if name not in seen:
            seen.add(name)
            continue
        ref, value = f"$({name})", var.get("value") if isinstance(var.get("value"), str) else ""
        if var.get("valueFrom") is not None or value == ref or ref not in value:
            out.append(f"{path.child('env').index(i)}: hides previous definition of {go_quote(name)}, which may be "
                       "dropped when using apply")
    return out
