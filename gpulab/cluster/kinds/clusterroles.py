"""ClusterRoles: pkg/registry/rbac/clusterrole/strategy.go, behind the escalation check of
clusterrole/policybased/storage.go. The rules of an aggregated ClusterRole are written by the
clusterrole-aggregation controller (controllers/clusterrole_aggregation.py)."""
from __future__ import annotations

from ..auth import escalation
from ..printers import Printer
from ..printers import rbac as printers
from ..registry import ResourceType
from ..validation import rbac as validation
from .strategy import Context, Strategy


class ClusterRoleStrategy(Strategy):
    resource = ResourceType("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False)
    allow_create_on_update = True
    printer = Printer(printers.role_columns, printers.role_cells)

    def admit_create(self, obj: dict, ctx: Context) -> None:
        escalation.check_role("clusterroles", obj)

    def admit_update(self, obj: dict, old: dict, ctx: Context) -> None:
        escalation.check_role("clusterroles", obj, ctx.lookup(self.resource.key, obj["metadata"]["name"]))

    def validate(self, obj: dict) -> list:
        return validation.validate_cluster_role(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        return validation.validate_update(new, old, validation.validate_cluster_role)
