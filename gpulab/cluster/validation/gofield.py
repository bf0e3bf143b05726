"""A FieldError whose bad value is printed as Go prints it, for schema-validation messages.

apiextensions-apiserver and kube-openapi render a bad value with Go's fmt
verbs (``%q`` of a string, ``%v`` of an int64 or float64, ``%#v`` of a decoded
``map[string]interface{}``: ``map[string]interface {}{"name":"a"}``).

:class:`GoFieldError` renders ``field.Error.ErrorBody()``
(k8s.io/apimachinery/pkg/util/validation/field/errors.go) with these Go
renderings (:mod:`gpulab.cluster.gofmt`): a ``TooMany`` error shows its count,
a map shows as ``%#v``, a float as ``%v``. It is a
:class:`gpulab.cluster.errors.FieldError`, so it goes into
``errors.invalid_object`` like any other.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import OMIT, FieldError
from ..gofmt import go_quote, go_sharp_v, go_v


@dataclass
class GoFieldError(FieldError):
    """A field.Error whose body renders its value with Go's fmt rules (field/errors.go ErrorBody)."""

    @staticmethod
    def render_value(value: Any) -> str:
        return _render_bad_value(value)


def _render_bad_value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, GoText):
        return value.text
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, (bool, int, float)):
        return go_v(value)
    return go_sharp_v(value)


class GoText:
    """A bad value that is already Go text (a struct rendered with %#v elsewhere)."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


# Constructors named after field.Invalid, field.Required, ... (field/errors.go).
def invalid(path, value: Any, detail: str) -> GoFieldError:
    return GoFieldError("FieldValueInvalid", str(path), value, detail)


def type_invalid(path, value: Any, detail: str) -> GoFieldError:
    return GoFieldError("FieldValueTypeInvalid", str(path), value, detail)


def required(path, detail: str = "") -> GoFieldError:
    return GoFieldError("FieldValueRequired", str(path), OMIT, detail)


def forbidden(path, detail: str) -> GoFieldError:
    return GoFieldError("FieldValueForbidden", str(path), OMIT, detail)


def duplicate(path, value: Any) -> GoFieldError:
    return GoFieldError("FieldValueDuplicate", str(path), value, "")


def not_supported(path, value: Any, valid: list[str]) -> GoFieldError:
    detail = "supported values: " + ", ".join(go_quote(v) for v in valid) if valid else ""
    return GoFieldError("FieldValueNotSupported", str(path), value, detail)


def too_long(path, max_length: int) -> GoFieldError:
    """field.TooLong: ``may not be more than N bytes``; a negative maximum says only ``value is too long``."""
    if max_length >= 0:
        detail = f"may not be more than {max_length} {'byte' if max_length == 1 else 'bytes'}"
    else:
        detail = "value is too long"
    return GoFieldError("FieldValueTooLong", str(path), OMIT, detail)


def too_many(path, actual: int, max_items: int) -> GoFieldError:
    detail = f"must have at most {max_items} items" if max_items >= 0 else "has too many items"
    return GoFieldError("FieldValueTooMany", str(path), actual if actual >= 0 else OMIT, detail)
