"""CSINodes: pkg/registry/storage/csinode/strategy.go (one per node, written by its kubelet)."""
from __future__ import annotations

from ..printers import Printer
from ..printers import storage as printers
from ..registry import ResourceType
from ..validation import storage as validation
from ..validation.updates import update_of
from .simple import SimpleStrategy


class CSINodeStrategy(SimpleStrategy):
    resource = ResourceType("storage.k8s.io", "v1", "csinodes", "CSINode", False)
    printer = Printer(printers.csinode_columns, printers.csinode_cells)
    validator = staticmethod(validation.validate_csi_node)
    update_validator = staticmethod(update_of(validation.validate_csi_node))
