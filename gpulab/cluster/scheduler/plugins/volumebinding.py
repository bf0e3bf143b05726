"""VolumeBinding (pkg/scheduler/framework/plugins/volumebinding/volume_binding.go, binder.go).

PreFilter skips pods without ``persistentVolumeClaim`` or ``ephemeral``
volumes, as upstream (``podHasPVCs``). For a pod with such volumes it fails
the pod on every node, UnschedulableAndUnresolvable, with upstream's words
when a claim is missing (``persistentvolumeclaim "<name>" not found``, or for
a generic ephemeral volume ``waiting for ephemeral volume controller to create
the persistentvolumeclaim "<pod>-<volume>"``), lost (``persistentvolumeclaim
"<name>" bound to non-existent persistentvolume "<pv>"``), being deleted
(``persistentvolumeclaim "<name>" is being deleted``), or not the pod's
(``PVC <ns>/<name> was not created for pod <ns>/<pod> (pod is not owner)``).
A claim is requeued when claims change.

Filter is FindPodVolumes per node (:func:`gpulab.cluster.volumebinding.check_pod_volumes`): a bound claim's
volume must fit the node (``node(s) had volume node affinity conflict``), an unbound Immediate claim stops the
pod (``pod has unbound immediate PersistentVolumeClaims``), an unbound WaitForFirstConsumer claim needs a
matching volume on the node or a class that can provision there (``node(s) didn't find available persistent
volumes to bind``). PreBind writes the bindings: a claim to provision gets the selected-node annotation, a
static match is bound to its volume (the PersistentVolume controller finishes both). Unlike upstream's
BindPodVolumes, PreBind does not wait for the claims to be Bound before the pod is; the node agent waits for
them as the kubelet's volume manager does. Score (the StorageCapacityScoring gate) is not ported.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ... import volumebinding as vb
from ...errors import ApiError
from ..events import ADD, UPDATE, ClusterEventWithHint
from ..interface import EnqueueExtensions, FilterPlugin, PreBindPlugin, PreFilterPlugin
from ..status import ERROR, SKIP_STATUS, Status, unresolvable

NAME = "VolumeBinding"
PVCS, PVS, CLASSES = "persistentvolumeclaims", "persistentvolumes", "storageclasses.storage.k8s.io"
MANAGER = "kube-scheduler"


class VolumeBinding(PreFilterPlugin, FilterPlugin, PreBindPlugin, EnqueueExtensions):
    NAME = NAME

    def pre_filter(self, state, pod) -> Status | None:
        has_claims = False
        for volume in pod.spec.get("volumes") or ():
            if volume.get("persistentVolumeClaim") is not None:
                name, ephemeral = volume["persistentVolumeClaim"].get("claimName") or "", False
            elif volume.get("ephemeral") is not None:
                name, ephemeral = f"{pod.name}-{volume.get('name', '')}", True
            else:
                continue
            has_claims = True
            problem = self._claim_problem(pod, name, ephemeral)
            if problem:
                return unresolvable(problem, plugin=NAME)
        if not has_claims:
            return SKIP_STATUS
        claims = {n: self.handle.get_object(PVCS, n, pod.namespace) for n in vb.pod_claim_names(pod.pod)}
        volumes = {v["metadata"]["name"]: v for v in self.handle.list_objects(PVS)}
        classes = {c["metadata"]["name"]: c for c in self.handle.list_objects(CLASSES)}
        state.write(NAME, _State(claims, volumes, classes))
        return None

    def filter(self, state, pod, node) -> Status | None:
        data: _State | None = state.read(NAME)
        if data is None:
            return None
        answer = vb.check_pod_volumes(pod.pod, node.node, data.claims, data.volumes, data.classes)
        data.by_node[node.name] = answer
        return None if answer.feasible else unresolvable(*answer.reasons, plugin=NAME)

    def pre_bind(self, state, pod, node_name: str) -> Status | None:
        data: _State | None = state.read(NAME)
        answer = data.by_node.get(node_name) if data else None
        if answer is None:
            return None
        api = self.handle.api
        try:
            for claim in answer.provision:
                api.patch(PVCS, claim, vb.selected_node_patch(node_name), "merge", pod.namespace, manager=MANAGER)
            for claim, volume in answer.static.items():
                api.patch(PVS, volume, vb.bind_volume_patch(data.claims[claim]), "merge", manager=MANAGER)
        except ApiError as exc:
            return Status(ERROR, (f"binding volumes: {exc}",), NAME)
        return None

    def _claim_problem(self, pod, name: str, ephemeral: bool) -> str:
        claim = self.handle.get_object(PVCS, name, pod.namespace)
        if claim is None:
            if ephemeral:
                return f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"'
            return f'persistentvolumeclaim "{name}" not found'
        if (claim.get("status") or {}).get("phase") == "Lost":
            volume = (claim.get("spec") or {}).get("volumeName") or ""
            return f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume "{volume}"'
        if claim["metadata"].get("deletionTimestamp"):
            return f'persistentvolumeclaim "{name}" is being deleted'
        if ephemeral and not any(ref.get("controller") and ref.get("uid") == pod.uid
                                 for ref in claim["metadata"].get("ownerReferences") or ()):
            return f"PVC {pod.namespace}/{name} was not created for pod {pod.namespace}/{pod.name} (pod is not owner)"
        return ""

    def events_to_register(self) -> list:
        return [ClusterEventWithHint(key, frozenset({ADD, UPDATE})) for key in (PVCS, PVS, CLASSES)]


@dataclass
class _State:
    """PreFilter's snapshot of the pod's claims and the cluster's volumes and classes; Filter's answer per node."""

    claims: dict[str, dict]
    volumes: dict[str, dict]
    classes: dict[str, dict]
    by_node: dict = field(default_factory=dict)
