"""Roles: pkg/registry/rbac/role/strategy.go, behind the escalation check of role/policybased/storage.go."""
from __future__ import annotations

from ..auth import escalation
from ..printers import Printer
from ..printers import rbac as printers
from ..registry import ResourceType
from ..validation import rbac as validation
from .strategy import Context, Strategy


class RoleStrategy(Strategy):
    resource = ResourceType("rbac.authorization.k8s.io", "v1", "roles", "Role", True)
    allow_create_on_update = True
    printer = Printer(printers.role_columns, printers.role_cells)

    def admit_create(self, obj: dict, ctx: Context) -> None:
        escalation.check_role("roles", obj)

    def admit_update(self, obj: dict, old: dict, ctx: Context) -> None:
        meta = obj["metadata"]
        escalation.check_role("roles", obj, ctx.lookup(self.resource.key, meta["name"], meta.get("namespace", "")))

    def validate(self, obj: dict) -> list:
        return validation.validate_role(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        return validation.validate_update(new, old, validation.validate_role)
