"""Storage kinds: PersistentVolumeClaims, PersistentVolumes, StorageClasses, VolumeAttributesClasses and the CSI
objects.

Ports of ValidatePersistentVolumeClaim(Spec), ValidatePersistentVolumeClaimUpdate,
ValidatePersistentVolume(Spec), ValidatePersistentVolumeUpdate in
pkg/apis/core/validation/validation.go and of ValidateStorageClass(Update),
ValidateVolumeAttributesClass(Update), ValidateCSIDriver, ValidateCSINode,
ValidateCSIStorageCapacity and ValidateVolumeAttachment in
pkg/apis/storage/validation/validation.go. Only the sources a learner writes
(hostPath, local, nfs, csi) are checked field by field; any other volume
source is accepted as it is (see docs/fidelity.md).
"""
from __future__ import annotations

from .. import quantity
from ..errors import FieldError
from .field import forbidden, immutable, invalid, not_supported, required, too_long, too_many
from .formats import is_dns1123_subdomain, is_qualified_name, name_is_dns_subdomain
from .labels import validate_label_selector
from .meta import validate_object_meta, validate_object_meta_update
from .path import Path
from .resources import shown, validate_resource_quantity_value
from .scheduling import _node_selector_term

SPEC = Path("spec")
ACCESS_MODES = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"]
_VOLUME_MODES = ["Block", "Filesystem"]
_PV_RECLAIM = ["Delete", "Recycle", "Retain"]
_SC_RECLAIM = ["Delete", "Retain"]
_BINDING_MODES = ["Immediate", "WaitForFirstConsumer"]
# The PersistentVolumeSource members, in the order ValidatePersistentVolumeSpec counts them.
PV_SOURCES = ("hostPath", "gcePersistentDisk", "awsElasticBlockStore", "glusterfs", "flocker", "nfs", "rbd",
              "quobyte", "cinder", "cephfs", "iscsi", "fc", "azureFile", "vsphereVolume", "azureDisk",
              "photonPersistentDisk", "portworxVolume", "scaleIO", "local", "storageos", "csi", "flexVolume")
_MAX_PARAMETERS, _MAX_PARAMETERS_SIZE = 512, 256 * (1 << 10)


def _positive_quantity(value, path: Path) -> list[FieldError]:
    """ValidatePositiveQuantityValue."""
    amount = quantity.parse_quantity(value)
    return [invalid(path, shown(value), "must be greater than zero")] if amount <= 0 else []


def _access_modes(modes: list, path: Path) -> list[FieldError]:
    errs = []
    for mode in modes:
        if mode not in ACCESS_MODES:
            errs.append(not_supported(path, mode, ACCESS_MODES))
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        errs.append(forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return errs


def _class_name(name: str | None, path: Path) -> list[FieldError]:
    return [invalid(path, name, m) for m in name_is_dns_subdomain(name, False)] if name else []


# --- claims ------------------------------------------------------------------------------
def validate_claim_spec(spec: dict, path: Path = SPEC) -> list[FieldError]:
    """ValidatePersistentVolumeClaimSpec."""
    errs: list[FieldError] = []
    modes = spec.get("accessModes") or []
    if not modes:
        errs.append(required(path.child("accessModes"), "at least 1 access mode is required"))
    if spec.get("selector") is not None:
        errs.extend(validate_label_selector(spec["selector"], path.child("selector")))
    errs.extend(_access_modes(modes, path.child("accessModes")))
    storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
    storage_path = path.child("resources").key("storage")
    if storage is None:
        errs.append(required(storage_path))
    else:
        errs.extend(_positive_quantity(storage, storage_path) or
                    validate_resource_quantity_value("storage", storage, storage_path))
    errs.extend(_class_name(spec.get("storageClassName"), path.child("storageClassName")))
    mode = spec.get("volumeMode")
    if mode is not None and mode not in _VOLUME_MODES:
        errs.append(not_supported(path.child("volumeMode"), mode, _VOLUME_MODES))
    errs.extend(_class_name(spec.get("volumeAttributesClassName"), path.child("volumeAttributesClassName")))
    return errs


def validate_claim(pvc: dict) -> list[FieldError]:
    errs = validate_object_meta(pvc.get("metadata") or {}, True, name_is_dns_subdomain)
    return errs + validate_claim_spec(pvc.get("spec") or {})


def _requested_storage(pvc: dict):
    value = (((pvc.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage")
    return None if value is None else quantity.parse_quantity(value)


def validate_claim_update(new: dict, old: dict) -> list[FieldError]:
    """The strategy's ValidateUpdate: the claim again, then ValidatePersistentVolumeClaimUpdate (the volume name
    may be set once; only the storage request and the attributes class change afterwards)."""
    errs = validate_claim(new)
    errs.extend(validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {}))
    spec, old_spec = dict(new.get("spec") or {}), dict(old.get("spec") or {})
    if not old_spec.get("volumeName"):
        old_spec["volumeName"] = spec.get("volumeName")
    for frozen in (spec, old_spec):
        resources = dict(frozen.get("resources") or {})
        resources["requests"] = {k: v for k, v in (resources.get("requests") or {}).items() if k != "storage"}
        frozen["resources"] = resources
        frozen.pop("volumeAttributesClassName", None)
    if {k: v for k, v in spec.items() if v is not None} != {k: v for k, v in old_spec.items() if v is not None}:
        errs.append(forbidden(SPEC, "spec is immutable after creation except resources.requests and "
                                    "volumeAttributesClassName for bound claims"))
    new_size, old_size = _requested_storage(new), _requested_storage(old)
    status_size = ((old.get("status") or {}).get("capacity") or {}).get("storage")
    if new_size is not None and old_size is not None and new_size < old_size:
        if status_size is None or new_size <= quantity.parse_quantity(status_size):
            errs.append(forbidden(SPEC.child("resources", "requests", "storage"),
                                  "field can not be less than status.capacity"))
    errs.extend(immutable(Path("volumeMode"), (new.get("spec") or {}).get("volumeMode"),
                          (old.get("spec") or {}).get("volumeMode")))
    return errs


def validate_claim_status_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    status = new.get("status") or {}
    for name, value in sorted((status.get("capacity") or {}).items()):
        errs.extend(validate_resource_quantity_value(name, value, Path("status", ).child("capacity").key(name)))
    errs.extend(_access_modes(status.get("accessModes") or [], Path("status").child("accessModes")))
    return errs


# --- volumes -----------------------------------------------------------------------------
def _source(kind: str, src: dict, path: Path) -> list[FieldError]:
    if kind == "hostPath":
        return [required(path.child("path"))] if not src.get("path") else []
    if kind == "local":
        return [required(path.child("path"))] if not src.get("path") else []
    if kind == "nfs":
        errs = [required(path.child("server"))] if not src.get("server") else []
        if not src.get("path"):
            errs.append(required(path.child("path")))
        elif not src["path"].startswith("/"):
            errs.append(invalid(path.child("path"), src["path"], "must be an absolute path"))
        return errs
    if kind == "csi":
        errs = [required(path.child("driver"))] if not src.get("driver") else []
        if not src.get("volumeHandle"):
            errs.append(required(path.child("volumeHandle")))
        return errs
    return []


def _volume_spec(spec: dict) -> list[FieldError]:
    """ValidatePersistentVolumeSpec."""
    errs: list[FieldError] = []
    modes = spec.get("accessModes") or []
    if not modes:
        errs.append(required(SPEC.child("accessModes")))
    errs.extend(_access_modes(modes, SPEC.child("accessModes")))
    capacity = spec.get("capacity") or {}
    if not capacity:
        errs.append(required(SPEC.child("capacity")))
    if "storage" not in capacity or len(capacity) > 1:
        errs.append(not_supported(SPEC.child("capacity"), list(capacity), ["storage"]))
    for name, value in sorted(capacity.items()):
        errs.extend(_positive_quantity(value, SPEC.child("capacity").key(name)))
        errs.extend(validate_resource_quantity_value(name, value, SPEC.child("capacity").key(name)))
    policy = spec.get("persistentVolumeReclaimPolicy") or ""
    if policy and policy not in _PV_RECLAIM:
        errs.append(not_supported(SPEC.child("persistentVolumeReclaimPolicy"), policy, _PV_RECLAIM))
    errs.extend(_class_name(spec.get("storageClassName"), SPEC.child("storageClassName")))
    affinity = spec.get("nodeAffinity")
    if affinity is not None:
        required_terms = (affinity.get("required") or {}).get("nodeSelectorTerms")
        path = SPEC.child("nodeAffinity", "required", "nodeSelectorTerms")
        if affinity.get("required") is not None and not required_terms:
            errs.append(required(path, "must have at least one node selector term"))
        for i, term in enumerate(required_terms or []):
            errs.extend(_node_selector_term(term, False, path.index(i)))
    sources = [k for k in PV_SOURCES if spec.get(k) is not None]
    if not sources:
        errs.append(required(SPEC, "must specify a volume type"))
    for extra in sources[1:]:
        errs.append(forbidden(SPEC.child(extra), "may not specify more than 1 volume type"))
    if sources:
        errs.extend(_source(sources[0], spec[sources[0]], SPEC.child(sources[0])))
    mode = spec.get("volumeMode")
    if mode is not None and mode not in _VOLUME_MODES:
        errs.append(not_supported(SPEC.child("volumeMode"), mode, _VOLUME_MODES))
    return errs


def validate_volume(pv: dict) -> list[FieldError]:
    errs = validate_object_meta(pv.get("metadata") or {}, False, name_is_dns_subdomain)
    return errs + _volume_spec(pv.get("spec") or {})


def validate_volume_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_volume(new)
    errs.extend(validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {}))
    spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    source = {k: spec.get(k) for k in PV_SOURCES if spec.get(k) is not None}
    old_source = {k: old_spec.get(k) for k in PV_SOURCES if old_spec.get(k) is not None}
    if source != old_source:
        errs.append(forbidden(SPEC.child("persistentvolumesource"),
                              "spec.persistentvolumesource is immutable after creation"))
    errs.extend(immutable(SPEC.child("volumeMode"), spec.get("volumeMode"), old_spec.get("volumeMode")))
    if old_spec.get("nodeAffinity") is not None:
        errs.extend(immutable(SPEC.child("nodeAffinity"), spec.get("nodeAffinity"), old_spec.get("nodeAffinity")))
    return errs


def validate_volume_status_update(new: dict, old: dict) -> list[FieldError]:
    return validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})


# --- classes -------------------------------------------------------------------------------
def _parameters(params: dict | None, path: Path) -> list[FieldError]:
    """validateParameters."""
    params = params or {}
    errs = []
    if len(params) > _MAX_PARAMETERS:
        errs.append(too_many(path, len(params), _MAX_PARAMETERS))
    total = 0
    for key, value in params.items():
        if not key:
            errs.append(invalid(path, key, "field can not be empty."))
        total += len(key) + len(value)
    if total > _MAX_PARAMETERS_SIZE:
        errs.append(too_long(path, _MAX_PARAMETERS_SIZE))
    return errs


def _driver_name(name: str, path: Path) -> list[FieldError]:
    """validateProvisioner / a CSI driver name: a qualified name, compared lower-cased."""
    if not name:
        return [required(path, name)]
    return [invalid(path, name, m) for m in is_qualified_name(name.lower())]


def validate_storage_class(sc: dict) -> list[FieldError]:
    errs = validate_object_meta(sc.get("metadata") or {}, False, name_is_dns_subdomain)
    errs.extend(_driver_name(sc.get("provisioner") or "", Path("provisioner")))
    errs.extend(_parameters(sc.get("parameters"), Path("parameters")))
    policy = sc.get("reclaimPolicy") or ""
    if policy and policy not in _SC_RECLAIM:
        errs.append(not_supported(Path("reclaimPolicy"), policy, _SC_RECLAIM))
    mode = sc.get("volumeBindingMode")
    if mode is None:
        errs.append(required(Path("volumeBindingMode")))
    elif mode not in _BINDING_MODES:
        errs.append(not_supported(Path("volumeBindingMode"), mode, _BINDING_MODES))
    for i, term in enumerate(sc.get("allowedTopologies") or []):
        if not term.get("matchLabelExpressions"):
            errs.append(required(Path("allowedTopologies").index(i).child("matchLabelExpressions"),
                                 "must have at least one label value requirement"))
    return errs


def validate_storage_class_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    if (new.get("parameters") or {}) != (old.get("parameters") or {}):
        errs.append(forbidden(Path("parameters"), "updates to parameters are forbidden."))
    if new.get("provisioner") != old.get("provisioner"):
        errs.append(forbidden(Path("provisioner"), "updates to provisioner are forbidden."))
    if new.get("reclaimPolicy") != old.get("reclaimPolicy"):
        errs.append(forbidden(Path("reclaimPolicy"), "updates to reclaimPolicy are forbidden."))
    return errs + immutable(Path("volumeBindingMode"), new.get("volumeBindingMode"), old.get("volumeBindingMode"))


def validate_volume_attributes_class(vac: dict) -> list[FieldError]:
    errs = validate_object_meta(vac.get("metadata") or {}, False, name_is_dns_subdomain)
    errs.extend(_driver_name(vac.get("driverName") or "", Path("driverName")))
    return errs + _parameters(vac.get("parameters"), Path("parameters"))


def validate_volume_attributes_class_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    if (new.get("parameters") or {}) != (old.get("parameters") or {}):
        errs.append(forbidden(Path("parameters"), "updates to parameters are forbidden."))
    if new.get("driverName") != old.get("driverName"):
        errs.append(forbidden(Path("driverName"), "updates to driverName are forbidden."))
    return errs


# --- CSI objects ---------------------------------------------------------------------------------
def validate_csi_driver(driver: dict) -> list[FieldError]:
    meta = driver.get("metadata") or {}
    errs = validate_object_meta(meta, False, name_is_dns_subdomain)
    errs.extend(_driver_name(meta.get("name") or "", Path("name")) if meta.get("name") else [])
    modes = (driver.get("spec") or {}).get("volumeLifecycleModes") or []
    for mode in modes:
        if mode not in ("Persistent", "Ephemeral"):
            errs.append(not_supported(SPEC.child("volumeLifecycleModes"), mode, ["Ephemeral", "Persistent"]))
    return errs


def validate_csi_driver_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_csi_driver(new) + validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    for field in ("attachRequired", "podInfoOnMount", "volumeLifecycleModes", "fsGroupPolicy"):
        errs.extend(immutable(SPEC.child(field), (new.get("spec") or {}).get(field), (old.get("spec") or {}).get(field)))
    return errs


def validate_csi_node(node: dict) -> list[FieldError]:
    errs = validate_object_meta(node.get("metadata") or {}, False, name_is_dns_subdomain)
    seen: set[str] = set()
    for i, drv in enumerate((node.get("spec") or {}).get("drivers") or []):
        path = SPEC.child("drivers").index(i)
        errs.extend(_driver_name(drv.get("name") or "", path.child("name")))
        if not drv.get("nodeID"):
            errs.append(required(path.child("nodeID"), "nodeID must be provided"))
        if drv.get("name") in seen:
            errs.append(FieldError("FieldValueDuplicate", str(path.child("name")), drv.get("name")))
        seen.add(drv.get("name"))
    return errs


def validate_csi_storage_capacity(capacity: dict) -> list[FieldError]:
    errs = validate_object_meta(capacity.get("metadata") or {}, True, name_is_dns_subdomain)
    errs.extend(_class_name(capacity.get("storageClassName"), Path("storageClassName")))
    if not capacity.get("storageClassName"):
        errs.append(required(Path("storageClassName")))
    for field in ("capacity", "maximumVolumeSize"):
        if capacity.get(field) is not None:
            errs.extend(validate_resource_quantity_value(field, capacity[field], Path(field)))
    return errs


def validate_volume_attachment(va: dict) -> list[FieldError]:
    errs = validate_object_meta(va.get("metadata") or {}, False, name_is_dns_subdomain)
    spec = va.get("spec") or {}
    errs.extend(_driver_name(spec.get("attacher") or "", SPEC.child("attacher")))
    if not spec.get("nodeName"):
        errs.append(required(SPEC.child("nodeName")))
    else:
        errs.extend(invalid(SPEC.child("nodeName"), spec["nodeName"], m) for m in is_dns1123_subdomain(spec["nodeName"]))
    source = spec.get("source") or {}
    has_pv, has_inline = source.get("persistentVolumeName") is not None, source.get("inlineVolumeSpec") is not None
    if has_pv == has_inline:
        errs.append(required(SPEC.child("source"), "must specify exactly one of inlineVolumeSpec and "
                                                   "persistentVolumeName"))
    return errs


def validate_volume_attachment_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    if (new.get("spec") or {}) != (old.get("spec") or {}):
        errs.append(invalid(SPEC, new.get("spec"), "field is immutable"))
    return errs
