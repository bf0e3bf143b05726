"""Nodes: pkg/registry/core/node/strategy.go."""
from __future__ import annotations

from ..defaults import core as defaults
from ..printers import Printer
from ..printers import core as printers
from ..registry import ResourceType
from ..validation import core as validation
from .strategy import PROXY_VERBS, Strategy, Subresource


class NodeStrategy(Strategy):
    resource = ResourceType("", "v1", "nodes", "Node", False, short_names=("no",), subresources=("status", "proxy"))
    subresources = {"proxy": Subresource(PROXY_VERBS, ("", "v1", "NodeProxyOptions"), connect=True)}
    printer = Printer(printers.node_columns, printers.node_cells)
    # nodeStrategy GetAttrs: strconv.FormatBool(node.Spec.Unschedulable), "false" when unset
    selectable_fields = {"spec.unschedulable": lambda o: "true" if (o.get("spec") or {}).get("unschedulable")
                         else "false"}

    def default(self, obj: dict) -> None:
        defaults.default_node(self.resource, obj)

    def validate(self, obj: dict) -> list:
        return validation.validate_node(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        if subresource == "status":
            return validation.validate_node_update(new, old)
        return validation.validate_node(new) + validation.validate_node_update(new, old)
