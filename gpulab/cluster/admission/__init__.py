"""kube-apiserver's admission plugins that reach across kinds (plugin/pkg/admission/*).

The mutating plugins that only fill in one kind's fields on create
(ServiceAccount, Priority, DefaultTolerationSeconds) are that kind's
strategy's ``admit_create``; the plugins here read or write other objects
(a namespace's LimitRanges and ResourceQuotas, StorageClasses,
RuntimeClasses, IngressClasses) or apply to many kinds. :mod:`gpulab.cluster.api`
runs them at the two points kube-apiserver does: :func:`admit` after the
strategy's own mutating admission, :func:`validate` after the object passed
validation and before it is stored, each plugin in the order of
kube-apiserver's default plugin list (pkg/kubeapiserver/options/plugins.go:
LimitRanger, DefaultStorageClass, StorageObjectInUseProtection, RuntimeClass,
DefaultIngressClass, ..., PersistentVolumeClaimResize, ResourceQuota).

A plugin sees ``api`` (the in-process :class:`~gpulab.cluster.api.Api`), the
operation (``CREATE`` or ``UPDATE``), the storage resource type, the new
object (to change in place when mutating) and the stored one on update; it
rejects with an :class:`~gpulab.cluster.errors.ApiError`.
"""
from __future__ import annotations

from . import ingressclass, limitranger, resourcequota, runtimeclass, storage

_MUTATING = (limitranger.admit, storage.admit_default_storage_class, storage.admit_in_use_protection,
             runtimeclass.admit, ingressclass.admit)
_VALIDATING = (limitranger.validate, runtimeclass.validate, storage.validate_claim_resize, resourcequota.validate)


def admit(api, operation: str, rt, obj: dict, old: dict | None) -> None:
    """The mutating plugins, in kube-apiserver's order."""
    for plugin in _MUTATING:
        plugin(api, operation, rt, obj, old)


def validate(api, operation: str, rt, obj: dict, old: dict | None, *, dry_run: bool = False) -> None:
    """The validating plugins, in kube-apiserver's order; ResourceQuota last, charging the quota unless dry-run."""
    for plugin in _VALIDATING:
        plugin(api, operation, rt, obj, old, dry_run)
