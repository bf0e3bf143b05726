"""StorageClasses: pkg/registry/storage/storageclass/strategy.go (cluster-scoped; parameters, provisioner,
reclaimPolicy and volumeBindingMode fixed once created)."""
from __future__ import annotations

from ..defaults import storage as defaults
from ..printers import Printer
from ..printers import storage as printers
from ..registry import ResourceType
from ..validation import storage as validation
from .simple import SimpleStrategy


class StorageClassStrategy(SimpleStrategy):
    resource = ResourceType("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, short_names=("sc",))
    printer = Printer(printers.storageclass_columns, printers.storageclass_cells)
    defaulter = staticmethod(defaults.default_storage_class)
    validator = staticmethod(validation.validate_storage_class)
    update_validator = staticmethod(validation.validate_storage_class_update)
