"""ConfigMaps: pkg/registry/core/configmap/strategy.go."""
from __future__ import annotations

from ..printers import Printer
from ..printers import core as printers
from ..registry import ResourceType
from ..validation import core as validation
from .strategy import Strategy


class ConfigMapStrategy(Strategy):
    resource = ResourceType("", "v1", "configmaps", "ConfigMap", True, short_names=("cm",))
    printer = Printer(printers.configmap_columns, printers.configmap_cells)

    def validate(self, obj: dict) -> list:
        return validation.validate_config_map(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        return validation.validate_config_map_update(new, old)
