"""Which PersistentVolume a claim can bind, and whether a pod's claims fit a node: pure functions shared by the
PersistentVolume controller and the scheduler's VolumeBinding plugin.

Ports of pkg/controller/volume/persistentvolume/util (FindMatchingVolume,
CheckVolumeModeMismatches, IsDelayBindingMode, the bind annotations) and of
the decisions of pkg/scheduler/framework/plugins/volumebinding/binder.go
(FindPodVolumes: bound claims' node affinity, unbound immediate claims,
static matches and dynamic provisioning for delayed-binding claims).

For the scheduler: :func:`check_pod_volumes` is the plugin's Filter (its
failure reasons are upstream's), and for a pod it binds, a claim in
:attr:`PodVolumes.provision` gets :data:`SELECTED_NODE` set to the node
(:func:`selected_node_patch`, the PreBind step) and a claim in
:attr:`PodVolumes.static` is bound to its volume by
:func:`bind_volume_patch`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from .quantity import parse_quantity
from .scheduler.nodeselectors import term_matches
from .selectors import label_selector_from_dict, matches_labels

SELECTED_NODE = "volume.kubernetes.io/selected-node"
BETA_CLASS = "volume.beta.kubernetes.io/storage-class"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
# scheduler volumebinding reasons (binder.go)
REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


def claim_class(pvc: dict) -> str:
    """GetPersistentVolumeClaimClass: the beta annotation, else spec.storageClassName, else ""."""
    annotations = (pvc.get("metadata") or {}).get("annotations") or {}
    return annotations.get(BETA_CLASS) or (pvc.get("spec") or {}).get("storageClassName") or ""


def volume_class(pv: dict) -> str:
    annotations = (pv.get("metadata") or {}).get("annotations") or {}
    return annotations.get(BETA_CLASS) or (pv.get("spec") or {}).get("storageClassName") or ""


def is_delayed_binding(pvc: dict, classes: dict[str, dict]) -> bool:
    """IsDelayBindingMode: the claim's class binds WaitForFirstConsumer."""
    sc = classes.get(claim_class(pvc))
    return sc is not None and sc.get("volumeBindingMode") == "WaitForFirstConsumer"


def _requested(pvc: dict) -> Fraction:
    value = ((((pvc.get("spec") or {}).get("resources") or {}).get("requests")) or {}).get("storage")
    return parse_quantity(value) if value is not None else Fraction(0)


def _capacity(pv: dict) -> Fraction:
    value = ((pv.get("spec") or {}).get("capacity") or {}).get("storage")
    return parse_quantity(value) if value is not None else Fraction(0)


def volume_fits_node(pv: dict, node: dict) -> bool:
    """CheckNodeAffinity: the volume's required node affinity admits the node (no affinity admits every node)."""
    terms = ((((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required")) or {}).get("nodeSelectorTerms")
    if not terms:
        return True
    labels = (node.get("metadata") or {}).get("labels") or {}
    return any(term_matches(t, labels, node["metadata"]["name"]) for t in terms)


def prebound_to(pv: dict, pvc: dict) -> bool:
    ref = (pv.get("spec") or {}).get("claimRef")
    if ref is None:
        return False
    meta = pvc["metadata"]
    return ref.get("name") == meta["name"] and ref.get("namespace") == meta.get("namespace") and \
        (not ref.get("uid") or ref.get("uid") == meta.get("uid"))


def volume_matches(pv: dict, pvc: dict, node: dict | None = None) -> bool:
    """The checks of FindMatchingVolume for one volume: free (or pre-bound to this claim), same class and volume
    mode, every access mode the claim asks for, enough capacity, the claim's selector, the node's affinity."""
    spec, claim_spec = pv.get("spec") or {}, pvc.get("spec") or {}
    if pv["metadata"].get("deletionTimestamp"):
        return False
    ref = spec.get("claimRef")
    if ref is not None and not prebound_to(pv, pvc):
        return False
    if (pv.get("status") or {}).get("phase") in ("Released", "Failed"):
        return False
    if volume_class(pv) != claim_class(pvc):
        return False
    if (spec.get("volumeMode") or "Filesystem") != (claim_spec.get("volumeMode") or "Filesystem"):
        return False
    if not set(claim_spec.get("accessModes") or []) <= set(spec.get("accessModes") or []):
        return False
    if _capacity(pv) < _requested(pvc):
        return False
    selector = claim_spec.get("selector")
    if selector is not None and not matches_labels(label_selector_from_dict(selector),
                                                   pv["metadata"].get("labels")):
        return False
    return node is None or volume_fits_node(pv, node)


def find_matching_volume(pvc: dict, volumes: list[dict], node: dict | None = None,
                         excluded: set[str] = frozenset()) -> dict | None:
    """FindMatchingVolume: a volume pre-bound to the claim first, else the smallest one that fits."""
    best = None
    for pv in volumes:
        if pv["metadata"]["name"] in excluded or not volume_matches(pv, pvc, node):
            continue
        if prebound_to(pv, pvc):
            return pv
        if best is None or _capacity(pv) < _capacity(best):
            best = pv
    return best


def can_provision(pvc: dict, classes: dict[str, dict], node: dict) -> bool:
    """checkVolumeProvisions: the class exists, has a provisioner, and its allowed topologies admit the node."""
    sc = classes.get(claim_class(pvc))
    if sc is None or not sc.get("provisioner") or sc.get("provisioner") == "kubernetes.io/no-provisioner":
        return False
    topologies = sc.get("allowedTopologies") or []
    labels = (node.get("metadata") or {}).get("labels") or {}
    return not topologies or any(
        all(labels.get(e.get("key")) in (e.get("values") or []) for e in t.get("matchLabelExpressions") or [])
        for t in topologies)


@dataclass
class PodVolumes:
    """FindPodVolumes' answer for one node: whether the pod fits, upstream's reasons when not, and what binding
    the pod there must do (claims to bind to a volume, claims to provision on the node)."""

    feasible: bool = True
    reasons: list[str] = field(default_factory=list)
    unresolvable: bool = False
    static: dict[str, str] = field(default_factory=dict)
    provision: list[str] = field(default_factory=list)


def pod_claim_names(pod: dict) -> list[str]:
    return [v["persistentVolumeClaim"]["claimName"] for v in (pod.get("spec") or {}).get("volumes") or []
            if (v.get("persistentVolumeClaim") or {}).get("claimName")]


def check_pod_volumes(pod: dict, node: dict, claims: dict[str, dict], volumes: dict[str, dict],
                      classes: dict[str, dict]) -> PodVolumes:
    """The VolumeBinding plugin's PreFilter + Filter for one node.

    ``claims`` are the pod's namespace's claims by name, ``volumes`` every volume
    by name, ``classes`` every StorageClass by name. A missing claim answers
    ``persistentvolumeclaim "x" not found`` (unresolvable), as PreFilter does.
    """
    out = PodVolumes()
    taken: set[str] = set()
    for name in pod_claim_names(pod):
        pvc = claims.get(name)
        if pvc is None or pvc["metadata"].get("deletionTimestamp"):
            reason = f'persistentvolumeclaim "{name}" not found' if pvc is None else \
                f'persistentvolumeclaim "{name}" is being deleted'
            return PodVolumes(False, [reason], unresolvable=True)
        bound = (pvc.get("spec") or {}).get("volumeName")
        if bound:
            pv = volumes.get(bound)
            if pv is None:
                return PodVolumes(False, [REASON_PV_NOT_EXIST], unresolvable=True)
            if not volume_fits_node(pv, node):
                out.feasible = False
                out.reasons.append(REASON_NODE_CONFLICT)
            continue
        if not is_delayed_binding(pvc, classes):
            return PodVolumes(False, [REASON_UNBOUND_IMMEDIATE], unresolvable=True)
        selected = (pvc["metadata"].get("annotations") or {}).get(SELECTED_NODE)
        if selected:
            if selected != node["metadata"]["name"]:
                out.feasible = False
                out.reasons.append(REASON_NODE_CONFLICT)
            continue
        match = find_matching_volume(pvc, list(volumes.values()), node, taken)
        if match is not None:
            taken.add(match["metadata"]["name"])
            out.static[name] = match["metadata"]["name"]
        elif can_provision(pvc, classes, node):
            out.provision.append(name)
        else:
            out.feasible = False
            if REASON_BIND_CONFLICT not in out.reasons:
                out.reasons.append(REASON_BIND_CONFLICT)
    return out


def selected_node_patch(node_name: str) -> dict:
    """PreBind for a claim to provision: a merge patch naming the node the provisioner creates its volume for."""
    return {"metadata": {"annotations": {SELECTED_NODE: node_name}}}


def claim_ref(pvc: dict) -> dict:
    meta = pvc["metadata"]
    return {"kind": "PersistentVolumeClaim", "namespace": meta.get("namespace", ""), "name": meta["name"],
            "uid": meta.get("uid", ""), "apiVersion": "v1", "resourceVersion": meta.get("resourceVersion", "")}


def bind_volume_patch(pvc: dict) -> dict:
    """bindVolumeToClaim: a merge patch pointing the volume at the claim, marked bound by the controller."""
    return {"metadata": {"annotations": {BOUND_BY_CONTROLLER: "yes"}}, "spec": {"claimRef": claim_ref(pvc)}}
