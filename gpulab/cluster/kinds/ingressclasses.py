"""IngressClasses: pkg/registry/networking/ingressclass/strategy.go (the controller is fixed once set)."""
from __future__ import annotations

from ..printers import Printer
from ..printers import networking as printers
from ..registry import ResourceType
from ..validation import networking as validation
from .simple import SimpleStrategy


class IngressClassStrategy(SimpleStrategy):
    resource = ResourceType("networking.k8s.io", "v1", "ingressclasses", "IngressClass", False)
    has_generation = True
    printer = Printer(printers.ingressclass_columns, printers.ingressclass_cells)
    validator = staticmethod(validation.validate_ingress_class)
    update_validator = staticmethod(validation.validate_ingress_class_update)
