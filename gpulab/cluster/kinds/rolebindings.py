"""RoleBindings: pkg/registry/rbac/rolebinding/strategy.go, behind the escalation check of
rolebinding/policybased/storage.go (``bind`` on the role, or holding its rules)."""
from __future__ import annotations

from ..auth import escalation
from ..defaults import rbac as defaults
from ..printers import Printer
from ..printers import rbac as printers
from ..registry import ResourceType
from ..validation import rbac as validation
from .strategy import Context, Strategy


class RoleBindingStrategy(Strategy):
    resource = ResourceType("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True)
    allow_create_on_update = True
    printer = Printer(printers.rolebinding_columns, printers.binding_cells)

    def default(self, obj: dict) -> None:
        defaults.default_binding(obj)

    def admit_create(self, obj: dict, ctx: Context) -> None:
        escalation.check_binding("rolebindings", obj, ctx)

    def admit_update(self, obj: dict, old: dict, ctx: Context) -> None:
        escalation.check_binding("rolebindings", obj, ctx)

    def validate(self, obj: dict) -> list:
        return validation.validate_role_binding(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        return validation.validate_binding_update(new, old, validation.validate_role_binding)
