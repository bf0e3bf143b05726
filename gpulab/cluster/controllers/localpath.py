"""kind's storage provisioner, rancher/local-path-provisioner, for the ``standard`` StorageClass.

kind runs it as the ``local-path-provisioner`` Deployment in
``local-path-storage``; here its provisioning runs in process (the
Deployment is there too, so ``kubectl get pods -A`` shows it). As
provisioner.go and sig-storage-lib-external-provisioner's controller do, it
serves claims annotated ``volume.kubernetes.io/storage-provisioner:
rancher.io/local-path`` that have a selected node: ``Provisioning``
``External provisioner is provisioning volume for claim "NS/NAME"``, a volume
``pvc-<claim uid>`` with a hostPath under ``/var/local-path-provisioner``,
node affinity to the node, the claim pre-bound, then ``ProvisioningSucceeded``
``Successfully provisioned volume pvc-...``. Without a node (an Immediate
class) it fails as local-path does: ``configuration error, no node was
specified``. Volumes it provisioned are deleted when released (reclaim Delete,
by the volume controller).
"""
from __future__ import annotations

from ..errors import ApiError
from .. import volumebinding as vb
from .base import Controller
from .persistentvolume import PROVISIONER, PVCS, PVS

NAME = "rancher.io/local-path"
COMPONENT = "rancher.io/local-path_local-path-provisioner"
BASE_PATH = "/var/local-path-provisioner"
CLASSES = "storageclasses.storage.k8s.io"


def volume_for(pvc: dict, sc: dict, node: str) -> dict:
    """provisioner.go Provision: the hostPath volume on the node, pre-bound to the claim."""
    meta, spec = pvc["metadata"], pvc.get("spec") or {}
    name = f"pvc-{meta['uid']}"
    return {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": name, "annotations": {"local.path.provisioner/selected-node": node,
                                                   "pv.kubernetes.io/provisioned-by": NAME}},
        "spec": {
            "accessModes": list(spec.get("accessModes") or []),
            "capacity": {"storage": ((spec.get("resources") or {}).get("requests") or {}).get("storage", "0")},
            "claimRef": vb.claim_ref(pvc),
            "hostPath": {"path": f"{BASE_PATH}/{name}_{meta['namespace']}_{meta['name']}", "type": "DirectoryOrCreate"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}},
            "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy") or "Delete",
            "storageClassName": sc["metadata"]["name"],
            "volumeMode": spec.get("volumeMode") or "Filesystem",
        },
    }


class LocalPathProvisioner(Controller):
    name = "local-path-provisioner"
    watches = (PVCS,)

    async def reconcile(self, work_key) -> float | None:
        ns, name = work_key
        pvc = self.api.store.get(PVCS, ns, name)
        if pvc is None or pvc["metadata"].get("deletionTimestamp") or (pvc.get("spec") or {}).get("volumeName"):
            return None
        annotations = pvc["metadata"].get("annotations") or {}
        if annotations.get(PROVISIONER) != NAME:
            return None
        sc = self.api.store.get(CLASSES, "", vb.claim_class(pvc))
        if sc is None or sc.get("provisioner") != NAME:
            return None
        if self.api.store.get(PVS, "", f"pvc-{pvc['metadata']['uid']}") is not None:
            return None
        self._event(pvc, "Normal", "Provisioning", f'External provisioner is provisioning volume for claim "{ns}/{name}"')
        node = annotations.get(vb.SELECTED_NODE)
        if not node:
            self._event(pvc, "Warning", "ProvisioningFailed", f'failed to provision volume with StorageClass '
                                                              f'"{sc["metadata"]["name"]}": configuration error, no '
                                                              f'node was specified')
            return None
        try:
            pv = self.api.create(PVS, volume_for(pvc, sc, node), manager="local-path-provisioner")
        except ApiError as exc:
            if exc.code == 409:
                return None
            self._event(pvc, "Warning", "ProvisioningFailed",
                        f'failed to provision volume with StorageClass "{sc["metadata"]["name"]}": {exc.message}')
            raise
        self._event(pvc, "Normal", "ProvisioningSucceeded", f"Successfully provisioned volume {pv['metadata']['name']}")
        return None

    def _event(self, pvc: dict, type_: str, reason: str, message: str) -> None:
        self.api.record_event(pvc, type_, reason, message, COMPONENT)

