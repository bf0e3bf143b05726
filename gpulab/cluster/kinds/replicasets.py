"""ReplicaSets: pkg/registry/apps/replicaset/strategy.go."""
from __future__ import annotations

from ..defaults import workloads as defaults
from ..printers import Printer
from ..printers import workloads as printers
from ..registry import ResourceType
from ..validation import apps as validation
from ..validation import pod_warnings
from .strategy import SCALE, Context, Strategy


class ReplicaSetStrategy(Strategy):
    resource = ResourceType("apps", "v1", "replicasets", "ReplicaSet", True, short_names=("rs",),
                            categories=("all",), subresources=("status", "scale"))
    subresources = {"scale": SCALE}
    has_generation = True
    printer = Printer(printers.replicaset_columns, printers.replicaset_cells)
    selectable_fields = {"status.replicas": None}

    def default(self, obj: dict) -> None:
        defaults.default_replicaset(self.resource, obj)

    def prepare_for_create(self, obj: dict, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        obj["status"] = {"replicas": 0}  # the zero ReplicaSetStatus: replicas has no omitempty (types.go)

    def validate(self, obj: dict) -> list:
        return validation.validate_replicaset(obj)

    def warnings_on_create(self, obj: dict) -> list[str]:
        return pod_warnings.template_warnings(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        if subresource == "status":
            return validation.validate_workload_status_update("ReplicaSet", new, old)
        return validation.validate_replicaset_update(new, old)
