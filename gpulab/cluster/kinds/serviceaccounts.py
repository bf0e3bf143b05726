"""ServiceAccounts: pkg/registry/core/serviceaccount/strategy.go; ``serviceaccounts/token`` (TokenRequest) is
answered by :mod:`gpulab.cluster.auth.reviews`."""
from __future__ import annotations

from ..printers import Printer
from ..printers import core as printers
from ..registry import ResourceType
from ..validation import core as validation
from .strategy import Strategy, Subresource


class ServiceAccountStrategy(Strategy):
    resource = ResourceType("", "v1", "serviceaccounts", "ServiceAccount", True, short_names=("sa",),
                            subresources=("token",))
    subresources = {"token": Subresource(verbs=("create",), kind=("authentication.k8s.io", "v1", "TokenRequest"))}
    returns_deleted_object = True
    allow_create_on_update = True
    printer = Printer(printers.serviceaccount_columns, printers.serviceaccount_cells)

    def validate(self, obj: dict) -> list:
        return validation.validate_service_account(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        return super().validate_update(new, old) + validation.validate_service_account(new)
