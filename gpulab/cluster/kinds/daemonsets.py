"""DaemonSets: pkg/registry/apps/daemonset/strategy.go.

The v1 conversion keeps the internal ``templateGeneration`` in the
``deprecated.daemonset.template.generation`` annotation: 1 on create, bumped
by PrepareForUpdate whenever the pod template changes.
"""
from __future__ import annotations

from ..defaults import workloads as defaults
from ..defaults.workloads import DAEMONSET_TEMPLATE_GENERATION
from ..printers import Printer
from ..printers import workloads as printers
from ..registry import ResourceType
from ..validation import apps as validation
from ..validation import pod_warnings
from .strategy import Context, Strategy


class DaemonSetStrategy(Strategy):
    resource = ResourceType("apps", "v1", "daemonsets", "DaemonSet", True, short_names=("ds",), categories=("all",),
                            subresources=("status",))
    has_generation = True
    printer = Printer(printers.daemonset_columns, printers.daemonset_cells)

    def default(self, obj: dict) -> None:
        defaults.default_daemonset(self.resource, obj)

    def prepare_for_create(self, obj: dict, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        # The zero DaemonSetStatus as encoding/json writes it: these four counters have no omitempty (types.go).
        obj["status"] = {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
                         "numberReady": 0}

    def prepare_for_update(self, new: dict, old: dict, subresource: str | None = None) -> dict:
        new = super().prepare_for_update(new, old, subresource)
        if subresource is None:
            old_gen = int(((old.get("metadata") or {}).get("annotations") or {}).get(DAEMONSET_TEMPLATE_GENERATION,
                                                                                      "1"))
            changed = (new.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template")
            annotations = new["metadata"].get("annotations") or {}
            annotations[DAEMONSET_TEMPLATE_GENERATION] = str(old_gen + 1 if changed else old_gen)
            new["metadata"]["annotations"] = annotations
        return new

    def validate(self, obj: dict) -> list:
        return validation.validate_daemonset(obj)

    def warnings_on_create(self, obj: dict) -> list[str]:
        return pod_warnings.template_warnings(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        if subresource == "status":
            return validation.validate_workload_status_update("DaemonSet", new, old)
        return validation.validate_daemonset_update(new, old)
