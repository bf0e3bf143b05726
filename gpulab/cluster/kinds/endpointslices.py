"""EndpointSlices: pkg/registry/discovery/endpointslice/strategy.go (generation bumped on every change)."""
from __future__ import annotations

from ..defaults import networking as defaults
from ..printers import Printer
from ..printers import networking as printers
from ..registry import ResourceType
from ..validation import networking as validation
from .simple import SimpleStrategy


class EndpointSliceStrategy(SimpleStrategy):
    resource = ResourceType("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True)
    has_generation = True
    printer = Printer(printers.endpointslice_columns, printers.endpointslice_cells)
    defaulter = staticmethod(defaults.default_endpoint_slice)
    validator = staticmethod(validation.validate_endpoint_slice)
    update_validator = staticmethod(validation.validate_endpoint_slice_update)
