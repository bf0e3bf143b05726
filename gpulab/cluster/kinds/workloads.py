"""Workloads (scheduling.k8s.io/v1beta1, KEP-4671): pkg/registry/scheduling/workload/strategy.go.
Served only with the ``GenericWorkload`` gate (off by default in v1.37, as its group-version)."""
from __future__ import annotations

from ..registry import ResourceType
from ..validation import gangs as validation
from .strategy import Strategy


class WorkloadStrategy(Strategy):
    resource = ResourceType("scheduling.k8s.io", "v1beta1", "workloads", "Workload", True)
    has_generation = True
    feature_gate = "GenericWorkload"

    def validate(self, obj: dict) -> list:
        return validation.validate_workload(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        return validation.validate_workload_update(new, old)
