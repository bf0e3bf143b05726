"""Leases: pkg/registry/coordination/lease/strategy.go."""
from __future__ import annotations

from ..printers import Printer
from ..printers import workloads as printers
from ..registry import ResourceType
from ..validation import leases as validation
from .strategy import Strategy


class LeaseStrategy(Strategy):
    resource = ResourceType("coordination.k8s.io", "v1", "leases", "Lease", True)
    allow_create_on_update = True
    printer = Printer(printers.lease_columns, printers.lease_cells)

    def validate(self, obj: dict) -> list:
        return validation.validate_lease(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        return validation.validate_lease_update(new, old)
