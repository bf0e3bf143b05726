"""``resource.Quantity``: parsing, canonical printing and rounding, as kube-apiserver does them.

Port of k8s.io/apimachinery/pkg/api/resource/quantity.go (parseQuantityString,
ParseQuantity, CanonicalizeBytes) and suffix.go. Every quantity a client sends
is decoded into a Quantity and encoded again, so ``kubectl get -o yaml`` shows
the canonical form: ``1000m`` -> ``1``, ``0.5`` -> ``500m``, ``1024Mi`` -> ``1Gi``.

Why hand-written: no Python package reproduces the Kubernetes grammar (a
fixed-point number plus ``Ki``/``M``/``e3`` suffixes, rounded up to nano
precision) together with its canonical-form rules and exact error strings.
Values are exact ``fractions.Fraction`` objects, never floats, which is the
point of the upstream type as well.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

SPLIT_RE_STRING = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
# The errors of quantity.go (ErrFormatWrong, ErrSuffix) that parsing here can return.
ERR_FORMAT_WRONG = f"quantities must match the regular expression '{SPLIT_RE_STRING}'"
ERR_SUFFIX = "unable to parse quantity's suffix"

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"
FORMATS = (DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT)

_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_BY_EXPONENT = {e: s for s, e in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_EXPONENT = {**{e: s for s, e in _BINARY_SUFFIXES.items()}, 0: ""}
_SUFFIX_CHARS = "eEinumkKMGTP"
_NANO = 10 ** 9
_MAX_ALLOWED = 2 ** 63 - 1  # BinarySI values are capped here (quantity.go maxAllowed)


class QuantityError(ValueError):
    """A string that is not a quantity; ``str()`` is the upstream error text."""


@dataclass(frozen=True)
class Quantity:
    """A parsed quantity: its exact value and the format it will print in."""

    value: Fraction
    format: str

    def __str__(self) -> str:
        return format_quantity(self.value, self.format)


def _scan(text: str) -> tuple[bool, str, str, str]:
    """parseQuantityString: (positive, numerator digits, denominator digits, suffix)."""
    positive, pos, end = True, 0, len(text)
    if pos < end and text[0] in "+-":
        positive = text[0] == "+"
        pos += 1
    while True:  # strip leading zeros
        if pos >= end:
            return positive, "0", "", ""
        if text[pos] != "0":
            break
        pos += 1
    start = pos
    while pos < end and text[pos].isascii() and text[pos].isdigit():
        pos += 1
    num = text[start:pos] or "0"
    if pos >= end:
        return positive, num, "", ""
    denom = ""
    if text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos].isascii() and text[pos].isdigit():
            pos += 1
        denom = text[start:pos]
        if pos >= end:
            return positive, num, denom, ""
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos].isascii() and text[pos].isdigit():
        pos += 1
    if pos < end:
        raise QuantityError(ERR_FORMAT_WRONG)
    return positive, num, denom, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, str]:
    """suffixHandler.interpret: (base, exponent, format)."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        body = digits[1:] if digits[0] in "+-" else digits
        if body.isascii() and body.isdigit():
            return 10, int(digits), DECIMAL_EXPONENT
    raise QuantityError(ERR_SUFFIX)


def _round_up_to_nano(value: Fraction) -> Fraction:
    """Non-zero values are rounded away from zero to the next multiple of 1e-9."""
    scaled = value * _NANO
    if scaled.denominator == 1:
        return value
    magnitude = math.ceil(abs(scaled))
    return Fraction(magnitude if value > 0 else -magnitude, _NANO)


def _as_text(value: str | int | float | Fraction) -> str:
    if isinstance(value, bool):
        raise QuantityError(ERR_FORMAT_WRONG)
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, Fraction):
        return format_quantity(value)
    return value


def parse(value: str | int | float | Fraction) -> Quantity:
    """ParseQuantity (after UnmarshalJSON's quote stripping and TrimSpace)."""
    text = _as_text(value).strip()
    if not text:
        raise QuantityError(ERR_FORMAT_WRONG)
    if text == "0":
        return Quantity(Fraction(0), DECIMAL_SI)
    positive, num, denom, suffix = _scan(text)
    base, exponent, fmt = _interpret(suffix)
    amount = Fraction(int(num + denom), 10 ** len(denom))
    amount *= Fraction(base) ** exponent
    if not positive:
        amount = -amount
    amount = _round_up_to_nano(amount)
    if fmt == BINARY_SI:
        if abs(amount) > _MAX_ALLOWED:
            amount = Fraction(_MAX_ALLOWED if amount > 0 else -_MAX_ALLOWED)
        if 0 < abs(amount) < 1:
            fmt = DECIMAL_SI
    return Quantity(amount, fmt)


def parse_quantity(value: str | int | float | Fraction) -> Fraction:
    """The exact value of a quantity; ``QuantityError`` (a ValueError) with the upstream text otherwise."""
    return parse(value).value


def _decimal_mantissa(value: Fraction) -> tuple[int, int]:
    """AsCanonicalBytes: the integer mantissa and a base-10 exponent that is a multiple of 3."""
    nanos = value * _NANO
    mantissa, exponent = int(nanos), -9
    if nanos.denominator != 1:  # only reachable for values that were not parsed (e.g. sums of fractions)
        mantissa = math.ceil(nanos)
    while mantissa and abs(mantissa) >= 10 and mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    shift = exponent % 3
    return mantissa * 10 ** shift, exponent - shift


def format_quantity(value: Fraction | int, like: str = DECIMAL_SI) -> str:
    """CanonicalizeBytes: the string the server writes for ``value``.

    ``like`` is a format name (DecimalSI, BinarySI, DecimalExponent) or a
    quantity string whose format is reused, as Quantity.Add keeps the format
    of the quantity added to.
    """
    fmt = like if like in FORMATS else parse(like).format
    value = Fraction(value)
    if value == 0:
        return "0"
    if fmt == BINARY_SI and (-1024 < value < 1024 or value.denominator != 1):
        fmt = DECIMAL_SI
    if fmt == BINARY_SI:
        mantissa, exponent = int(value), 0
        while abs(mantissa) >= 1024 and mantissa % 1024 == 0:
            mantissa //= 1024
            exponent += 10
        return f"{mantissa}{_BINARY_BY_EXPONENT.get(exponent, '')}"
    mantissa, exponent = _decimal_mantissa(value)
    if fmt == DECIMAL_EXPONENT:
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    # An exponent outside the suffix table gets no suffix at all, as upstream's
    # constructBytes lookup fails silently (only values >= 1e21 reach it).
    return f"{mantissa}{_DECIMAL_BY_EXPONENT.get(exponent, '')}"


def canonical(value: str | int | float | Fraction) -> str:
    """Parse and print again: what the API server stores for a quantity a client sent."""
    return str(parse(value))


def value(q: str | int | float | Fraction) -> int:
    """Quantity.Value(): the value rounded up to an integer."""
    return math.ceil(parse_quantity(q) if not isinstance(q, Fraction) else q)


def milli_value(q: str | int | float | Fraction) -> int:
    """Quantity.MilliValue(): the value in thousandths, rounded up."""
    return math.ceil((parse_quantity(q) if not isinstance(q, Fraction) else q) * 1000)
