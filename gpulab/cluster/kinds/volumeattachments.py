"""VolumeAttachments: pkg/registry/storage/volumeattachment/strategy.go (the spec is immutable; attach status
through the status subresource)."""
from __future__ import annotations

from ..printers import Printer
from ..printers import storage as printers
from ..registry import ResourceType
from ..validation import storage as validation
from .simple import SimpleStrategy


class VolumeAttachmentStrategy(SimpleStrategy):
    resource = ResourceType("storage.k8s.io", "v1", "volumeattachments", "VolumeAttachment", False,
                            subresources=("status",))
    printer = Printer(printers.volumeattachment_columns, printers.volumeattachment_cells)
    validator = staticmethod(validation.validate_volume_attachment)
    update_validator = staticmethod(validation.validate_volume_attachment_update)
