"""Events: pkg/registry/core/event/strategy.go, served as core/v1 and as events.k8s.io/v1 from one storage."""
from __future__ import annotations

from ..printers import Printer
from ..printers import core as printers
from ..registry import ResourceType
from ..selectors import path_getter
from ..validation import core as validation
from .strategy import Strategy


class EventStrategy(Strategy):
    resource = ResourceType("", "v1", "events", "Event", True, short_names=("ev",))
    aliases = (ResourceType("events.k8s.io", "v1", "events", "Event", True, short_names=("ev",),
                            storage_alias="events"),)
    allow_create_on_update = True
    printer = Printer(printers.event_columns, printers.event_cells)
    # pkg/apis/core/v1/conversion.go: the event field label conversion ("source" is source.component)
    selectable_fields = {
        "involvedObject.kind": None, "involvedObject.namespace": None, "involvedObject.name": None,
        "involvedObject.uid": None, "involvedObject.apiVersion": None, "involvedObject.resourceVersion": None,
        "involvedObject.fieldPath": None, "reason": None, "reportingComponent": None,
        "source": path_getter("source.component"), "type": None,
    }

    def validate(self, obj: dict) -> list:
        return validation.validate_event(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        return validation.validate_event(new)
