"""PersistentVolumes: pkg/registry/core/persistentvolume/strategy.go.

A new volume is Pending with its lastPhaseTransitionTime (the
PersistentVolumeLastPhaseTransitionTime feature, GA). Upstream's status
strategy also stamps the time when a status write changes the phase; here the
volume controller, the one writer of volume phases, stamps it itself.
"""
from __future__ import annotations

from ..defaults import storage as defaults
from ..objects import rfc3339
from ..printers import Printer
from ..printers import storage as printers
from ..registry import ResourceType
from ..validation import storage as validation
from .strategy import Context, Strategy


class PersistentVolumeStrategy(Strategy):
    resource = ResourceType("", "v1", "persistentvolumes", "PersistentVolume", False, short_names=("pv",),
                            subresources=("status",))
    printer = Printer(printers.pv_columns, printers.pv_cells)

    def default(self, obj: dict) -> None:
        defaults.default_volume(self.resource, obj)

    def prepare_for_create(self, obj: dict, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        obj["status"] = {"phase": "Pending", "lastPhaseTransitionTime": rfc3339(ctx.clock())}

    def validate(self, obj: dict) -> list:
        return validation.validate_volume(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        if subresource == "status":
            return validation.validate_volume_status_update(new, old)
        return validation.validate_volume_update(new, old)
