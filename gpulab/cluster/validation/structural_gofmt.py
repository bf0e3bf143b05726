"""Go's value renderings that schema-validation messages embed, and a FieldError that uses them.

apiextensions-apiserver and kube-openapi build their messages with Go's fmt
verbs: ``%q`` (strconv.Quote), ``%v`` of an int64 or float64, ``%#v`` of a
decoded ``map[string]interface{}`` (``map[string]interface {}{"name":"a"}``) and
``%+v`` of a patch map. Python's repr and json differ from all of these (float
exponents, key order, quoting), so the exact texts are rebuilt here.

:class:`GoFieldError` renders ``field.Error.ErrorBody()``
(k8s.io/apimachinery/pkg/util/validation/field/errors.go) with these Go
renderings: a ``TooMany`` error shows its count, a map shows as ``%#v``, a
float as ``%v``. It is a :class:`gpulab.cluster.errors.FieldError`, so it goes
into ``errors.invalid_object`` like any other.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..errors import FieldError

OMIT = object()  # field.omitValue: the body shows only the error type


def go_quote(s: str) -> str:
    """strconv.Quote: printable runes kept, the rest escaped as Go does."""
    out = ['"']
    for ch in s:
        code = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\a":
            out.append("\\a")
        elif ch == "\b":
            out.append("\\b")
        elif ch == "\f":
            out.append("\\f")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\v":
            out.append("\\v")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif not ch.isprintable() and code > 0x7F:
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def go_float(f: float) -> str:
    """``%v`` of a float64: strconv 'g' with the shortest digits and exponent threshold 6 (fmt/format.go)."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1, f) < 0 else "0"
    sign, digits, exponent = Decimal(repr(f)).normalize().as_tuple()
    text = "".join(map(str, digits))
    point = len(text) + exponent  # decimal point position (strconv's digs.dp)
    exp = point - 1
    neg = "-" if sign else ""
    if exp < -4 or exp >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{neg}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{neg}0.{'0' * -point}{text}"
    if point >= len(text):
        return f"{neg}{text}{'0' * (point - len(text))}"
    return f"{neg}{text[:point]}.{text[point:]}"


def go_v(value: Any) -> str:
    """``%v`` of a JSON scalar as Go decoded it (int64, float64, bool, string)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if value is None:
        return "<nil>"
    return str(value)


def go_sharp_v(value: Any, *, nested: bool = False) -> str:
    """``%#v`` of a decoded JSON value (map[string]interface{}, []interface{}, scalars)."""
    if isinstance(value, dict):
        items = ", ".join(f"{go_quote(k)}:{go_sharp_v(value[k], nested=True)}" for k in sorted(value))
        return f"map[string]interface {{}}{{{items}}}"
    if isinstance(value, list):
        items = ", ".join(go_sharp_v(v, nested=True) for v in value)
        return f"[]interface {{}}{{{items}}}"
    if value is None:
        return "interface {}(nil)" if nested else "<nil>"
    if isinstance(value, str):
        return go_quote(value)
    return go_v(value)


def go_plus_v(value: Any) -> str:
    """``%+v`` of a decoded JSON value: ``map[a:1 b:[x y]]`` (strategic merge patch's ``patch`` value)."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_plus_v(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_plus_v(v) for v in value) + "]"
    return go_v(value)


_TYPE_TEXT = {
    "FieldValueNotFound": "Not found",
    "FieldValueRequired": "Required value",
    "FieldValueDuplicate": "Duplicate value",
    "FieldValueInvalid": "Invalid value",
    "FieldValueNotSupported": "Unsupported value",
    "FieldValueForbidden": "Forbidden",
    "FieldValueTooLong": "Too long",
    "FieldValueTooMany": "Too many",
    "InternalError": "Internal error",
    "FieldValueTypeInvalid": "Invalid value",
}


@dataclass
class GoFieldError(FieldError):
    """A field.Error whose body renders its value with Go's fmt rules (field/errors.go ErrorBody)."""

    def error_body(self) -> str:
        text = _TYPE_TEXT[self.type]
        if self.type not in ("FieldValueRequired", "FieldValueForbidden", "FieldValueTooLong", "InternalError") \
                and self.bad_value is not OMIT:
            text += ": " + _render_bad_value(self.bad_value)
        return f"{text}: {self.detail}" if self.detail else text


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
