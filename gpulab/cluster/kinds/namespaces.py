"""Namespaces: pkg/registry/core/namespace (strategy.go and storage.go's Delete).

A namespace is created with the ``kubernetes`` finalizer and phase Active.
Its spec and status change only through the ``finalize`` and ``status``
subresources; DELETE marks it Terminating until the namespace controller has
emptied it and removed the finalizer.
"""
from __future__ import annotations

from ..defaults import core as defaults
from ..objects import clone
from ..printers import Printer
from ..printers import core as printers
from ..registry import ResourceType
from ..validation import core as validation
from .strategy import Context, Strategy, Subresource


class NamespaceStrategy(Strategy):
    resource = ResourceType("", "v1", "namespaces", "Namespace", False, short_names=("ns",),
                            verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
                            subresources=("status", "finalize"))
    subresources = {"finalize": Subresource(("update",))}
    printer = Printer(printers.namespace_columns, printers.namespace_cells)
    selectable_fields = {"status.phase": None}

    def default(self, obj: dict) -> None:
        defaults.default_namespace(self.resource, obj)

    def prepare_for_create(self, obj: dict, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        obj.setdefault("spec", {})["finalizers"] = ["kubernetes"]
        obj["status"] = {"phase": "Active"}

    def prepare_for_update(self, new: dict, old: dict, subresource: str | None = None) -> dict:
        if subresource is None:  # namespaceStrategy: the finalizers change only through finalize
            new["spec"] = clone(old.get("spec") or {})
        return super().prepare_for_update(new, old, subresource)

    def validate(self, obj: dict) -> list:
        return validation.validate_namespace(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        if subresource == "status":
            return validation.validate_namespace_status_update(new, old)
        if subresource == "finalize":
            return validation.validate_namespace_finalize_update(new, old)
        return validation.validate_namespace(new) + super().validate_update(new, old)

    def deletes_at_once(self, obj: dict, finalizers: list[str], grace: int) -> bool:
        return not (obj.get("spec") or {}).get("finalizers") and not finalizers

    def prepare_for_delete(self, obj: dict) -> None:
        obj.setdefault("status", {})["phase"] = "Terminating"

    def deletion_complete(self, obj: dict) -> bool:
        return not (obj.get("spec") or {}).get("finalizers")
