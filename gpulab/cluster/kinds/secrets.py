"""Secrets: pkg/registry/core/secret/strategy.go."""
from __future__ import annotations

from ..defaults import core as defaults
from ..printers import Printer
from ..printers import core as printers
from ..registry import ResourceType
from ..validation import core as validation
from .strategy import Strategy


class SecretStrategy(Strategy):
    resource = ResourceType("", "v1", "secrets", "Secret", True)
    printer = Printer(printers.secret_columns, printers.secret_cells)
    selectable_fields = {"type": None}

    def default(self, obj: dict) -> None:
        defaults.default_secret(self.resource, obj)

    def validate(self, obj: dict) -> list:
        return validation.validate_secret(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        return validation.validate_secret_update(new, old)
