"""PriorityClasses: pkg/registry/scheduling/priorityclass/strategy.go and the Priority admission plugin's check
that only one class is the global default."""
from __future__ import annotations

from ..defaults import admission
from ..defaults import workloads as defaults
from ..printers import Printer
from ..printers import workloads as printers
from ..registry import ResourceType
from ..validation import priority_classes as validation
from .strategy import Context, Strategy


class PriorityClassStrategy(Strategy):
    resource = ResourceType("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False,
                            short_names=("pc",))
    printer = Printer(printers.priorityclass_columns, printers.priorityclass_cells)

    def default(self, obj: dict) -> None:
        defaults.default_priority_class(self.resource, obj)

    def admit_create(self, obj: dict, ctx: Context) -> None:
        admission.admit_priority_class(self.resource, obj, ctx.list)

    def validate(self, obj: dict) -> list:
        return validation.validate_priority_class(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        return validation.validate_priority_class_update(new, old)
