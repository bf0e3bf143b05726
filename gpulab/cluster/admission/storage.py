"""The storage admission plugins: DefaultStorageClass (plugin/pkg/admission/storage/storageclass/setdefault),
StorageObjectInUseProtection (plugin/pkg/admission/storage/storageobjectinuseprotection) and
PersistentVolumeClaimResize (plugin/pkg/admission/storage/persistentvolume/resize)."""
from __future__ import annotations

from .. import quantity
from ..defaults.admission import forbidden
from ..printers.storage import BETA_STORAGE_CLASS_ANNOTATION, is_default_class

CLASSES = "storageclasses.storage.k8s.io"
PVC_PROTECTION = "kubernetes.io/pvc-protection"
PV_PROTECTION = "kubernetes.io/pv-protection"


def default_class(api) -> dict | None:
    """storageutil.GetDefaultClass: of the classes marked default, the newest (then the first by name)."""
    defaults = [sc for sc in api.store.list(CLASSES) if is_default_class(sc)]
    if not defaults:
        return None
    defaults.sort(key=lambda sc: sc["metadata"]["name"])
    return max(defaults, key=lambda sc: sc["metadata"].get("creationTimestamp", ""))


def admit_default_storage_class(api, operation: str, rt, obj: dict, old: dict | None) -> None:
    """A new claim that names no class (not even "") gets the default class, if there is one."""
    if operation != "CREATE" or rt.storage_key != "persistentvolumeclaims":
        return
    spec = obj.setdefault("spec", {})
    annotations = obj["metadata"].get("annotations") or {}
    if spec.get("storageClassName") is not None or BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return
    chosen = default_class(api)
    if chosen is not None:
        spec["storageClassName"] = chosen["metadata"]["name"]


def admit_in_use_protection(api, operation: str, rt, obj: dict, old: dict | None) -> None:
    """New claims and volumes get the finalizer that keeps them while a pod (or claim) uses them."""
    if operation != "CREATE":
        return
    finalizer = {"persistentvolumeclaims": PVC_PROTECTION, "persistentvolumes": PV_PROTECTION}.get(rt.storage_key)
    if finalizer is None:
        return
    finalizers = obj["metadata"].setdefault("finalizers", [])
    if finalizer not in finalizers:
        finalizers.append(finalizer)


def _requested(pvc: dict):
    value = (((pvc.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage")
    return None if value is None else quantity.parse_quantity(value)


def validate_claim_resize(api, operation: str, rt, obj: dict, old: dict | None, dry_run: bool) -> None:
    """A larger storage request needs a bound claim whose class allows volume expansion."""
    if operation != "UPDATE" or rt.storage_key != "persistentvolumeclaims" or old is None:
        return
    new_size, old_size = _requested(obj), _requested(old)
    if new_size is None or old_size is None or new_size <= old_size:
        return
    name = obj["metadata"]["name"]
    if (old.get("status") or {}).get("phase") != "Bound":
        raise forbidden(rt, name, "Only bound persistent volume claims can be expanded")
    annotations = old["metadata"].get("annotations") or {}
    cls = annotations.get(BETA_STORAGE_CLASS_ANNOTATION) or (old.get("spec") or {}).get("storageClassName") or ""
    sc = api.store.get(CLASSES, "", cls) if cls else None
    if sc is None or not sc.get("allowVolumeExpansion"):
        raise forbidden(rt, name, "only dynamically provisioned pvc can be resized and the storageclass that "
                                  "provisions the pvc must support resize")
