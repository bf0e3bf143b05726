"""CSIDrivers: pkg/registry/storage/csidriver/strategy.go."""
from __future__ import annotations

from ..defaults import storage as defaults
from ..printers import Printer
from ..printers import storage as printers
from ..registry import ResourceType
from ..validation import storage as validation
from .simple import SimpleStrategy


class CSIDriverStrategy(SimpleStrategy):
    resource = ResourceType("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False)
    printer = Printer(printers.csidriver_columns, printers.csidriver_cells)
    defaulter = staticmethod(defaults.default_csi_driver)
    validator = staticmethod(validation.validate_csi_driver)
    update_validator = staticmethod(validation.validate_csi_driver_update)
