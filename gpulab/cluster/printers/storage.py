"""Printers for storage kinds: persistent volumes and claims, storage classes, volume attributes classes, CSI
drivers, nodes and storage capacities, volume attachments.

Ports of printPersistentVolume, printPersistentVolumeClaim, printStorageClass,
printVolumeAttributesClass, printCSIDriver, printCSINode,
printCSIStorageCapacity and printVolumeAttachment in
kubernetes/pkg/printers/internalversion/printers.go, with the helpers of
pkg/apis/core/helper (GetAccessModesAsString, GetPersistentVolumeClass,
GetPersistentVolumeClaimClass) and pkg/apis/storage/util (IsDefaultAnnotation).
"""
from __future__ import annotations

from ..quantity import canonical
from .cells import age, name
from .columns import CORE, age_column, column, doc, name_column

STORAGE = "io.k8s.api.storage.v1."
# pkg/apis/core annotations read by the class helpers, and the default-class annotations of storage/util.
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
BETA_DEFAULT_CLASS_ANNOTATION = "storageclass.beta.kubernetes.io/is-default-class"
DEFAULT_VAC_ANNOTATION = "volumeattributesclass.kubernetes.io/is-default-class"
_ACCESS_MODES = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"),
                 ("ReadWriteOncePod", "RWOP"))


def access_modes_string(modes: list | None) -> str:
    """GetAccessModesAsString: the short forms in a fixed order, duplicates once."""
    modes = modes or []
    return ",".join(short for mode, short in _ACCESS_MODES if mode in modes)


def _class_of(obj: dict) -> str:
    """GetPersistentVolume(Claim)Class: the beta annotation wins over spec.storageClassName."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return annotations[BETA_STORAGE_CLASS_ANNOTATION]
    return (obj.get("spec") or {}).get("storageClassName") or ""


def is_default_class(obj: dict) -> bool:
    """storageutil.IsDefaultAnnotation."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return annotations.get(DEFAULT_CLASS_ANNOTATION) == "true" or \
        annotations.get(BETA_DEFAULT_CLASS_ANNOTATION) == "true"


def _storage(resources: dict | None) -> str:
    value = (resources or {}).get("storage")
    return "0" if value is None else canonical(value)


# --- persistent volumes and claims ---------------------------------------------
def pv_columns() -> list[dict]:
    spec, status = CORE + "PersistentVolumeSpec", CORE + "PersistentVolumeStatus"
    return [name_column(), column("Capacity", description=doc(spec, "capacity")),
            column("Access Modes", description=doc(spec, "accessModes")),
            column("Reclaim Policy", description=doc(spec, "persistentVolumeReclaimPolicy")),
            column("Status", description=doc(status, "phase")),
            column("Claim", description=doc(spec, "claimRef")),
            column("StorageClass", description="StorageClass of the pv"),
            column("VolumeAttributesClass", description="VolumeAttributesClass of the pv"),
            column("Reason", description=doc(status, "reason")), age_column(),
            column("VolumeMode", description=doc(spec, "volumeMode"), priority=1)]


def pv_cells(pv: dict, now_us: int) -> list:
    spec, status = pv.get("spec") or {}, pv.get("status") or {}
    ref = spec.get("claimRef")
    claim = f"{ref.get('namespace', '')}/{ref.get('name', '')}" if ref is not None else ""
    phase = "Terminating" if (pv.get("metadata") or {}).get("deletionTimestamp") else status.get("phase", "")
    return [name(pv), _storage(spec.get("capacity")), access_modes_string(spec.get("accessModes")),
            spec.get("persistentVolumeReclaimPolicy", ""), phase, claim, _class_of(pv),
            spec.get("volumeAttributesClassName") or "<unset>", status.get("reason", ""), age(pv, now_us),
            spec.get("volumeMode") or "<unset>"]


def pvc_columns() -> list[dict]:
    spec, status = CORE + "PersistentVolumeClaimSpec", CORE + "PersistentVolumeClaimStatus"
    return [name_column(), column("Status", description=doc(status, "phase")),
            column("Volume", description=doc(spec, "volumeName")),
            column("Capacity", description=doc(status, "capacity")),
            column("Access Modes", description=doc(status, "accessModes")),
            column("StorageClass", description="StorageClass of the pvc"),
            column("VolumeAttributesClass", description="VolumeAttributesClass of the pvc"), age_column(),
            column("VolumeMode", description=doc(spec, "volumeMode"), priority=1)]


def pvc_cells(pvc: dict, now_us: int) -> list:
    spec, status = pvc.get("spec") or {}, pvc.get("status") or {}
    phase = "Terminating" if (pvc.get("metadata") or {}).get("deletionTimestamp") else status.get("phase", "")
    capacity = modes = ""
    if spec.get("volumeName"):
        modes = access_modes_string(status.get("accessModes"))
        capacity = _storage(status.get("capacity"))
    return [name(pvc), phase, spec.get("volumeName", ""), capacity, modes, _class_of(pvc),
            spec.get("volumeAttributesClassName") or "<unset>", age(pvc, now_us), spec.get("volumeMode") or "<unset>"]


# --- classes -------------------------------------------------------------------------
def storageclass_columns() -> list[dict]:
    sc = STORAGE + "StorageClass"
    return [name_column(), column("Provisioner", description=doc(sc, "provisioner")),
            column("ReclaimPolicy", description=doc(sc, "reclaimPolicy")),
            column("VolumeBindingMode", description=doc(sc, "volumeBindingMode")),
            column("AllowVolumeExpansion", description=doc(sc, "allowVolumeExpansion")), age_column()]


def storageclass_cells(sc: dict, now_us: int) -> list:
    label = name(sc) + (" (default)" if is_default_class(sc) else "")
    return [label, sc.get("provisioner", ""), sc.get("reclaimPolicy") or "Delete",
            sc.get("volumeBindingMode") or "Immediate", bool(sc.get("allowVolumeExpansion")), age(sc, now_us)]


def volumeattributesclass_columns() -> list[dict]:
    return [name_column(), column("DriverName", description=doc(STORAGE + "VolumeAttributesClass", "driverName")),
            age_column()]


def volumeattributesclass_cells(vac: dict, now_us: int) -> list:
    default = ((vac.get("metadata") or {}).get("annotations") or {}).get(DEFAULT_VAC_ANNOTATION) == "true"
    return [name(vac) + (" (default)" if default else ""), vac.get("driverName", ""), age(vac, now_us)]


# --- CSI -------------------------------------------------------------------------------
def csidriver_columns() -> list[dict]:
    spec = STORAGE + "CSIDriverSpec"
    return [name_column(), column("AttachRequired", "boolean", doc(spec, "attachRequired")),
            column("PodInfoOnMount", "boolean", doc(spec, "podInfoOnMount")),
            column("StorageCapacity", "boolean", doc(spec, "storageCapacity")),
            column("TokenRequests", description=doc(spec, "tokenRequests")),
            column("RequiresRepublish", "boolean", doc(spec, "requiresRepublish")),
            column("Modes", description=doc(spec, "volumeLifecycleModes")), age_column()]


def csidriver_cells(driver: dict, now_us: int) -> list:
    spec = driver.get("spec") or {}
    tokens = spec.get("tokenRequests")
    audiences = "<unset>" if tokens is None else ",".join(t.get("audience", "") for t in tokens)
    attach = spec.get("attachRequired")
    return [name(driver), True if attach is None else bool(attach), bool(spec.get("podInfoOnMount")),
            bool(spec.get("storageCapacity")), audiences, bool(spec.get("requiresRepublish")),
            ",".join(spec.get("volumeLifecycleModes") or []) or "<none>", age(driver, now_us)]


def csinode_columns() -> list[dict]:
    return [name_column(), column("Drivers", "integer",
                                  "Drivers indicates the number of CSI drivers registered on the node"), age_column()]


def csinode_cells(node: dict, now_us: int) -> list:
    return [name(node), len((node.get("spec") or {}).get("drivers") or []), age(node, now_us)]


def csistoragecapacity_columns() -> list[dict]:
    capacity = STORAGE + "CSIStorageCapacity"
    return [name_column(), column("StorageClassName", description=doc(capacity, "storageClassName")),
            column("Capacity", description=doc(capacity, "capacity"))]


def csistoragecapacity_cells(capacity: dict, now_us: int) -> list:
    value = capacity.get("capacity")
    return [name(capacity), capacity.get("storageClassName", ""), "<unset>" if value is None else canonical(value)]


def volumeattachment_columns() -> list[dict]:
    spec = STORAGE + "VolumeAttachmentSpec"
    return [name_column(), column("Attacher", format_="name", description=doc(spec, "attacher")),
            column("PV", description=doc(STORAGE + "VolumeAttachmentSource", "persistentVolumeName")),
            column("Node", description=doc(spec, "nodeName")),
            column("Attached", "boolean", doc(STORAGE + "VolumeAttachmentStatus", "attached")), age_column()]


def volumeattachment_cells(va: dict, now_us: int) -> list:
    spec = va.get("spec") or {}
    return [name(va), spec.get("attacher", ""), (spec.get("source") or {}).get("persistentVolumeName") or "",
            spec.get("nodeName", ""), bool((va.get("status") or {}).get("attached")), age(va, now_us)]
