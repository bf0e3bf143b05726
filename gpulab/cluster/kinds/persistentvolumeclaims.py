"""PersistentVolumeClaims: pkg/registry/core/persistentvolumeclaim/strategy.go.

A new claim starts Pending (the status is reset; Pending is the default
upstream applies on every read); the status subresource keeps the spec. The
StorageObjectInUseProtection admission plugin adds the
``kubernetes.io/pvc-protection`` finalizer, so a claim a pod uses stays
terminating until that pod is gone (:mod:`gpulab.cluster.admission.storage`).
"""
from __future__ import annotations

from ..defaults import storage as defaults
from ..printers import Printer
from ..printers import storage as printers
from ..registry import ResourceType
from ..validation import storage as validation
from .strategy import Context, Strategy

_BETA_CLASS = "volume.beta.kubernetes.io/storage-class"


class PersistentVolumeClaimStrategy(Strategy):
    resource = ResourceType("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, short_names=("pvc",),
                            subresources=("status",))
    printer = Printer(printers.pvc_columns, printers.pvc_cells)

    def default(self, obj: dict) -> None:
        defaults.default_claim(self.resource, obj)

    def prepare_for_create(self, obj: dict, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        obj["status"] = {"phase": "Pending"}

    def validate(self, obj: dict) -> list:
        return validation.validate_claim(obj)

    def warnings_on_create(self, obj: dict) -> list[str]:
        """GetWarningsForPersistentVolumeClaim: the deprecated beta class annotation."""
        if _BETA_CLASS in ((obj.get("metadata") or {}).get("annotations") or {}):
            return [f'metadata.annotations[{_BETA_CLASS}]: deprecated since v1.8; use "storageClassName" attribute '
                    'instead']
        return []

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        if subresource == "status":
            return validation.validate_claim_status_update(new, old)
        return validation.validate_claim_update(new, old)
