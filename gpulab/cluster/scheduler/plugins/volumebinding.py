"""VolumeBinding (pkg/scheduler/framework/plugins/volumebinding/volume_binding.go), as far as it goes without
PersistentVolumeClaims.

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

NOTE: gpulab serves no PersistentVolumeClaims yet, so every claim is missing.
When the PVC, PV and StorageClass kinds arrive, this plugin still needs
upstream's Filter (bound claims' PV node affinity, unbound claims' matching
PVs or provisioning by the class's ``volumeBindingMode``: ``pod has unbound
immediate PersistentVolumeClaims``, ``node(s) didn't find available persistent
volumes to bind``, ...), Score, Reserve (assume the bindings) and PreBind
(write them); until then a pod whose claims all exist passes.
"""
from __future__ import annotations

from ..events import ADD, UPDATE, ClusterEventWithHint
from ..interface import EnqueueExtensions, PreFilterPlugin
from ..status import SKIP_STATUS, Status, unresolvable

NAME = "VolumeBinding"
PVCS = "persistentvolumeclaims"


class VolumeBinding(PreFilterPlugin, EnqueueExtensions):
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
        return None if has_claims else SKIP_STATUS

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
        return [ClusterEventWithHint(PVCS, frozenset({ADD, UPDATE}))]
