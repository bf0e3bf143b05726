"""ResourceClaims (resource.k8s.io/v1): pkg/registry/resource/resourceclaim/strategy.go.

A new claim's status is reset to the empty one (``status: {}``); the spec is
immutable; the status subresource carries the allocation and ``reservedFor``
that the scheduler and the ResourceClaim controller write.
"""
from __future__ import annotations

from ..defaults import resource as defaults
from ..printers import Printer
from ..printers import resource as printers
from ..registry import ResourceType
from ..validation import resource as validation
from .dra_gates import drop_tolerations
from .strategy import Context, Strategy


class ResourceClaimStrategy(Strategy):
    resource = ResourceType("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True,
                            subresources=("status",))
    printer = Printer(printers.claim_columns, printers.claim_cells)

    def default(self, obj: dict) -> None:
        defaults.default_claim_spec(obj.get("spec"))

    def prepare_for_create(self, obj: dict, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        obj["status"] = {}
        drop_tolerations(obj.get("spec"), None)

    def prepare_for_update(self, new: dict, old: dict, subresource: str | None = None) -> dict:
        if subresource is None:
            drop_tolerations(new.get("spec"), old.get("spec"))
        return super().prepare_for_update(new, old, subresource)

    def validate(self, obj: dict) -> list:
        return validation.validate_claim(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        if subresource == "status":
            return validation.validate_claim_status_update(new, old)
        return validation.validate_claim_update(new, old)
