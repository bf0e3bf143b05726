"""VolumeAttributesClasses: pkg/registry/storage/volumeattributesclass/strategy.go."""
from __future__ import annotations

from ..printers import Printer
from ..printers import storage as printers
from ..registry import ResourceType
from ..validation import storage as validation
from .simple import SimpleStrategy


class VolumeAttributesClassStrategy(SimpleStrategy):
    resource = ResourceType("storage.k8s.io", "v1", "volumeattributesclasses", "VolumeAttributesClass", False,
                            short_names=("vac",))
    printer = Printer(printers.volumeattributesclass_columns, printers.volumeattributesclass_cells)
    validator = staticmethod(validation.validate_volume_attributes_class)
    update_validator = staticmethod(validation.validate_volume_attributes_class_update)
