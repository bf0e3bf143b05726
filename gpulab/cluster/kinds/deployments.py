"""Deployments: pkg/registry/apps/deployment/strategy.go (status writes keep the stored labels)."""
from __future__ import annotations

from ..defaults import workloads as defaults
from ..printers import Printer
from ..printers import workloads as printers
from ..registry import ResourceType
from ..validation import apps as validation
from ..validation import pod_warnings
from .strategy import SCALE, Context, Strategy


class DeploymentStrategy(Strategy):
    resource = ResourceType("apps", "v1", "deployments", "Deployment", True, short_names=("deploy",),
                            categories=("all",), subresources=("status", "scale"))
    subresources = {"scale": SCALE}
    has_generation = True
    printer = Printer(printers.deployment_columns, printers.deployment_cells)
    # deploymentStatusStrategy: PrepareForUpdate keeps the old labels; GetResetFields
    status_request_metadata = ("annotations",)
    status_reset_fields = (("spec",), ("metadata", "labels"))

    def default(self, obj: dict) -> None:
        defaults.default_deployment(self.resource, obj)

    def prepare_for_create(self, obj: dict, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        obj["status"] = {}

    def validate(self, obj: dict) -> list:
        return validation.validate_deployment(obj)

    def warnings_on_create(self, obj: dict) -> list[str]:
        return pod_warnings.template_warnings(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        if subresource == "status":
            return validation.validate_workload_status_update("Deployment", new, old)
        return validation.validate_deployment_update(new, old)
