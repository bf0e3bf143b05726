"""FlowSchemas: pkg/registry/flowcontrol/flowschema/strategy.go (stored; requests are not throttled)."""
from __future__ import annotations

from ..printers import Printer
from ..printers import cluster as printers
from ..registry import ResourceType
from ..validation import flowcontrol as validation
from ..validation.updates import update_of
from .simple import SimpleStrategy


class FlowSchemaStrategy(SimpleStrategy):
    resource = ResourceType("flowcontrol.apiserver.k8s.io", "v1", "flowschemas", "FlowSchema", False,
                            subresources=("status",))
    has_generation = True
    printer = Printer(printers.flowschema_columns, printers.flowschema_cells)
    validator = staticmethod(validation.validate_flow_schema)
    update_validator = staticmethod(update_of(validation.validate_flow_schema))
