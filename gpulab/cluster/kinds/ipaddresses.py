"""IPAddresses: pkg/registry/networking/ipaddress/strategy.go (named by the address, parentRef fixed)."""
from __future__ import annotations

from ..printers import Printer
from ..printers import networking as printers
from ..registry import ResourceType
from ..validation import networking as validation
from .simple import SimpleStrategy


class IPAddressStrategy(SimpleStrategy):
    resource = ResourceType("networking.k8s.io", "v1", "ipaddresses", "IPAddress", False, short_names=("ip",))
    printer = Printer(printers.ipaddress_columns, printers.ipaddress_cells)
    validator = staticmethod(validation.validate_ip_address)
    update_validator = staticmethod(validation.validate_ip_address_update)
