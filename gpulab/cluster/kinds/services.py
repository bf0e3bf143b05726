"""Services: pkg/registry/core/service (strategy.go, storage/alloc.go).

A Service of a type that needs one gets a cluster IP from the service CIDR
(10.96.0.0/12, kind's default) when it names none: the lowest free address,
where upstream's allocator picks a random one.
"""
from __future__ import annotations

from ..defaults import core as defaults
from ..printers import Printer
from ..printers import core as printers
from ..registry import ResourceType
from ..validation import core as validation
from .strategy import PROXY_VERBS, Context, Strategy, Subresource


class ServiceStrategy(Strategy):
    resource = ResourceType("", "v1", "services", "Service", True, short_names=("svc",), categories=("all",),
                            subresources=("status", "proxy"))
    subresources = {"proxy": Subresource(PROXY_VERBS, ("", "v1", "ServiceProxyOptions"), connect=True)}
    returns_deleted_object = True
    allow_create_on_update = True
    printer = Printer(printers.service_columns, printers.service_cells)

    def default(self, obj: dict) -> None:
        defaults.default_service(self.resource, obj)

    def prepare_for_create(self, obj: dict, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        spec = obj.setdefault("spec", {})
        if spec.get("type") == "ExternalName" or spec.get("clusterIP") == "None":
            return
        if not spec.get("clusterIP"):
            spec["clusterIP"] = _free_cluster_ip(ctx)
        spec.setdefault("clusterIPs", [spec["clusterIP"]])

    def validate(self, obj: dict) -> list:
        return validation.validate_service(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        if subresource == "status":
            return super().validate_update(new, old)
        return validation.validate_service_update(new, old)


def _free_cluster_ip(ctx: Context) -> str:
    used = {(s.get("spec") or {}).get("clusterIP") for s in ctx.list("services")}
    n = 1
    while (ip := f"10.96.{n // 254}.{n % 254 + 1}") in used:
        n += 1
    return ip
