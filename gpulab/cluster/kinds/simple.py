"""The strategy of a kind whose registry only defaults, validates and resets its status on create.

Most kinds added for v1.37 have a strategy.go that does no more than this
(PrepareForCreate clears the status, PrepareForUpdate keeps it, Validate and
ValidateUpdate call the kind's validation): their modules name the
functions instead of repeating the methods.
"""
from __future__ import annotations

from .strategy import Context, Strategy


class SimpleStrategy(Strategy):
    """Subclasses set ``defaulter`` (rt, obj), ``validator`` (obj), ``update_validator`` (new, old) and, with a
    status subresource, ``status_validator`` (new, old), each as a ``staticmethod``."""

    defaulter = None
    validator = None
    update_validator = None
    status_validator = None

    def default(self, obj: dict) -> None:
        if self.defaulter is not None:
            self.defaulter(self.resource, obj)

    def prepare_for_create(self, obj: dict, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        if self.has_status:
            obj["status"] = {}

    def validate(self, obj: dict) -> list:
        return self.validator(obj) if self.validator is not None else []

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        if subresource == "status":
            if self.status_validator is not None:
                return self.status_validator(new, old)
            return super().validate_update(new, old, subresource)
        if self.update_validator is not None:
            return self.update_validator(new, old)
        return super().validate_update(new, old, subresource)
