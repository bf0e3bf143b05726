"""Ingresses: pkg/registry/networking/ingress/strategy.go (status reset to an empty load balancer; generation).
The DefaultIngressClass admission plugin fills ``spec.ingressClassName`` (:mod:`gpulab.cluster.admission.ingressclass`)."""
from __future__ import annotations

from ..printers import Printer
from ..printers import networking as printers
from ..registry import ResourceType
from ..validation import networking as validation
from .simple import SimpleStrategy
from .strategy import Context


class IngressStrategy(SimpleStrategy):
    resource = ResourceType("networking.k8s.io", "v1", "ingresses", "Ingress", True, short_names=("ing",),
                            subresources=("status",))
    has_generation = True
    printer = Printer(printers.ingress_columns, printers.ingress_cells)
    validator = staticmethod(validation.validate_ingress)
    update_validator = staticmethod(validation.validate_ingress_update)
    status_validator = staticmethod(validation.validate_ingress_status_update)

    def prepare_for_create(self, obj: dict, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        obj["status"] = {"loadBalancer": {}}
