"""Which nodes a DaemonSet's pod belongs on, and the pod it creates there.

Ports of pkg/controller/daemon/util/daemonset_util.go (v1.36):
``AddOrUpdateDaemonPodTolerations`` (the tolerations every daemon pod gets:
the ``node.kubernetes.io/*`` condition taints only, never a custom taint such
as ``example.com/gpu``), ``CreatePodTemplate``, ``ReplaceDaemonSetPodNodeNameNodeAffinity``,
``GetTargetNodeName``, ``IsPodUpdated``; and of daemon_controller.go's
``NodeShouldRunDaemonPod``/``predicates`` and controller_history.go's
``getPatch`` (what a ControllerRevision stores). Node affinity and taint
matching reuse the scheduler's ports of component-helpers.
"""
from __future__ import annotations

from ..objects import clone
from ..scheduler.nodeselectors import RequiredSelector
from ..scheduler.tolerations import first_untolerated

REVISION_HASH = "controller-revision-hash"  # apps.DefaultDaemonSetUniqueLabelKey
TEMPLATE_GENERATION_LABEL = "pod-template-generation"  # extensions.DaemonSetTemplateGenerationKey
TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"


def _toleration(key: str, effect: str) -> dict:
    return {"key": key, "operator": "Exists", "effect": effect}


def daemon_tolerations(spec: dict) -> list[dict]:
    """The tolerations AddOrUpdateDaemonPodTolerations adds, in its order."""
    out = [_toleration("node.kubernetes.io/not-ready", "NoExecute"),
           _toleration("node.kubernetes.io/unreachable", "NoExecute"),
           _toleration("node.kubernetes.io/disk-pressure", "NoSchedule"),
           _toleration("node.kubernetes.io/memory-pressure", "NoSchedule"),
           _toleration("node.kubernetes.io/pid-pressure", "NoSchedule"),
           _toleration("node.kubernetes.io/unschedulable", "NoSchedule")]
    if spec.get("hostNetwork"):
        out.append(_toleration("node.kubernetes.io/network-unavailable", "NoSchedule"))
    return out


def _same_toleration(a: dict, b: dict) -> bool:
    """Toleration.MatchToleration: same key, operator, value and effect."""
    return all((a.get(k) or "") == (b.get(k) or "") for k in ("key", "operator", "value", "effect"))


def add_daemon_tolerations(spec: dict) -> None:
    """AddOrUpdateDaemonPodTolerations (mutates ``spec``): replace a matching toleration, else append."""
    tolerations = list(spec.get("tolerations") or [])
    for wanted in daemon_tolerations(spec):
        for i, have in enumerate(tolerations):
            if _same_toleration(wanted, have):
                tolerations[i] = wanted
                break
        else:
            tolerations.append(wanted)
    spec["tolerations"] = tolerations


def template_generation(ds: dict) -> int | None:
    value = (ds["metadata"].get("annotations") or {}).get(TEMPLATE_GENERATION_ANNOTATION)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def pod_template(ds: dict, revision_hash: str) -> dict:
    """CreatePodTemplate: the DaemonSet's template with the daemon tolerations and the generation/hash labels."""
    template = clone(ds["spec"]["template"])
    add_daemon_tolerations(template.setdefault("spec", {}))
    labels = template.setdefault("metadata", {}).get("labels") or {}
    generation = template_generation(ds)
    if generation is not None:
        labels[TEMPLATE_GENERATION_LABEL] = str(generation)
    if revision_hash:
        labels[REVISION_HASH] = revision_hash
    template["metadata"]["labels"] = labels
    return template


def pin_to_node(spec: dict, node_name: str) -> None:
    """ReplaceDaemonSetPodNodeNameNodeAffinity (mutates ``spec``): the required term becomes metadata.name In [node]."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
    affinity = spec.setdefault("affinity", {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [term]}
    else:
        required["nodeSelectorTerms"] = [term]


def target_node(pod: dict) -> str | None:
    """GetTargetNodeName: spec.nodeName, else the single node the affinity pins it to."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return spec["nodeName"]
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution")) or {}
    for term in required.get("nodeSelectorTerms") or ():
        for f in term.get("matchFields") or ():
            if f.get("key") == "metadata.name" and f.get("operator") == "In" and len(f.get("values") or ()) == 1:
                return f["values"][0]
    return None


class Eligibility:
    """NodeShouldRunDaemonPod for one DaemonSet, prepared once per sync: (should run, should continue running)."""

    def __init__(self, ds: dict):
        spec = clone(ds["spec"]["template"].get("spec") or {})
        add_daemon_tolerations(spec)
        self.node_name = spec.get("nodeName") or ""
        self.tolerations = spec["tolerations"]
        self.selector = RequiredSelector({"spec": spec})

    def __call__(self, node: dict) -> tuple[bool, bool]:
        name = node["metadata"]["name"]
        if self.node_name and self.node_name != name:
            return False, False
        if not self.selector.matches(node["metadata"].get("labels") or {}, name):
            return False, False
        taints = (node.get("spec") or {}).get("taints") or []
        if first_untolerated(taints, self.tolerations, ("NoSchedule", "NoExecute")) is not None:
            return False, first_untolerated(taints, self.tolerations, ("NoExecute",)) is None
        return True, True


def is_pod_updated(pod: dict, revision_hash: str, generation: int | None) -> bool:
    labels = pod["metadata"].get("labels") or {}
    template_matches = generation is not None and labels.get(TEMPLATE_GENERATION_LABEL) == str(generation)
    return (bool(revision_hash) and labels.get(REVISION_HASH) == revision_hash) or template_matches


def history_patch(ds: dict) -> dict:
    """getPatch: a strategic merge patch that restores this template (a ControllerRevision's data)."""
    template = clone(ds["spec"]["template"])
    template["$patch"] = "replace"
    return {"spec": {"template": template}}
