"""ComponentStatuses: pkg/registry/core/componentstatus/rest.go.

Not stored: each read probes the control plane's components (here the
scheduler, the controller manager and the storage, which run in this
process and are healthy while it answers) and reports one object each.
Deprecated since v1.19: every request gets the deprecation warning.
"""
from __future__ import annotations

from ..printers import Printer
from ..printers import cluster as printers
from ..registry import ResourceType
from .strategy import Context, Strategy

_COMPONENTS = ("scheduler", "controller-manager", "etcd-0")


class ComponentStatusStrategy(Strategy):
    resource = ResourceType("", "v1", "componentstatuses", "ComponentStatus", False, short_names=("cs",),
                            verbs=("get", "list"))
    stored = False
    deprecation_warning = "v1 ComponentStatus is deprecated in v1.19+"
    printer = Printer(printers.componentstatus_columns, printers.componentstatus_cells)

    def computed_objects(self, ctx: Context) -> list[dict]:
        return [{"kind": "ComponentStatus", "apiVersion": "v1",
                 "metadata": {"name": name, "creationTimestamp": None},
                 "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]} for name in _COMPONENTS]
