"""Pod volumes: unique DNS-label names and exactly one source each.

Port of ValidateVolumes and validateVolumeSource
(pkg/apis/core/validation/validation.go) for the sources a GPU course uses
(emptyDir, hostPath, configMap, secret, persistentVolumeClaim, projected,
downwardAPI, csi, nfs). Other sources are counted for the one-source rule but
their own fields are not checked.
"""
from __future__ import annotations

from ..errors import FieldError
from .field import duplicate, forbidden, invalid, not_supported, required
from .formats import is_dns1123_label, is_dns1123_subdomain
from .path import Path
from .resources import parsed

# v1 JSON key -> the child name upstream uses in "may not specify more than 1 volume type" (typos included).
_SOURCES = {
    "emptyDir": "emptyDir", "hostPath": "hostPath", "gitRepo": "gitRepo", "gcePersistentDisk": "gcePersistentDisk",
    "awsElasticBlockStore": "awsElasticBlockStore", "secret": "secret", "nfs": "nfs", "iscsi": "iscsi",
    "glusterfs": "glusterfs", "flocker": "flocker", "persistentVolumeClaim": "persistentVolumeClaim", "rbd": "rbd",
    "cinder": "cinder", "cephfs": "cephFS", "quobyte": "quobyte", "downwardAPI": "downwarAPI", "fc": "fc",
    "flexVolume": "flexVolume", "configMap": "configMap", "azureFile": "azureFile", "vsphereVolume": "vsphereVolume",
    "photonPersistentDisk": "photonPersistentDisk", "portworxVolume": "portworxVolume", "azureDisk": "azureDisk",
    "storageos": "storageos", "projected": "projected", "scaleIO": "scaleIO", "csi": "csi", "ephemeral": "ephemeral",
    "image": "image",
}
_HOST_PATH_TYPES = ["", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate",
                    "Socket"]
_FILE_MODE_ERR = "must be a number between 0 and 0777 (octal), both inclusive"
_DOWNWARD_FIELDS = ["metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"]


def _mode(value, path: Path) -> list[FieldError]:
    return [invalid(path, value, _FILE_MODE_ERR)] if value is not None and not 0 <= value <= 0o777 else []


def _local_non_reserved_path(target: str, path: Path) -> list[FieldError]:
    errs = [invalid(path, target, "must be a relative path")] if target.startswith("/") else []
    if ".." in target.split("/"):
        errs.append(invalid(path, target, "must not contain '..'"))
    elif target.startswith(".."):
        errs.append(invalid(path, target, "must not start with '..'"))
    return errs


def _items(items: list | None, path: Path) -> list[FieldError]:
    """validateKeyToPath for each item."""
    errs: list[FieldError] = []
    for i, item in enumerate(items or []):
        p = path.index(i)
        if not item.get("key"):
            errs.append(required(p.child("key")))
        if not item.get("path"):
            errs.append(required(p.child("path")))
        errs.extend(_local_non_reserved_path(item.get("path") or "", p.child("path")))
        errs.extend(_mode(item.get("mode"), p.child("mode")))
    return errs


def _validate_source(kind: str, src: dict, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    if kind == "emptyDir":
        limit = src.get("sizeLimit")
        if limit is not None and (parsed(limit) or 0) < 0:
            errs.append(forbidden(path.child("sizeLimit"), "SizeLimit field must be a valid resource quantity"))
    elif kind == "hostPath":
        if not src.get("path"):
            return [required(path.child("path"))]
        if ".." in src["path"].split("/"):
            errs.append(invalid(path.child("path"), src["path"], "must not contain '..'"))
        if src.get("type") is not None and src["type"] not in _HOST_PATH_TYPES:
            errs.append(not_supported(path.child("type"), src["type"], _HOST_PATH_TYPES))
    elif kind in ("secret", "configMap"):
        name_field = "secretName" if kind == "secret" else "name"
        if not src.get(name_field):
            errs.append(required(path.child(name_field)))
        errs.extend(_mode(src.get("defaultMode"), path.child("defaultMode")))
        errs.extend(_items(src.get("items"), path.child("items")))
    elif kind == "persistentVolumeClaim":
        if not src.get("claimName"):
            errs.append(required(path.child("claimName")))
    elif kind == "nfs":
        if not src.get("server"):
            errs.append(required(path.child("server")))
        if not src.get("path"):
            errs.append(required(path.child("path")))
        if not (src.get("path") or "").startswith("/"):
            errs.append(invalid(path.child("path"), src.get("path") or "", "must be an absolute path"))
    elif kind == "csi":
        driver = src.get("driver") or ""
        if not driver:
            errs.append(required(path.child("driver")))
        errs.extend(invalid(path.child("driver"), driver, m) for m in is_dns1123_subdomain(driver.lower()))
    elif kind in ("projected", "downwardAPI"):
        errs.extend(_mode(src.get("defaultMode"), path.child("defaultMode")))
        if kind == "downwardAPI":
            for item in src.get("items") or []:
                errs.extend(_downward_file(item, path))
    return errs


def _downward_file(item: dict, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    if not item.get("path"):
        errs.append(required(path.child("path")))
    errs.extend(_local_non_reserved_path(item.get("path") or "", path.child("path")))
    ref = item.get("fieldRef")
    if ref is not None:
        field_path = (ref.get("fieldPath") or "").split("[")[0]
        if field_path not in _DOWNWARD_FIELDS:
            errs.append(not_supported(path.child("fieldRef", "fieldPath"), field_path, _DOWNWARD_FIELDS))
    elif item.get("resourceFieldRef") is None:
        errs.append(required(path, "one of fieldRef and resourceFieldRef is required"))
    return errs + _mode(item.get("mode"), path.child("mode"))


def validate_volumes(volumes: list | None, path: Path) -> tuple[dict, list[FieldError]]:
    """ValidateVolumes: returns the valid volumes by name (for mount checks) and the errors."""
    errs: list[FieldError] = []
    valid: dict[str, dict] = {}
    names: set[str] = set()
    for i, vol in enumerate(volumes or []):
        p = path.index(i)
        name = vol.get("name") or ""
        own: list[FieldError] = []
        count = 0
        for key, child in _SOURCES.items():
            if vol.get(key) is None:
                continue
            if count:
                own.append(forbidden(p.child(child), "may not specify more than 1 volume type"))
                continue
            count += 1
            own.extend(_validate_source(key, vol[key], p.child(key)))
        if count == 0:
            own.append(required(p, "must specify a volume type"))
        if not name:
            own.append(required(p.child("name")))
        else:
            own.extend(invalid(p.child("name"), name, m) for m in is_dns1123_label(name))
        if name in names:
            own.append(duplicate(p.child("name"), name))
        if own:
            errs.extend(own)
        else:
            names.add(name)
            valid[name] = vol
    return valid, errs
