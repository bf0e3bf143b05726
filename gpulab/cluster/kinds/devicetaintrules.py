"""DeviceTaintRules (resource.k8s.io/v1, GA in v1.37): pkg/registry/resource/devicetaintrule/strategy.go.

A rule puts one taint on every device its selector picks, as if the driver had
published it in its ResourceSlice. Cluster-scoped, with a status subresource
(the device taint eviction controller's ``EvictionInProgress`` condition). On
create the status is emptied and the generation is 1; the taint's
``timeAdded`` defaults to the time it is stored (SetDefaults_DeviceTaint). On
update the status is kept, a spec change bumps the generation, and a changed
effect whose ``timeAdded`` was left as it was gets the current time (an
eviction counts from the moment the effect became NoExecute). A status write
keeps the spec and all metadata (ResetObjectMetaForStatus). Served whatever the
gates say, as upstream's storage is; with ``DRADeviceTaintRules`` off the
scheduler and the eviction controller ignore rules.
"""
from __future__ import annotations

from ..objects import rfc3339
from ..printers import Printer
from ..printers import resource as printers
from ..registry import ResourceType
from ..validation import resource as validation
from .strategy import Context, Strategy


def _taint(obj: dict) -> dict | None:
    taint = (obj.get("spec") or {}).get("taint")
    return taint if isinstance(taint, dict) else None


class DeviceTaintRuleStrategy(Strategy):
    resource = ResourceType("resource.k8s.io", "v1", "devicetaintrules", "DeviceTaintRule", False,
                            subresources=("status",))
    has_generation = True
    printer = Printer(printers.taint_rule_columns, printers.taint_rule_cells)
    status_reset_fields = (("metadata",), ("spec",))
    status_request_metadata = ()

    def prepare_for_create(self, obj: dict, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        obj["status"] = {}
        taint = _taint(obj)
        if taint is not None and not taint.get("timeAdded"):
            taint["timeAdded"] = rfc3339(ctx.clock())

    def admit_update(self, obj: dict, old: dict, ctx: Context) -> None:
        # Defaulting and PrepareForUpdate both read the clock upstream; here only a strategy hook with the API's
        # clock runs before validation, so both happen here.
        taint, old_taint = _taint(obj), _taint(old) or {}
        if taint is None:
            return
        now = rfc3339(ctx.clock())
        if not taint.get("timeAdded"):
            taint["timeAdded"] = now
        if taint.get("effect") != old_taint.get("effect") and taint.get("timeAdded") == old_taint.get("timeAdded"):
            taint["timeAdded"] = now

    def validate(self, obj: dict) -> list:
        return validation.validate_taint_rule(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        if subresource == "status":
            return validation.validate_taint_rule_status_update(new, old)
        return validation.validate_taint_rule_update(new, old)
