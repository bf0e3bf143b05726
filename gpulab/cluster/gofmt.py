"""How Go prints the values that end up in upstream's messages: one module for every Go format the cluster imitates.

kube-apiserver, the kubelet and kube-scheduler build their texts with Go's
``fmt`` verbs and its ``strconv``, ``time`` and ``encoding/json`` packages:
``%q`` (``strconv.Quote``), ``%v`` of a float64 (``strconv.FormatFloat(f, 'g',
-1, 64)``), ``%v``/``%+v``/``%#v``/``%s`` of a decoded
``map[string]interface{}``, ``json.Marshal``, ``time.Duration.String`` and
``time.RFC3339Nano``. Python's ``repr``, ``json.dumps``, ``timedelta`` and
``isoformat`` print every one of these differently (float exponents, escapes,
key order, ``0.5s`` for Go's ``500ms``), and no library reproduces Go's
formatting, so the rules are written down here, once. The expected outputs in
``tests/unit/test_gofmt.py`` come from Go's own test tables.

Decoded JSON follows Go's types: ``int`` is an ``int64`` (kube-apiserver decodes
with ``UseNumber``/``PreserveInts``), ``float`` a ``float64``, ``dict`` a
``map[string]interface {}``, ``list`` a ``[]interface {}``, ``None`` a nil
interface.
"""
from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from typing import Any

# --- strconv ------------------------------------------------------------------------------------------------------

_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
            '"': '\\"', "\\": "\\\\"}


def go_quote(text: str) -> str:
    """``strconv.Quote`` (``%q``): printable runes as they are, the rest escaped as Go's appendEscapedRune does."""
    out = ['"']
    for ch in text:
        escaped = _ESCAPES.get(ch)
        if escaped is not None:
            out.append(escaped)
        elif ch.isprintable():  # unicode.IsPrint: letters, marks, numbers, punctuation, symbols and ASCII space
            out.append(ch)
        else:
            code = ord(ch)
            if code < 0x20 or code == 0x7F:
                out.append(f"\\x{code:02x}")
            elif code < 0x10000:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _shortest_digits(f: float) -> tuple[str, int]:
    """The shortest decimal digits that read back as abs(f) (what repr and Go's shortest mode both give), and the
    decimal point's position (strconv's ``decimalSlice.dp``)."""
    mantissa, _, exponent = repr(abs(f)).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits, point = whole + frac, len(whole) + int(exponent or 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    return stripped.rstrip("0"), point


def _format_e(digits: str, point: int) -> str:
    """strconv's %e with the shortest digits: ``d.ddde±XX`` (at least two exponent digits)."""
    exp = point - 1
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{mantissa}e{'+' if exp >= 0 else '-'}{abs(exp):02d}"


def _format_f(digits: str, point: int) -> str:
    """strconv's %f with the shortest digits."""
    whole = digits[:point].ljust(point, "0") if point > 0 else "0"
    frac = digits[point:] if point >= 0 else "0" * -point + digits
    return whole + ("." + frac if frac else "")


def _special_float(f: float) -> str | None:
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    return None


def go_float(f: float) -> str:
    """``strconv.FormatFloat(f, 'g', -1, 64)``, which ``%v`` prints for a float64: ``1.5``, ``1e+06``, ``1e-05``,
    ``-0``, ``+Inf`` (the shortest digits; %e when the exponent is below -4 or from 6 on)."""
    special = _special_float(f)
    if special is not None:
        return special
    digits, point = _shortest_digits(f)
    exp = point - 1
    text = _format_e(digits, point) if exp < -4 or exp >= 6 else _format_f(digits, point)
    return ("-" if f < 0 else "") + text


# --- fmt ------------------------------------------------------------------------------------------------------------

def go_v(value: Any) -> str:
    """``%v`` (and ``%+v``, the same for decoded JSON, which has no structs): ``map[a:1 b:[x y]]`` with sorted keys,
    ``<nil>`` for nil."""
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


def go_sharp_v(value: Any, *, nested: bool = False) -> str:
    """``%#v``: ``map[string]interface {}{"name":"a"}``, ``[]interface {}{1, "x"}``; a nil inside a map or slice is
    ``interface {}(nil)``, a nil at the top ``<nil>``."""
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


def go_type(value: Any) -> str:
    """``reflect.TypeOf(v).String()`` (what ``%T`` prints) of a decoded JSON value."""
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


def go_s(value: Any) -> str:
    """``%s``: a string as it is, anything else as the bad-verb form ``%!s(int64=5)``."""
    if isinstance(value, str):
        return value
    if value is None:
        return "%!s(<nil>)"
    return f"%!s({go_type(value)}={go_v(value)})"


# --- encoding/json --------------------------------------------------------------------------------------------------

_HTML_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def go_json_float(f: float) -> str:
    """encoding/json's float64: %f of the shortest digits, %e below 1e-6 and from 1e21 (``e-07`` cleaned to
    ``e-7``)."""
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    digits, point = _shortest_digits(f)
    if abs(f) < 1e-6 or abs(f) >= 1e21:
        text = _format_e(digits, point)
        if text[-4:-1] == "e-0":
            text = text[:-2] + text[-1]
    else:
        text = _format_f(digits, point)
    return ("-" if f < 0 else "") + text


def go_json(value: Any) -> str:
    """``json.Marshal`` of a decoded JSON value: compact, map keys sorted, HTML characters escaped, Go's number
    formats."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_json_float(value)
    if isinstance(value, str):
        return "".join(_HTML_ESCAPES.get(ch, ch) for ch in json.dumps(value, ensure_ascii=False))
    if isinstance(value, list):
        return "[" + ",".join(go_json(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{go_json(k)}:{go_json(value[k])}" for k in sorted(value)) + "}"
    return go_json(str(value))


def json_kind(value: Any) -> str:
    """The JSON kind encoding/json names in ``cannot unmarshal X into Go value of type Y``."""
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


# --- time -----------------------------------------------------------------------------------------------------------

_SECOND = 1_000_000_000


def _fraction(value: int, unit: int) -> str:
    """fmtFrac + fmtInt: ``value/unit`` with the fraction's trailing zeros dropped."""
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{frac:0{digits}d}".rstrip("0")


def go_duration_ns(ns: int) -> str:
    """``time.Duration(ns).String()``: ``0s``, ``1.1µs``, ``500ms``, ``1.5s``, ``1m20s``, ``5m0s``, ``1h0m0s``."""
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns < 1_000:
        return f"{sign}{ns}ns"
    if ns < 1_000_000:
        return sign + _fraction(ns, 1_000) + "µs"
    if ns < _SECOND:
        return sign + _fraction(ns, 1_000_000) + "ms"
    minutes, rem = divmod(ns, 60 * _SECOND)
    secs = _fraction(rem, _SECOND) + "s"
    if not minutes:
        return sign + secs
    hours, minutes = divmod(minutes, 60)
    return f"{sign}{hours}h{minutes}m{secs}" if hours else f"{sign}{minutes}m{secs}"


def go_duration(seconds: float) -> str:
    """``time.Duration`` of ``seconds`` (rounded to the nanosecond), printed as Go prints it."""
    return go_duration_ns(round(seconds * _SECOND))


def truncate_ms(seconds: float) -> float:
    """``Duration.Truncate(time.Millisecond)``."""
    return int(seconds * 1000) / 1000


def rfc3339_nano(ns: int) -> str:
    """``time.RFC3339Nano`` in UTC: ``2026-03-01T12:00:00.12345Z`` (the fraction without trailing zeros)."""
    secs, frac = divmod(ns, _SECOND)
    stamp = datetime.fromtimestamp(secs, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    if frac:
        stamp += "." + f"{frac:09d}".rstrip("0")
    return stamp + "Z"
