"""PodTemplates: pkg/registry/core/podtemplate/strategy.go (generation bumped when the template changes)."""
from __future__ import annotations

from ..defaults import controllers as defaults
from ..printers import Printer
from ..printers import replication as printers
from ..registry import ResourceType
from ..validation import replication as validation
from .strategy import Strategy


class PodTemplateStrategy(Strategy):
    resource = ResourceType("", "v1", "podtemplates", "PodTemplate", True)
    has_generation = True
    printer = Printer(printers.podtemplate_columns, printers.podtemplate_cells)

    def default(self, obj: dict) -> None:
        defaults.default_pod_template(self.resource, obj)

    def validate(self, obj: dict) -> list:
        return validation.validate_pod_template(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        return validation.validate_pod_template_update(new, old)
