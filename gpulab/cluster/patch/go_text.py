"""How Go prints the values that end up inside upstream error messages.

kube-apiserver builds several patch errors with ``fmt`` verbs over decoded
JSON (``map[string]interface{}``, ``[]interface{}``, ``int64``, ``float64``):
``unknown patch type: foo in map: map[$patch:foo name:a]`` or
``.spec.containers[name="a"].image``. Python's ``repr`` and ``json.dumps`` print
those values differently, and no library reproduces Go's ``fmt``, so the few
rules these messages need are written down here.
"""
from __future__ import annotations

import json
import math
from decimal import Decimal


def go_float(value: float) -> str:
    """``strconv.FormatFloat(f, 'g', -1, 64)``, which ``%v`` uses for float64: 1.5, 1e+06, 1e-05."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    if value == 0:
        return "0"
    sign, digit_tuple, exp = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    exp += len(digit_tuple) - len(digits)
    scientific = len(digits) - 1 + exp
    prefix = "-" if value < 0 else ""
    if scientific < -4 or scientific >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{prefix}{mantissa}e{'-' if scientific < 0 else '+'}{abs(scientific):02d}"
    if exp >= 0:
        return prefix + digits + "0" * exp
    point = len(digits) + exp
    if point > 0:
        return prefix + digits[:point] + "." + digits[point:]
    return prefix + "0." + "0" * -point + digits


def go_v(value) -> str:
    """``fmt.Sprintf("%v", value)`` for a decoded JSON value."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "[" + " ".join(go_v(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_v(value[k])}" for k in sorted(value)) + "]"
    return str(value)


def go_s(value) -> str:
    """``%s``: strings print bare, other types as ``%!s(type=value)``."""
    if isinstance(value, str):
        return value
    if value is None:
        return "%!s(<nil>)"
    return f"%!s({go_type(value)}={go_v(value)})"


def go_type(value) -> str:
    """``reflect.TypeOf(v).String()`` for decoded JSON values (ints decoded with PreserveInts)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "[]interface {}"
    if isinstance(value, dict):
        return "map[string]interface {}"
    return type(value).__name__


def go_quote(text: str) -> str:
    """``%q``: a double-quoted Go string literal."""
    return json.dumps(text, ensure_ascii=False)


def go_json(value) -> str:
    """``json.Marshal``: compact, HTML characters escaped, map keys sorted."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True, default=str)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def json_kind(value) -> str:
    """The JSON kind ``encoding/json`` names in ``cannot unmarshal X into Go value``."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"
