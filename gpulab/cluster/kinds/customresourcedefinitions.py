"""CustomResourceDefinitions: apiextensions-apiserver's pkg/registry/customresourcedefinition/strategy.go.

A CRD is established as soon as it is stored (no naming conflicts to wait
for), so writing one changes what the registry serves at once; deleting one
removes its custom resources with it (upstream's ``customresourcecleanup``
finalizer does that asynchronously).
"""
from __future__ import annotations

from ..objects import clone, rfc3339
from ..printers import Printer
from ..printers import apiextensions as printers
from ..registry import ResourceType
from ..validation import crd as validation
from .strategy import Context, Strategy


class CustomResourceDefinitionStrategy(Strategy):
    resource = ResourceType("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
                            False, short_names=("crd", "crds"), categories=("api-extensions",),
                            subresources=("status",))
    has_generation = True
    printer = Printer(printers.crd_columns, printers.crd_cells)
    # statusStrategy.GetResetFields
    status_reset_fields = (("metadata",), ("spec",))

    def prepare_for_create(self, obj: dict, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        validation.crd_defaults(obj)
        obj["status"] = validation.crd_established_status(obj, rfc3339(ctx.clock()))

    def validate(self, obj: dict) -> list:
        return validation.validate_crd(obj, old=None)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        if subresource == "status":
            return super().validate_update(new, old)
        return validation.validate_crd(new, old=old)

    def before_store(self, obj: dict, registry) -> None:
        if not obj["metadata"].get("deletionTimestamp"):
            registry.add_crd(obj)

    def after_remove(self, obj: dict, registry, store) -> None:
        spec = obj["spec"]
        key = f"{spec['names']['plural']}.{spec['group']}"
        registry.remove_crd(obj["metadata"]["name"])
        for custom in store.list(key):
            gone = clone(custom)
            gone["metadata"]["resourceVersion"] = str(store.next_rv())
            store.remove(key, gone)
