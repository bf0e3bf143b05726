"""CSIStorageCapacities: pkg/registry/storage/csistoragecapacity/strategy.go."""
from __future__ import annotations

from ..printers import Printer
from ..printers import storage as printers
from ..registry import ResourceType
from ..validation import storage as validation
from ..validation.updates import update_of
from .simple import SimpleStrategy


class CSIStorageCapacityStrategy(SimpleStrategy):
    resource = ResourceType("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity", True)
    printer = Printer(printers.csistoragecapacity_columns, printers.csistoragecapacity_cells)
    validator = staticmethod(validation.validate_csi_storage_capacity)
    update_validator = staticmethod(update_of(validation.validate_csi_storage_capacity))
