"""``field.Invalid`` / ``field.Required`` / ... taking a :class:`Path`, for the validation modules.

Thin wrappers over the constructors in :mod:`gpulab.cluster.errors` (which
render the messages) so validators read like their Go originals:
``invalid(path.child("name"), name, msg)``.
"""
from __future__ import annotations

from typing import Any

from .. import errors
from ..errors import FieldError
from .path import Path

OMIT = errors.OMIT  # field.OmitValueType{}: render the type without a value


def invalid(path: Path, value: Any, detail: str) -> FieldError:
    return errors.invalid(str(path), value, detail)


def required(path: Path, detail: str = "") -> FieldError:
    return errors.required(str(path), detail)


def forbidden(path: Path, detail: str) -> FieldError:
    return errors.forbidden(str(path), detail)


def not_supported(path: Path, value: Any, valid: list[str]) -> FieldError:
    return errors.not_supported(str(path), value, valid)


def duplicate(path: Path, value: Any, detail: str = "") -> FieldError:
    return FieldError("FieldValueDuplicate", str(path), value, detail)


def not_found(path: Path, value: Any, detail: str = "") -> FieldError:
    return FieldError("FieldValueNotFound", str(path), value, detail)


def too_long(path: Path, max_len: int) -> FieldError:
    return errors.too_long(str(path), max_len)


def too_many(path: Path, actual: int, max_items: int) -> FieldError:
    return FieldError("FieldValueTooMany", str(path), actual, f"must have at most {max_items} items")


def immutable(path: Path, new_value: Any, old_value: Any) -> list[FieldError]:
    """ValidateImmutableField (apimachinery/pkg/api/validation/objectmeta.go)."""
    if new_value == old_value:
        return []
    return [invalid(path, new_value, "field is immutable")]


def non_negative(value: int, path: Path) -> list[FieldError]:
    """validate.NonNegative / ValidateNonnegativeField."""
    return [invalid(path, value, "must be greater than or equal to 0")] if value < 0 else []
