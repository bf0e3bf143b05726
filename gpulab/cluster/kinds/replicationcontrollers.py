"""ReplicationControllers: pkg/registry/core/replicationcontroller/strategy.go; the Scale subresource reports
the selector map as a selector string."""
from __future__ import annotations

from ..defaults import controllers as defaults
from ..printers import Printer
from ..printers import replication as printers
from ..registry import ResourceType
from ..validation import pod_warnings
from ..validation import replication as validation
from .strategy import SCALE, Context, Strategy


class ReplicationControllerStrategy(Strategy):
    resource = ResourceType("", "v1", "replicationcontrollers", "ReplicationController", True, short_names=("rc",),
                            categories=("all",), subresources=("status", "scale"))
    subresources = {"scale": SCALE}
    has_generation = True
    printer = Printer(printers.replicationcontroller_columns, printers.replicationcontroller_cells)
    selectable_fields = {"status.replicas": None}

    def default(self, obj: dict) -> None:
        defaults.default_replication_controller(self.resource, obj)

    def prepare_for_create(self, obj: dict, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        obj["status"] = {"replicas": 0}

    def validate(self, obj: dict) -> list:
        return validation.validate_replication_controller(obj)

    def warnings_on_create(self, obj: dict) -> list[str]:
        return pod_warnings.template_warnings(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        if subresource == "status":
            return validation.validate_replication_controller_status_update(new, old)
        return validation.validate_replication_controller_update(new, old)

    def scale_selector(self, obj: dict) -> str:
        """labels.SelectorFromSet(spec.selector).String()."""
        selector = (obj.get("spec") or {}).get("selector") or {}
        return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
