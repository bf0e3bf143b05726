"""DeviceClasses (resource.k8s.io/v1): pkg/registry/resource/deviceclass/strategy.go."""
from __future__ import annotations

from ..printers import Printer
from ..printers import resource as printers
from ..registry import ResourceType
from ..validation import resource as validation
from .strategy import Strategy


class DeviceClassStrategy(Strategy):
    resource = ResourceType("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False)
    has_generation = True
    printer = Printer(printers.plain_columns, printers.plain_cells)

    def validate(self, obj: dict) -> list:
        return validation.validate_device_class(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        return validation.validate_device_class(new)
