"""ResourceSlices (resource.k8s.io/v1): pkg/registry/resource/resourceslice/strategy.go.

Selectable by ``spec.nodeName`` and ``spec.driver`` (the fields a kubelet
plugin and the scheduler list slices by); a device taint without
``timeAdded`` gets the time it was stored, on create and on update
(SetDefaults_DeviceTaint, which reads the clock whenever a request is decoded:
a driver republishing a slice with a new taint leaves the time to the server).
"""
from __future__ import annotations

from ..objects import rfc3339
from ..printers import Printer
from ..printers import resource as printers
from ..registry import ResourceType
from ..validation import resource as validation
from .dra_gates import drop_taints
from .strategy import Context, Strategy


def _stamp_taints(obj: dict, now: str) -> None:
    for device in (obj.get("spec") or {}).get("devices") or ():
        for taint in (device or {}).get("taints") or ():
            if isinstance(taint, dict) and not taint.get("timeAdded"):
                taint["timeAdded"] = now


class ResourceSliceStrategy(Strategy):
    resource = ResourceType("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False)
    has_generation = True
    printer = Printer(printers.slice_columns, printers.slice_cells)
    selectable_fields = {"spec.nodeName": None, "spec.driver": None}

    def prepare_for_create(self, obj: dict, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        drop_taints(obj, None)
        _stamp_taints(obj, rfc3339(ctx.clock()))

    def prepare_for_update(self, new: dict, old: dict, subresource: str | None = None) -> dict:
        drop_taints(new, old)
        return super().prepare_for_update(new, old, subresource)

    def admit_update(self, obj: dict, old: dict, ctx: Context) -> None:
        _stamp_taints(obj, rfc3339(ctx.clock()))  # defaulting, which needs the API's clock

    def validate(self, obj: dict) -> list:
        return validation.validate_slice(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        return validation.validate_slice_update(new, old)
