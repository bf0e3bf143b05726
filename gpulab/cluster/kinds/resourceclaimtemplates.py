"""ResourceClaimTemplates (resource.k8s.io/v1): pkg/registry/resource/resourceclaimtemplate/strategy.go.
The template's ``spec`` is immutable."""
from __future__ import annotations

from ..defaults import resource as defaults
from ..printers import Printer
from ..printers import resource as printers
from ..registry import ResourceType
from ..validation import resource as validation
from .dra_gates import drop_tolerations
from .strategy import Context, Strategy


class ResourceClaimTemplateStrategy(Strategy):
    resource = ResourceType("resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", True)
    printer = Printer(printers.plain_columns, printers.plain_cells)

    def default(self, obj: dict) -> None:
        defaults.default_claim_spec((obj.get("spec") or {}).get("spec"))

    def prepare_for_create(self, obj: dict, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        drop_tolerations((obj.get("spec") or {}).get("spec"), None)

    def prepare_for_update(self, new: dict, old: dict, subresource: str | None = None) -> dict:
        drop_tolerations((new.get("spec") or {}).get("spec"), (old.get("spec") or {}).get("spec"))
        return super().prepare_for_update(new, old, subresource)

    def validate(self, obj: dict) -> list:
        return validation.validate_claim_template(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        return validation.validate_claim_template_update(new, old)
