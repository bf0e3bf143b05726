"""StatefulSets: pkg/registry/apps/statefulset/strategy.go.

PrepareForCreate resets the status and starts the generation at 1;
PrepareForUpdate keeps the status and bumps the generation when the spec
changes. The status subresource resets the spec (GetResetFields).
"""
from __future__ import annotations

from ..defaults import controllers as defaults
from ..printers import Printer
from ..printers import replication as printers
from ..registry import ResourceType
from ..validation import pod_warnings
from ..validation import statefulsets as validation
from .strategy import SCALE, Context, Strategy


class StatefulSetStrategy(Strategy):
    resource = ResourceType("apps", "v1", "statefulsets", "StatefulSet", True, short_names=("sts",),
                            categories=("all",), subresources=("status", "scale"))
    subresources = {"scale": SCALE}
    has_generation = True
    printer = Printer(printers.statefulset_columns, printers.statefulset_cells)

    def default(self, obj: dict) -> None:
        defaults.default_statefulset(self.resource, obj)

    def prepare_for_create(self, obj: dict, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        obj["status"] = {"replicas": 0, "availableReplicas": 0}

    def validate(self, obj: dict) -> list:
        return validation.validate_statefulset(obj)

    def warnings_on_create(self, obj: dict) -> list[str]:
        return pod_warnings.template_warnings(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        if subresource == "status":
            return validation.validate_statefulset_status_update(new, old)
        return validation.validate_statefulset_update(new, old)
