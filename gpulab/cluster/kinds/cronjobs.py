"""CronJobs: pkg/registry/batch/cronjob/strategy.go (status reset on create and kept on update, generation,
WarningsOnCreate for the name and a TZ in the schedule)."""
from __future__ import annotations

from ..defaults import controllers as defaults
from ..printers import Printer
from ..printers import batch as printers
from ..registry import ResourceType
from ..validation import cronjobs as validation
from .strategy import Context, Strategy


class CronJobStrategy(Strategy):
    resource = ResourceType("batch", "v1", "cronjobs", "CronJob", True, short_names=("cj",), categories=("all",),
                            subresources=("status",))
    has_generation = True
    printer = Printer(printers.cronjob_columns, printers.cronjob_cells)

    def default(self, obj: dict) -> None:
        defaults.default_cronjob(self.resource, obj)

    def prepare_for_create(self, obj: dict, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        obj["status"] = {}

    def validate(self, obj: dict) -> list:
        return validation.validate_cronjob(obj)

    def warnings_on_create(self, obj: dict) -> list[str]:
        return validation.cronjob_warnings(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        if subresource == "status":
            return super().validate_update(new, old, subresource)
        return validation.validate_cronjob_update(new, old)
