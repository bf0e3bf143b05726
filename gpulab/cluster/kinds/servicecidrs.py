"""ServiceCIDRs: pkg/registry/networking/servicecidr/strategy.go (the CIDRs are fixed once created)."""
from __future__ import annotations

from ..printers import Printer
from ..printers import networking as printers
from ..registry import ResourceType
from ..validation import networking as validation
from .simple import SimpleStrategy


class ServiceCIDRStrategy(SimpleStrategy):
    resource = ResourceType("networking.k8s.io", "v1", "servicecidrs", "ServiceCIDR", False,
                            subresources=("status",))
    printer = Printer(printers.servicecidr_columns, printers.servicecidr_cells)
    validator = staticmethod(validation.validate_service_cidr)
    update_validator = staticmethod(validation.validate_service_cidr_update)
