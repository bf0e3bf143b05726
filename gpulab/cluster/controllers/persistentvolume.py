"""The PersistentVolume controller: binds claims to volumes, asks provisioners for new ones, reclaims released
volumes, and keeps claims and volumes protected while they are in use.

Ports of pkg/controller/volume/persistentvolume/pv_controller.go
(``syncUnboundClaim``, ``syncBoundClaim``, ``syncVolume``, ``bind``,
``provisionClaim`` for an out-of-tree provisioner, ``reclaimVolume``,
RetroactiveDefaultStorageClass), pkg/controller/volume/pvcprotection and
pkg/controller/volume/pvprotection, with their events:

- a claim whose class does not exist stays Pending:
  ``ProvisioningFailed storageclass.storage.k8s.io "x" not found``;
- ``""`` as the class means static binding only:
  ``FailedBinding no persistent volumes available for this claim and no storage class is set``;
- a WaitForFirstConsumer claim waits for a node (``WaitForFirstConsumer``
  ``waiting for first consumer to be created before binding``), then the
  provisioner is asked (``ExternalProvisioning``) through the
  ``volume.kubernetes.io/storage-provisioner`` annotation;
- a volume whose claim is gone is Released, then deleted (reclaim policy
  Delete) or kept (Retain).

Node selection for a WaitForFirstConsumer claim is the scheduler's
VolumeBinding PreBind (:func:`gpulab.cluster.volumebinding.check_pod_volumes`
and ``selected_node_patch``). Until the scheduler runs that plugin, this
controller names the node itself once a pod that uses the claim has been
bound to one (docs/fidelity.md lists it).
"""
from __future__ import annotations

from ..admission.storage import PV_PROTECTION, PVC_PROTECTION, default_class
from ..errors import ApiError
from ..objects import clone, rfc3339
from .. import volumebinding as vb
from .base import Controller
from .workload import MANAGER

COMPONENT = "persistentvolume-controller"
PVCS, PVS, CLASSES = "persistentvolumeclaims", "persistentvolumes", "storageclasses.storage.k8s.io"
PROVISIONER = "volume.kubernetes.io/storage-provisioner"
BETA_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
_EXTERNAL = ("Waiting for a volume to be created either by the external provisioner '{}' or manually by the system "
             "administrator. If volume creation is delayed, please verify that the provisioner is running and "
             "correctly registered.")


def _pod_active(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


class PersistentVolumeController(Controller):
    """Work keys: ("claim", ns, name) and ("volume", name)."""

    name = COMPONENT
    watches = (PVCS, PVS, "pods", CLASSES)

    def keys_for(self, key: str, obj: dict):
        m = obj["metadata"]
        if key == PVCS:
            keys = [("claim", m["namespace"], m["name"])]
            if (obj.get("spec") or {}).get("volumeName"):
                keys.append(("volume", obj["spec"]["volumeName"]))
            return keys
        if key == PVS:
            keys = [("volume", m["name"])]
            ref = (obj.get("spec") or {}).get("claimRef")
            if ref:
                keys.append(("claim", ref.get("namespace", ""), ref.get("name", "")))
            return keys
        if key == "pods":
            return [("claim", m.get("namespace", ""), c) for c in vb.pod_claim_names(obj)]
        # a StorageClass appearing: claims waiting for it (or for a default) look again
        return [("claim", c["metadata"]["namespace"], c["metadata"]["name"]) for c in self.api.store.list(PVCS)
                if (c.get("status") or {}).get("phase") == "Pending"]

    def initial_keys(self):
        return [k for key in (PVCS, PVS) for obj in self.api.store.list(key) for k in self.keys_for(key, obj)]

    async def reconcile(self, work_key) -> float | None:
        if work_key[0] == "claim":
            return self._sync_claim(work_key[1], work_key[2])
        return self._sync_volume(work_key[1])

    # --- claims -------------------------------------------------------------------------------------------
    def _users(self, pvc: dict) -> list[dict]:
        name = pvc["metadata"]["name"]
        return [p for p in self.api.store.list("pods", pvc["metadata"]["namespace"]) if name in vb.pod_claim_names(p)]

    def _sync_claim(self, ns: str, name: str) -> float | None:
        pvc = self.api.store.get(PVCS, ns, name)
        if pvc is None:
            return None
        if pvc["metadata"].get("deletionTimestamp"):
            self._release_protection(PVCS, pvc, PVC_PROTECTION, any(_pod_active(p) for p in self._users(pvc)))
            return None
        if (pvc.get("spec") or {}).get("volumeName"):
            return self._sync_bound_claim(pvc)
        return self._sync_unbound_claim(pvc)

    def _sync_unbound_claim(self, pvc: dict) -> float | None:
        spec, annotations = pvc.get("spec") or {}, pvc["metadata"].get("annotations") or {}
        if spec.get("storageClassName") is None and vb.BETA_CLASS not in annotations:
            chosen = default_class(self.api)  # RetroactiveDefaultStorageClass
            if chosen is not None:
                self.api.patch(PVCS, pvc["metadata"]["name"], {"spec": {"storageClassName": chosen["metadata"]["name"]}},
                               "merge", pvc["metadata"]["namespace"], manager=MANAGER)
            return None
        classes = {sc["metadata"]["name"]: sc for sc in self.api.store.list(CLASSES)}
        cls = vb.claim_class(pvc)
        delayed = vb.is_delayed_binding(pvc, classes)
        volumes = self.api.store.list(PVS)
        # findBestMatchForClaim: a volume pre-bound to the claim (a provisioned one) always; any other volume only
        # without delayed binding (the scheduler picks those for its node)
        match = vb.find_matching_volume(pvc, [v for v in volumes if vb.prebound_to(v, pvc)] if delayed else volumes)
        if match is not None:
            self._bind(pvc, match)
            return None
        if not cls:
            self._event(pvc, "Normal", "FailedBinding",
                        "no persistent volumes available for this claim and no storage class is set")
            return None
        sc = classes.get(cls)
        if sc is None:
            self._event(pvc, "Warning", "ProvisioningFailed", f'storageclass.storage.k8s.io "{cls}" not found')
            return None
        if delayed:
            node = annotations.get(vb.SELECTED_NODE) or self._first_consumer_node(pvc)
            if not node:
                self._event(pvc, "Normal", "WaitForFirstConsumer",
                            "waiting for first consumer to be created before binding")
                return None
            if annotations.get(vb.SELECTED_NODE) != node:
                pvc = self.api.patch(PVCS, pvc["metadata"]["name"], vb.selected_node_patch(node), "merge",
                                     pvc["metadata"]["namespace"], manager=MANAGER)
                annotations = pvc["metadata"].get("annotations") or {}
        provisioner = sc.get("provisioner", "")
        if annotations.get(PROVISIONER) != provisioner:
            self.api.patch(PVCS, pvc["metadata"]["name"],
                           {"metadata": {"annotations": {PROVISIONER: provisioner, BETA_PROVISIONER: provisioner}}},
                           "merge", pvc["metadata"]["namespace"], manager=MANAGER)
        self._event(pvc, "Normal", "ExternalProvisioning", _EXTERNAL.format(provisioner))
        return None

    def _first_consumer_node(self, pvc: dict) -> str | None:
        """The node of the first pod using the claim that the scheduler bound (see the module docstring)."""
        nodes = sorted((p["metadata"].get("creationTimestamp", ""), p["spec"]["nodeName"]) for p in self._users(pvc)
                       if (p.get("spec") or {}).get("nodeName") and _pod_active(p))
        return nodes[0][1] if nodes else None

    def _sync_bound_claim(self, pvc: dict) -> float | None:
        """syncBoundClaim: finish a half-done bind; a claim whose volume is gone is Lost."""
        pv = self.api.store.get(PVS, "", pvc["spec"]["volumeName"])
        if pv is None:
            if (pvc.get("status") or {}).get("phase") != "Lost":
                self._set_claim_phase(pvc, "Lost")
                self._event(pvc, "Warning", "ClaimLost", "Bound claim has lost its PersistentVolume. Data on the "
                                                         "volume is lost!")
            return None
        ref = (pv.get("spec") or {}).get("claimRef") or {}
        if not ref or ref.get("uid") in (None, "", pvc["metadata"]["uid"]):
            self._bind(pvc, pv)
        else:
            self._set_claim_phase(pvc, "Lost")
        return None

    # --- binding ----------------------------------------------------------------------------------------
    def _bind(self, pvc: dict, pv: dict) -> None:
        """bind: the volume points at the claim and is Bound, then the claim at the volume and is Bound."""
        ns, claim = pvc["metadata"]["namespace"], pvc["metadata"]["name"]
        ref = (pv.get("spec") or {}).get("claimRef") or {}
        if ref.get("uid") != pvc["metadata"]["uid"] or ref.get("name") != claim:
            patch = vb.bind_volume_patch(pvc)
            if ref:  # pre-bound by name (or by a provisioner): the controller did not bind it
                patch["metadata"]["annotations"] = {}
            pv = self.api.patch(PVS, pv["metadata"]["name"], patch, "merge", manager=MANAGER)
        if (pv.get("status") or {}).get("phase") != "Bound":
            pv = self._set_volume_phase(pv, "Bound")
        annotations = pvc["metadata"].get("annotations") or {}
        if (pvc.get("spec") or {}).get("volumeName") != pv["metadata"]["name"] or \
                annotations.get(vb.BIND_COMPLETED) != "yes":
            marks = {vb.BIND_COMPLETED: "yes"}
            if not (pvc.get("spec") or {}).get("volumeName"):
                marks[vb.BOUND_BY_CONTROLLER] = "yes"
            pvc = self.api.patch(PVCS, claim, {"metadata": {"annotations": marks},
                                               "spec": {"volumeName": pv["metadata"]["name"]}}, "merge", ns,
                                 manager=MANAGER)
        status = pvc.get("status") or {}
        wanted = {"phase": "Bound", "accessModes": list((pv.get("spec") or {}).get("accessModes") or []),
                  "capacity": dict((pv.get("spec") or {}).get("capacity") or {})}
        if any(status.get(k) != v for k, v in wanted.items()):
            new = clone(pvc)
            new["status"] = {**status, **wanted}
            self.api.update(PVCS, new, ns, subresource="status", manager=MANAGER)

    def _set_claim_phase(self, pvc: dict, phase: str) -> None:
        new = clone(pvc)
        new.setdefault("status", {})["phase"] = phase
        self.api.update(PVCS, new, pvc["metadata"]["namespace"], subresource="status", manager=MANAGER)

    def _set_volume_phase(self, pv: dict, phase: str, message: str | None = None) -> dict:
        new = clone(pv)
        status = new.setdefault("status", {})
        status["phase"] = phase
        status["lastPhaseTransitionTime"] = rfc3339(self.api.clock())
        if message:
            status["message"] = message
        else:
            status.pop("message", None)
        return self.api.update(PVS, new, subresource="status", manager=MANAGER)

    # --- volumes ------------------------------------------------------------------------------------------
    def _sync_volume(self, name: str) -> float | None:
        pv = self.api.store.get(PVS, "", name)
        if pv is None:
            return None
        phase = (pv.get("status") or {}).get("phase")
        if pv["metadata"].get("deletionTimestamp"):
            self._release_protection(PVS, pv, PV_PROTECTION, phase == "Bound")
            return None
        ref = (pv.get("spec") or {}).get("claimRef")
        if ref is None:
            if phase != "Available":
                self._set_volume_phase(pv, "Available")
            return None
        claim = self.api.store.get(PVCS, ref.get("namespace", ""), ref.get("name", ""))
        if claim is not None and ref.get("uid") and claim["metadata"]["uid"] != ref["uid"]:
            claim = None  # the claim was deleted and one with the same name made
        if claim is not None:
            bound_to = (claim.get("spec") or {}).get("volumeName")
            if bound_to == name:
                if phase != "Bound":
                    self._set_volume_phase(pv, "Bound")
            elif not bound_to:
                if phase not in ("Available", "Bound"):
                    self._set_volume_phase(pv, "Available")  # the claim's own sync binds them
                self.queue.add(("claim", claim["metadata"]["namespace"], claim["metadata"]["name"]))
            return None
        if not ref.get("uid"):
            if phase != "Available":
                self._set_volume_phase(pv, "Available")  # pre-bound to a claim that does not exist yet
            return None
        if phase != "Released" and phase != "Failed":
            pv = self._set_volume_phase(pv, "Released")
        self._reclaim(pv)
        return None

    def _reclaim(self, pv: dict) -> None:
        """reclaimVolume: Retain keeps it Released; Delete removes a provisioned volume; Recycle is gone."""
        policy = (pv.get("spec") or {}).get("persistentVolumeReclaimPolicy", "Retain")
        if policy == "Retain":
            return
        if policy == "Recycle":
            if (pv.get("status") or {}).get("phase") != "Failed":
                self._set_volume_phase(pv, "Failed", "Recycle is not supported")
                self._event(pv, "Warning", "VolumeFailedRecycle", "Recycle is not supported")
            return
        try:
            self.api.delete(PVS, pv["metadata"]["name"])
        except ApiError as exc:
            if exc.code != 404:
                raise

    def _release_protection(self, key: str, obj: dict, finalizer: str, in_use: bool) -> None:
        """The pvc-protection / pv-protection controllers: drop the finalizer once nothing uses the object."""
        finalizers = obj["metadata"].get("finalizers") or []
        if finalizer not in finalizers or in_use:
            return
        rest = [f for f in finalizers if f != finalizer]
        self.api.patch(key, obj["metadata"]["name"], {"metadata": {"finalizers": rest or None}}, "merge",
                       obj["metadata"].get("namespace"), manager=MANAGER)

    def _event(self, obj: dict, type_: str, reason: str, message: str) -> None:
        self.api.record_event(obj, type_, reason, message, COMPONENT)
