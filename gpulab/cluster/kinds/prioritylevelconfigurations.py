"""PriorityLevelConfigurations: pkg/registry/flowcontrol/prioritylevelconfiguration/strategy.go."""
from __future__ import annotations

from ..printers import Printer
from ..printers import cluster as printers
from ..registry import ResourceType
from ..validation import flowcontrol as validation
from ..validation.updates import update_of
from .simple import SimpleStrategy


class PriorityLevelConfigurationStrategy(SimpleStrategy):
    resource = ResourceType("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations",
                            "PriorityLevelConfiguration", False, subresources=("status",))
    has_generation = True
    printer = Printer(printers.prioritylevel_columns, printers.prioritylevel_cells)
    validator = staticmethod(validation.validate_priority_level)
    update_validator = staticmethod(update_of(validation.validate_priority_level))
