"""Endpoints: pkg/registry/core/endpoint/strategy.go. Deprecated since v1.33 in favour of EndpointSlices: every
request gets the deprecation warning; a PUT of a missing Endpoints creates it (AllowCreateOnUpdate)."""
from __future__ import annotations

from ..defaults import networking as defaults
from ..printers import Printer
from ..printers import networking as printers
from ..registry import ResourceType
from ..validation import networking as validation
from .simple import SimpleStrategy


class EndpointsStrategy(SimpleStrategy):
    resource = ResourceType("", "v1", "endpoints", "Endpoints", True, short_names=("ep",))
    allow_create_on_update = True
    deprecation_warning = "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"
    printer = Printer(printers.endpoints_columns, printers.endpoints_cells)
    defaulter = staticmethod(defaults.default_endpoints)
    validator = staticmethod(validation.validate_endpoints)
    update_validator = staticmethod(validation.validate_endpoints_update)
