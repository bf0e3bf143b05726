"""Custom resources: apiextensions-apiserver's pkg/registry/customresource/strategy.go and status_strategy.go.

One strategy per served version of a CRD, built from that version's schema:
decoding prunes unknown fields and applies the schema's defaults, a status
write changes only ``status``, the printer uses the version's
``additionalPrinterColumns`` and field selectors its ``selectableFields``.
"""
from __future__ import annotations

import functools

from ..printers import CustomResourcePrinter
from ..registry import ResourceType
from ..validation import custom as validation
from .strategy import SCALE, Context, Strategy


class CustomResourceStrategy(Strategy):
    has_generation = True
    subresources = {"scale": SCALE}
    status_request_metadata = ()

    def __init__(self, rt: ResourceType):
        self.resource = rt

    @functools.cached_property
    def printer(self) -> CustomResourcePrinter:
        return CustomResourcePrinter(self.resource.crd)

    @functools.cached_property
    def selectable_fields(self) -> dict:
        return {(f.get("jsonPath") or "").lstrip("."): None for f in self.resource.crd.get("selectableFields") or ()}

    def decode(self, obj: dict, served: ResourceType) -> None:
        """Pruning of unknown fields and the schema's defaults (the structural decoder)."""
        validation.prune_and_default(self.resource, obj)

    def prepare_for_create(self, obj: dict, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        if self.has_status:
            obj.pop("status", None)

    def validate(self, obj: dict) -> list:
        return validation.validate_custom_resource(self.resource, obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        return validation.validate_custom_resource(self.resource, new, old=old)
