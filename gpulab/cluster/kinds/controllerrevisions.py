"""ControllerRevisions: pkg/registry/apps/controllerrevision/strategy.go."""
from __future__ import annotations

from ..printers import Printer
from ..printers import workloads as printers
from ..registry import ResourceType
from ..validation import apps as validation
from .strategy import Strategy


class ControllerRevisionStrategy(Strategy):
    resource = ResourceType("apps", "v1", "controllerrevisions", "ControllerRevision", True)
    printer = Printer(printers.controllerrevision_columns, printers.controllerrevision_cells)

    def validate(self, obj: dict) -> list:
        return validation.validate_controller_revision(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        return validation.validate_controller_revision_update(new, old)
