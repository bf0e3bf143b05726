"""The parts of Kubernetes' CEL library (k8s.io/apiserver/pkg/cel/library) DRA selectors and CRD rules use.

``quantity.go``: ``quantity(string)``, ``isQuantity(string)`` and a Quantity's
``compareTo``, ``isGreaterThan``, ``isLessThan``, ``asInteger``,
``asApproximateFloat``, ``isInteger``, ``sign``, ``add``, ``sub``;
``semverlib.go``: ``semver(string)``, ``isSemver(string)`` and a Semver's
``compareTo``, ``isGreaterThan``, ``isLessThan``, ``major``, ``minor``,
``patch``.

cel-expr-python cannot hold a foreign object as a CEL value, so a Quantity
is the map ``{"@quantity": "<canonical text>"}`` and a Semver
``{"@semver": "<text>"}``; the functions recognise them by that key. Equality
of two quantities therefore compares canonical texts, which is the same
verdict as upstream's ``Equal`` (``1Gi == 1024Mi``); comparing one with a
number is a runtime ``no such overload`` here where cel-go refuses it at
compile time (its checker knows the type).
"""
from __future__ import annotations

import functools
import re
from fractions import Fraction

from ..quantity import QuantityError, canonical, parse_quantity
from .errors import library_error

QUANTITY_KEY = "@quantity"
SEMVER_KEY = "@semver"

# blang/semver's Parse (strict: MAJOR.MINOR.PATCH[-pre][+build], no leading zeros).
_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                     r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
                     r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$")


def quantity_value(text: str) -> dict:
    """A Quantity as a CEL value (device capacities are given to selectors this way)."""
    return {QUANTITY_KEY: canonical(text)}


def semver_value(text: str) -> dict:
    """A Semver as a CEL value (version attributes)."""
    return {SEMVER_KEY: text}


@functools.lru_cache(maxsize=4096)
def _amount(text: str) -> Fraction:
    return parse_quantity(text)


def _q(value) -> Fraction:
    if isinstance(value, dict) and QUANTITY_KEY in value:
        return _amount(value[QUANTITY_KEY])
    raise library_error("no such overload")


@functools.lru_cache(maxsize=4096)
def _semver_key(text: str) -> tuple:
    match = _SEMVER.match(text)
    if match is None:
        raise library_error("invalid semver")
    major, minor, patch, pre = int(match[1]), int(match[2]), int(match[3]), match[4]
    # semver.Compare: a version without a pre-release is greater than one with; identifiers compare numerically
    # when both are numeric, numbers sort before text.
    pre_key = (1,) if pre is None else (0, *[(0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split(".")])
    return major, minor, patch, pre_key


def _v(value) -> tuple:
    if isinstance(value, dict) and SEMVER_KEY in value:
        return _semver_key(value[SEMVER_KEY])
    raise library_error("no such overload")


def _cmp(a, b) -> int:
    return (a > b) - (a < b)


def _key(value):
    """A comparable key of a Quantity or a Semver."""
    if isinstance(value, dict) and SEMVER_KEY in value:
        return _v(value)
    return _q(value)


def _quantity(text: str) -> dict:
    try:
        return quantity_value(text)
    except QuantityError as exc:
        raise library_error(str(exc)) from None


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


def _semver(text: str) -> dict:
    _semver_key(text)
    return semver_value(text)


def _is_semver(text: str) -> bool:
    return _SEMVER.match(text) is not None


def _as_integer(value) -> int:
    amount = _q(value)
    if amount.denominator != 1 or not -2 ** 63 <= amount < 2 ** 63:
        raise library_error("cannot convert value to integer")
    return int(amount)


def _from_fraction(amount: Fraction) -> dict:
    from ..quantity import format_quantity  # noqa: PLC0415 - printing a sum is rare
    return {QUANTITY_KEY: format_quantity(amount)}


def extension(cel):
    """The library as a cel-expr-python extension (``cel`` is the lazily imported ``cel_expr_python.cel``)."""
    T = cel.Type
    dyn, string = T.DYN, T.STRING

    def member(name, ret, impl, *params):
        return cel.FunctionDecl(name, [cel.Overload(f"k8s_{name}_{len(params)}", ret, [dyn, *params],
                                                    is_member=True, impl=impl)])

    def glob(name, ret, impl, *params):
        return cel.FunctionDecl(name, [cel.Overload(f"k8s_{name}_global", ret, list(params), impl=impl)])

    return cel.CelExtension("kubernetes", [
        glob("quantity", T.MAP, _quantity, string),
        glob("isQuantity", T.BOOL, _is_quantity, string),
        glob("semver", T.MAP, _semver, string),
        glob("isSemver", T.BOOL, _is_semver, string),
        member("compareTo", T.INT, lambda a, b: _cmp(_key(a), _key(b)), dyn),
        member("isGreaterThan", T.BOOL, lambda a, b: _key(a) > _key(b), dyn),
        member("isLessThan", T.BOOL, lambda a, b: _key(a) < _key(b), dyn),
        member("asInteger", T.INT, _as_integer),
        member("asApproximateFloat", T.DOUBLE, lambda a: float(_q(a))),
        member("isInteger", T.BOOL, lambda a: _q(a).denominator == 1),
        member("sign", T.INT, lambda a: _cmp(_q(a), 0)),
        member("add", T.MAP, lambda a, b: _from_fraction(_q(a) + (b if isinstance(b, int) else _q(b))), dyn),
        member("sub", T.MAP, lambda a, b: _from_fraction(_q(a) - (b if isinstance(b, int) else _q(b))), dyn),
        member("major", T.INT, lambda a: _v(a)[0]),
        member("minor", T.INT, lambda a: _v(a)[1]),
        member("patch", T.INT, lambda a: _v(a)[2]),
    ])

