"""Defaults of storage kinds: PersistentVolumes and their claims, StorageClasses, CSIDrivers, LimitRanges and
ResourceQuotas (whose quantities are stored canonical).

Ports of pkg/apis/core/v1/defaults.go (SetDefaults_PersistentVolume,
SetDefaults_PersistentVolumeClaim, SetDefaults_PersistentVolumeClaimSpec,
SetDefaults_HostPathVolumeSource, SetDefaults_LimitRangeItem,
SetDefaults_ResourceList) and pkg/apis/storage/v1/defaults.go
(SetDefaults_StorageClass, SetDefaults_CSIDriver). A claim's ``status.phase``
default (Pending) shows on every read upstream because defaulting also runs
when an object is decoded from etcd; the strategies store it instead.
"""
from __future__ import annotations

from ..registry import ResourceType
from .quantities import canonical_resource_list


def default_claim_spec(rt: ResourceType, spec: dict) -> None:
    if not spec.get("volumeMode"):
        spec["volumeMode"] = "Filesystem"
    resources = spec.get("resources") or {}
    canonical_resource_list(rt, resources.get("requests"))
    canonical_resource_list(rt, resources.get("limits"))


def default_claim(rt: ResourceType, claim: dict) -> None:
    """A PersistentVolumeClaim, or a StatefulSet's claim template: its spec, and status.phase Pending."""
    default_claim_spec(rt, claim.setdefault("spec", {}))
    status = claim.setdefault("status", {})
    if not status.get("phase"):
        status["phase"] = "Pending"


def default_volume(rt: ResourceType, pv: dict) -> None:
    spec = pv.setdefault("spec", {})
    if not spec.get("persistentVolumeReclaimPolicy"):
        spec["persistentVolumeReclaimPolicy"] = "Retain"
    if not spec.get("volumeMode"):
        spec["volumeMode"] = "Filesystem"
    if spec.get("hostPath") is not None and spec["hostPath"].get("type") is None:
        spec["hostPath"]["type"] = ""
    canonical_resource_list(rt, spec.get("capacity"))
    status = pv.setdefault("status", {})
    if not status.get("phase"):
        status["phase"] = "Pending"


def default_storage_class(rt: ResourceType, sc: dict) -> None:
    if sc.get("reclaimPolicy") is None:
        sc["reclaimPolicy"] = "Delete"
    if sc.get("volumeBindingMode") is None:
        sc["volumeBindingMode"] = "Immediate"


_CSI_DRIVER_DEFAULTS = (("attachRequired", True), ("podInfoOnMount", False), ("storageCapacity", False),
                        ("fsGroupPolicy", "ReadWriteOnceWithFSType"), ("volumeLifecycleModes", ["Persistent"]),
                        ("requiresRepublish", False), ("seLinuxMount", False))


def default_csi_driver(rt: ResourceType, driver: dict) -> None:
    spec = driver.setdefault("spec", {})
    for field, value in _CSI_DRIVER_DEFAULTS:
        if spec.get(field) is None or spec.get(field) == []:
            spec[field] = list(value) if isinstance(value, list) else value


def default_limit_range(rt: ResourceType, lr: dict) -> None:
    """SetDefaults_LimitRangeItem: a Container item's default limit from max, default request from the
    default limit or else from min."""
    for item in (lr.get("spec") or {}).get("limits") or []:
        for field in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
            canonical_resource_list(rt, item.get(field))
        if item.get("type") != "Container":
            continue
        default = dict(item.get("default") or {})
        request = dict(item.get("defaultRequest") or {})
        for name, value in (item.get("max") or {}).items():
            default.setdefault(name, value)
        for name, value in default.items():
            request.setdefault(name, value)
        for name, value in (item.get("min") or {}).items():
            request.setdefault(name, value)
        if default:
            item["default"] = default
        if request:
            item["defaultRequest"] = request


def default_resource_quota(rt: ResourceType, quota: dict) -> None:
    canonical_resource_list(rt, (quota.get("spec") or {}).get("hard"))
    status = quota.get("status") or {}
    canonical_resource_list(rt, status.get("hard"))
    canonical_resource_list(rt, status.get("used"))
