"""Device selectors: the DRA CEL environment (k8s.io/dynamic-resource-allocation/cel/compile.go).

An expression sees one variable, ``device``, with ``driver`` (string),
``allowMultipleAllocations`` (bool), ``attributes`` and ``capacity``: maps from
a domain to maps from an identifier to the value. An attribute or capacity
named ``<domain>/<id>`` lands under its domain; an unqualified name under the
driver's own name (parseQualifiedName). A domain the device has nothing under
reads as an empty map (newStringInterfaceMapWithDefault), so
``device.attributes["other.example.com"].x`` fails with ``no such key: x``,
not on the domain. Version attributes are Semvers, capacities Quantities.

Compilation happens once per expression (the environment's cache); the input of
a device is built once per device object (:func:`device_input` keeps the last
conversions by identity, as slices are immutable stored dicts).
"""
from __future__ import annotations

import re

from ..cel import CelCompileError, CelRuntimeError, Environment
from ..cel.library import quantity_value, semver_value

__all__ = ["CelCompileError", "CelRuntimeError", "MAX_EXPRESSION_LENGTH", "compile_error", "device_input",
           "matches"]

ENVIRONMENT = Environment("dra-device", ("device",))
MAX_EXPRESSION_LENGTH = 10 * 1024  # resource.CELSelectorExpressionMaxLength
_STRING_LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"|\'((?:[^\'\\]|\\.)*)\'')
_inputs: dict[int, tuple[dict, dict]] = {}
_domains: dict[str, tuple[str, ...]] = {}


def compile_error(expression: str) -> str | None:
    """What CompileCELExpression reports for ``expression`` (``compilation failed: ...``), or None."""
    try:
        program = ENVIRONMENT.compile(expression)
    except CelCompileError as exc:
        return f"compilation failed: {exc}"
    if program.returns not in ("bool", "dyn"):
        return f"must evaluate to bool or the unknown type, not {program.returns}"
    return None


def _split(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.rpartition("/")
    return (domain, ident) if sep else (driver, name)


def _attribute(value: dict):
    if "version" in value:
        return semver_value(value["version"])
    for kind in ("int", "bool", "string"):
        if kind in value:
            return value[kind]
    for kind in ("ints", "bools", "strings"):
        if kind in value:
            return list(value[kind])
    if "versions" in value:
        return [semver_value(v) for v in value["versions"]]
    return None


def device_input(driver: str, device: dict) -> dict:
    """The ``device`` variable of one device of a slice of ``driver``."""
    cached = _inputs.get(id(device))
    if cached is not None and cached[0] is device:
        return cached[1]
    attributes: dict[str, dict] = {}
    for name, value in (device.get("attributes") or {}).items():
        domain, ident = _split(name, driver)
        attributes.setdefault(domain, {})[ident] = _attribute(value or {})
    capacity: dict[str, dict] = {}
    for name, value in (device.get("capacity") or {}).items():
        domain, ident = _split(name, driver)
        capacity.setdefault(domain, {})[ident] = quantity_value(str((value or {}).get("value", "0")))
    out = {"driver": driver, "allowMultipleAllocations": bool(device.get("allowMultipleAllocations")),
           "attributes": attributes, "capacity": capacity}
    if len(_inputs) > 65536:
        _inputs.clear()
    _inputs[id(device)] = (device, out)
    return out


def _literals(expression: str) -> tuple[str, ...]:
    """String literals of an expression: the domains it may index ``attributes``/``capacity`` with."""
    found = _domains.get(expression)
    if found is None:
        found = _domains[expression] = tuple(a or b for a, b in _STRING_LITERAL.findall(expression))
    return found


def _with_default_domains(value: dict, expression: str) -> dict:
    """``attributes`` and ``capacity`` with an empty map for every domain the expression names but lacks."""
    missing = [d for d in _literals(expression) if d not in value["attributes"] or d not in value["capacity"]]
    if not missing:
        return value
    attributes, capacity = dict(value["attributes"]), dict(value["capacity"])
    for domain in missing:
        attributes.setdefault(domain, {})
        capacity.setdefault(domain, {})
    return {**value, "attributes": attributes, "capacity": capacity}


def matches(expression: str, device: dict) -> bool:
    """DeviceMatches: the selector's verdict on a :func:`device_input`; ``CelRuntimeError`` when it fails."""
    program = ENVIRONMENT.compile(expression)
    result = program.evaluate({"device": _with_default_domains(device, expression)})
    if not isinstance(result, bool):
        raise CelRuntimeError(f"CEL result of type {type(result).__name__} could not be converted to bool")
    return result
