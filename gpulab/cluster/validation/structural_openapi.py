"""OpenAPI v3 value validation as kube-openapi's SchemaValidator does it, with its messages.

apiextensions-apiserver validates custom resources (and the defaults in a CRD
schema) with k8s.io/kube-openapi/pkg/validation/validate: per schema node the
type, schemaProps (allOf/anyOf/oneOf/not), string, format, number, slice,
common (enum) and object validators run in that order (validate/schema.go).
Their errors (pkg/validation/errors/schema.go) are then turned into field
errors by kubeOpenAPIResultToFieldErrors
(apiextensions-apiserver/pkg/apiserver/validation/validation.go), which is
where the familiar ``spec.x: Invalid value: "string": spec.x in body must be of
type integer: "string"`` comes from. No Python JSON-Schema library reproduces
those texts or kube-openapi's quirks (the type check's format rule, int64
truncation of bounds), so the validators are reimplemented.

Values are what Go decodes: int is int64, float is float64.
"""
from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field as dc_field
from typing import Any

import orjson

from ..gofmt import go_float, go_quote, go_v
from . import gofield
from . import structural_formats as formats

IN = "body"

# kube-openapi error codes (errors/schema.go) that kubeOpenAPIResultToFieldErrors maps specially.
INVALID_TYPE = "InvalidType"
REQUIRED = "Required"
ENUM = "Enum"
TOO_LONG = "TooLong"
MAX_ITEMS = "MaxItems"
TOO_MANY_PROPERTIES = "TooManyProperties"
OTHER = "Other"


@dataclass
class _Error:
    code: str
    name: str  # the dotted path kube-openapi reports ("spec.ports[0].name"); None for non-field errors
    message: str
    value: Any = None
    values: list = dc_field(default_factory=list)
    limit: int = -1  # Validation.Valid: the maximum a TooLong/TooManyItems/TooManyProperties error carries


@dataclass
class _Result:
    errors: list = dc_field(default_factory=list)
    match_count: int = 0

    def merge(self, *others: _Result | None) -> _Result:
        for other in others:
            if other is not None:
                self.errors.extend(other.errors)
                self.match_count += other.match_count
        return self

    def valid(self) -> bool:
        return not self.errors


def validate(schema: dict, value: Any, field_path) -> list:
    """ValidateCustomResource(fldPath, value, NewSchemaValidator(schema)): field errors for ``value``.

    ``field_path`` is a :class:`~gpulab.cluster.validation.path.Path` or None (kube-apiserver's nil path,
    printed ``<nil>`` on errors that name no field).
    """
    return [_to_field_error(e, field_path) for e in _validate(schema, value, "").errors]


def _to_field_error(err: _Error, field_path):
    if err.name is None:
        return gofield.invalid(_path_text(field_path), "", err.message)
    path = field_path
    name = err.name.removeprefix(".")
    if err.name and err.name != ".":
        path = path.child(name) if path is not None else _Named(name)
    if err.code == REQUIRED:
        return gofield.required(_path_text(path), "")
    if err.code == ENUM:
        return gofield.not_supported(_path_text(path), err.value, [
            v if isinstance(v, str) else _json(v) for v in err.values])
    if err.code == TOO_LONG:
        return gofield.too_long(_path_text(path), err.limit)
    if err.code in (MAX_ITEMS, TOO_MANY_PROPERTIES):
        actual = err.value if isinstance(err.value, int) else -1
        return gofield.too_many(_path_text(path), actual, err.limit)
    value = "" if err.value is None else err.value
    if err.code == INVALID_TYPE:
        return gofield.type_invalid(_path_text(path), value, err.message)
    return gofield.invalid(_path_text(path), value, err.message)


class _Named:
    """field.NewPath(name) for a nil parent."""

    def __init__(self, text: str):
        self.text = text

    def __str__(self) -> str:
        return self.text


def _path_text(path) -> str:
    return "<nil>" if path is None else str(path)


def _json(v: Any) -> str:
    """json.Marshal of an enum value that is not a string."""
    return orjson.dumps(v).decode()


# --- schema accessors (ConvertJSONSchemaProps + StripUnsupportedFormatsPostProcess) ---
def _types(s: dict) -> list[str]:
    if s.get("x-kubernetes-int-or-string"):
        return ["integer", "string"]
    t = s.get("type")
    return [t] if t else []


def _format(s: dict) -> str:
    types = _types(s)
    return formats.effective_format(types[0] if len(types) == 1 else "", s.get("format") or "")


# --- the SchemaValidator ---------------------------------------------
def _kind(data: Any) -> str:
    if isinstance(data, bool):
        return "bool"
    if isinstance(data, int):
        return "int"
    if isinstance(data, float):
        return "float"
    if isinstance(data, str):
        return "string"
    if isinstance(data, list):
        return "slice"
    if isinstance(data, dict):
        return "map"
    return "nil"


def _validate(s: dict, data: Any, path: str) -> _Result:
    result = _Result()
    if data is None:
        result.merge(_type_validator(s, data, path), _enum_validator(s, data, path))
        return result
    kind = _kind(data)
    steps = [_type_validator if (_types(s) or _format(s)) else None, _schema_props_validator]
    if kind == "string":
        steps += [_string_validator]
        if formats.is_string_format(_format(s)):
            steps.append(_format_validator)
    if kind in ("int", "float"):
        steps.append(_number_validator)
    if kind == "slice":
        steps.append(_slice_validator)
    steps.append(_enum_validator)
    if kind == "map":
        steps.append(_object_validator)
    for step in steps:
        if step is not None:
            result.merge(step(s, data, path))
            result.match_count += 1
    result.match_count += 1
    return result


def _invalid_type(path: str, type_name: str, value: Any) -> _Error:
    """errors.InvalidType: a string value is quoted with %q into the message."""
    if isinstance(value, str):
        message = f"{path} in {IN} must be of type {type_name}: {go_quote(value)}"
    else:
        message = f"{path} in {IN} must be of type {type_name}"
    return _Error(INVALID_TYPE, path, message, value)


def _schema_info(data: Any) -> tuple[str, str]:
    """typeValidator.schemaInfoForType for decoded JSON."""
    return {
        "bool": ("boolean", ""), "string": ("string", ""), "int": ("integer", "int64"),
        "float": ("number", "double"), "slice": ("array", ""), "map": ("object", ""),
    }[_kind(data)]


def _type_validator(s: dict, data: Any, path: str) -> _Result:
    """validate/type.go typeValidator.Validate."""
    types = _types(s)
    fmt = _format(s)
    if data is None:
        if types and "null" not in types and not s.get("nullable"):
            return _Result([_invalid_type(path, ",".join(types), "null")], 1)
        return _Result(match_count=1)
    kind = _kind(data)
    sch_type, data_format = _schema_info(data)
    is_float_int = sch_type == "number" and _is_json_integer(data) and "integer" in types
    is_int_float = sch_type == "integer" and "number" in types
    if kind not in ("string", "slice") and fmt and not (
            sch_type in types or data_format == fmt or is_float_int or is_int_float):
        return _Result([_invalid_type(path, fmt, data_format)], 1)
    if not ("number" in types or "integer" in types) and fmt and kind in ("string", "slice"):
        return _Result(match_count=1)
    if not (sch_type in types or is_float_int or is_int_float):
        return _Result([_invalid_type(path, ",".join(types), sch_type)], 1)
    return _Result(match_count=1)


def _is_json_integer(f: float) -> bool:
    """swag.IsFloat64AJSONInteger, for the range JSON numbers hold exactly."""
    return not (math.isnan(f) or math.isinf(f)) and abs(f) <= 2 ** 53 and f == math.floor(f)


def _string_validator(s: dict, data: str, path: str) -> _Result:
    """validate/validator.go stringValidator: maxLength, minLength, pattern; the first failure only."""
    length = len(data)  # utf8.RuneCount
    if s.get("maxLength") is not None and length > s["maxLength"]:
        return _Result([_Error(TOO_LONG, path, f"{path} in {IN} should be at most {s['maxLength']} chars long",
                               data, limit=s["maxLength"])])
    if s.get("minLength") is not None and length < s["minLength"]:
        return _Result([_Error(OTHER, path, f"{path} in {IN} should be at least {s['minLength']} chars long",
                               data)])
    pattern = s.get("pattern")
    if pattern:
        try:
            matched = go_regexp(pattern).search(data) is not None
        except re.error as err:
            return _Result([_Error(OTHER, path, f"{path} in {IN} should match '{pattern}, but pattern is invalid: "
                                                f"{err}'", data)])
        if not matched:
            return _Result([_Error(OTHER, path, f"{path} in {IN} should match '{pattern}'", data)])
    return _Result()


@functools.lru_cache(maxsize=512)
def go_regexp(pattern: str) -> re.Pattern:
    """Compile a Go (RE2) pattern: outside character classes ``$`` and ``\\z`` mean end of text only."""
    out = []
    i, in_class = 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            out.append("\\Z" if nxt == "z" and not in_class else ch + nxt)
            i += 2
            continue
        if ch == "[" and not in_class:
            in_class = True
        elif ch == "]" and in_class:
            in_class = False
        out.append("\\Z" if ch == "$" and not in_class else ch)
        i += 1
    return re.compile("".join(out))


def _format_validator(s: dict, data: str, path: str) -> _Result:
    """validate/formats.go + values.go FormatOf: an InvalidType error naming the format."""
    fmt = _format(s)
    if formats.valid(fmt, data):
        return _Result()
    return _Result([_invalid_type(path, fmt, data)])


def _bound_text(bound: float, data: Any) -> str:
    """MinimumNativeType/MaximumNativeType: an int64 value is compared with int64(bound), printed as such."""
    return str(int(bound)) if isinstance(data, int) else go_float(float(bound))


def _number_validator(s: dict, data: Any, path: str) -> _Result:
    """validate/validator.go numberValidator: multipleOf, minimum, maximum (all three reported)."""
    errors = []
    factor = s.get("multipleOf")
    if factor is not None:
        err = _multiple_of(path, data, factor)
        if err:
            errors.append(err)
    minimum = s.get("minimum")
    if minimum is not None:
        exclusive = bool(s.get("exclusiveMinimum"))
        bound = int(minimum) if isinstance(data, int) else float(minimum)
        if (not exclusive and data < bound) or (exclusive and data <= bound):
            op = "greater than" if exclusive else "greater than or equal to"
            errors.append(_Error(OTHER, path, f"{path} in {IN} should be {op} {_bound_text(minimum, data)}", data))
    maximum = s.get("maximum")
    if maximum is not None:
        exclusive = bool(s.get("exclusiveMaximum"))
        bound = int(maximum) if isinstance(data, int) else float(maximum)
        if (not exclusive and data > bound) or (exclusive and data >= bound):
            op = "less than" if exclusive else "less than or equal to"
            errors.append(_Error(OTHER, path, f"{path} in {IN} should be {op} {_bound_text(maximum, data)}", data))
    return _Result(errors, 1)


def _multiple_of(path: str, data: Any, factor: float) -> _Error | None:
    if factor < 0:
        return _Error(OTHER, path, f"factor MultipleOf declared for {path} must be positive: {go_v(factor)}", factor)
    if isinstance(data, int):
        whole = int(factor)  # MultipleOfNativeType compares with int64(factor)
        if whole == 0 or data % whole == 0:
            return None
        return _Error(OTHER, path, f"{path} in {IN} should be a multiple of {whole}", data)
    mult = (1 / factor * data) if factor < 1 else data / factor
    if abs(mult - round(mult)) < 1e-9 * max(1.0, abs(mult)):
        return None
    return _Error(OTHER, path, f"{path} in {IN} should be a multiple of {go_v(float(factor))}", data)


def _slice_validator(s: dict, data: list, path: str) -> _Result:
    """validate/slice_validator.go: items ("path[i]"), then minItems and maxItems."""
    result = _Result()
    items = s.get("items")
    if isinstance(items, dict):
        for i, v in enumerate(data):
            result.merge(_validate(items, v, f"{path}[{i}]"))
    size = len(data)
    if s.get("minItems") is not None and size < s["minItems"]:
        result.errors.append(_Error(OTHER, path, f"{path} in {IN} should have at least {s['minItems']} items", size))
    if s.get("maxItems") is not None and size > s["maxItems"]:
        result.errors.append(_Error(MAX_ITEMS, path, f"{path} in {IN} should have at most {s['maxItems']} items",
                                    size, limit=s["maxItems"]))
    result.match_count += 1
    return result


def _go_equal(a: Any, b: Any) -> bool:
    """reflect.DeepEqual on decoded JSON: an int64 never equals a float64."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_go_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_go_equal(x, y) for x, y in zip(a, b))
    return a == b


def _converted(data: Any, target: Any) -> tuple[bool, Any]:
    """Whether Go's reflect can convert data to the enum value's type, and the converted value."""
    if isinstance(target, bool) or isinstance(data, bool):
        return isinstance(target, bool) and isinstance(data, bool), data
    if isinstance(target, (int, float)) and isinstance(data, (int, float)):
        return True, type(target)(data)
    if isinstance(target, str) and isinstance(data, int):
        return True, chr(data) if 0 <= data <= 0x10FFFF else "\ufffd"
    return type(target) is type(data), data


def _enum_validator(s: dict, data: Any, path: str) -> _Result:
    """validate/validator.go basicCommonValidator: enum membership after Go type conversion."""
    enum = s.get("enum")
    if not enum:
        return _Result()
    if data is not None:
        for candidate in enum:
            if candidate is None:
                continue
            ok, converted = _converted(data, candidate)
            if ok and _go_equal(converted, candidate):
                return _Result()
    shown = " ".join(go_v(v) if not isinstance(v, (dict, list)) else _json(v) for v in enum)
    return _Result([_Error(ENUM, path, f"{path} in {IN} should be one of [{shown}]", data, list(enum))])


def _object_validator(s: dict, data: dict, path: str) -> _Result:
    """validate/object_validator.go: property counts, additionalProperties, properties, required."""
    count = len(data)
    if s.get("minProperties") is not None and count < s["minProperties"]:
        return _Result([_Error(OTHER, path, f"{path} in {IN} should have at least {s['minProperties']} properties",
                               count)])
    if s.get("maxProperties") is not None and count > s["maxProperties"]:
        return _Result([_Error(TOO_MANY_PROPERTIES, path,
                               f"{path} in {IN} should have at most {s['maxProperties']} properties", count,
                               limit=s["maxProperties"])])
    result = _Result()
    properties = s.get("properties") or {}
    additional = s.get("additionalProperties")
    if additional is False:
        for key in data:
            if key not in properties:
                result.errors.append(_Error(OTHER, path, f"{path}.{key} in {IN} is a forbidden property", key))
    elif isinstance(additional, dict):
        for key, value in data.items():
            if key not in properties:
                result.merge(_validate(additional, value, f"{path}.{key}"))
    for name, prop in properties.items():
        if name in data:
            result.merge(_validate(prop, data[name], f"{path}.{name}" if path else name))
    for name in s.get("required") or ():
        if name not in data:
            result.errors.append(_Error(REQUIRED, f"{path}.{name}", f"{path}.{name} in {IN} is required"))
    return result


def _schema_props_validator(s: dict, data: Any, path: str) -> _Result:
    """validate/schema_props.go: anyOf, oneOf, allOf, not; failures add a path-quoted composite message."""
    result = _Result()
    any_of = s.get("anyOf") or []
    if any_of:
        outcomes = [_validate(sub, data, path) for sub in any_of]
        if not any(r.valid() for r in outcomes):
            result.errors.append(_Error(OTHER, None, f"{go_quote(path)} must validate at least one schema (anyOf)"))
            result.merge(_best(outcomes))
        else:
            result.merge(next(r for r in outcomes if r.valid()))
    one_of = s.get("oneOf") or []
    if one_of:
        outcomes = [_validate(sub, data, path) for sub in one_of]
        passed = [r for r in outcomes if r.valid()]
        if len(passed) != 1:
            detail = "Found none valid" if not passed else f"Found {len(passed)} valid alternatives"
            result.errors.append(_Error(OTHER, None,
                                        f"{go_quote(path)} must validate one and only one schema (oneOf). {detail}"))
            if not passed:
                result.merge(_best(outcomes))
        else:
            result.merge(passed[0])
    all_of = s.get("allOf") or []
    if all_of:
        outcomes = [_validate(sub, data, path) for sub in all_of]
        for r in outcomes:
            result.merge(r)
        passed = sum(1 for r in outcomes if r.valid())
        if passed != len(all_of):
            suffix = ". None validated" if passed == 0 else ""
            result.errors.append(_Error(OTHER, None, f"{go_quote(path)} must validate all the schemas (allOf){suffix}"))
    not_schema = s.get("not")
    if isinstance(not_schema, dict) and _validate(not_schema, data, path).valid():
        result.errors.append(_Error(OTHER, None, f"{go_quote(path)} must not validate the schema (not)"))
    return result


def _best(outcomes: list[_Result]) -> _Result:
    """The failed alternative with the most passed checks (Result.MatchCount), the first on a tie."""
    best = outcomes[0]
    for r in outcomes[1:]:
        if r.match_count > best.match_count:
            best = r
    return best
