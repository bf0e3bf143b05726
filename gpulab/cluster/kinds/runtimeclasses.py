"""RuntimeClasses: pkg/registry/node/runtimeclass/strategy.go (the handler is fixed once created). The
RuntimeClass admission plugin applies them to pods (:mod:`gpulab.cluster.admission.runtimeclass`)."""
from __future__ import annotations

from ..defaults.quantities import canonical_resource_list
from ..printers import Printer
from ..printers import cluster as printers
from ..registry import ResourceType
from ..validation import runtimeclasses as validation
from .simple import SimpleStrategy


class RuntimeClassStrategy(SimpleStrategy):
    resource = ResourceType("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", False)
    printer = Printer(printers.runtimeclass_columns, printers.runtimeclass_cells)
    validator = staticmethod(validation.validate_runtime_class)
    update_validator = staticmethod(validation.validate_runtime_class_update)

    def default(self, obj: dict) -> None:
        canonical_resource_list(self.resource, (obj.get("overhead") or {}).get("podFixed"))
