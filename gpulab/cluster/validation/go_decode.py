"""What decoding a built-in object into its Go type refuses: a value of the wrong JSON type, or a number its
integer field cannot hold.

kube-apiserver decodes a body into the kind's Go struct (sigs.k8s.io/json, a fork of encoding/json,
decode.go ``literalStore``/``object``/``array``). The first mismatch, in document order, becomes the error:
``json: cannot unmarshal number 3000000000 into Go struct field DeploymentSpec.spec.replicas of type int32``
(``Struct`` is the innermost struct, ``Field`` the JSON names from the top, without indexes or map keys).
Integers go through strconv.ParseInt, so ``3.0`` or ``1e30`` is refused in an integer field too.
On create and update the message is wrapped by transformDecodeError (handlers/rest.go); a JSON or merge
patch whose result does not decode answers 422 on the field ``patch`` with the patched document
(handlers/patch.go ``jsonPatcher``).

A strategic merge patch's result is converted from unstructured data instead (runtime/converter.go
``fromUnstructured``), which converts numbers the Go way: an integer too big for an int32 wraps around, a
whole float becomes an integer; what it cannot convert fails with the converter's words (``cannot restore map
from string``, ``unrecognized type: int32``), answered as 422 on ``patch`` with the patch printed by
``%+v`` (handlers/patch.go ``applyPatchToObject``).

The walk follows the upstream definitions (kubernetes-validate): ``format: int32``/``int64`` on integers,
``properties`` for structs, ``additionalProperties`` for maps, ``items`` for slices. Types with their own
UnmarshalJSON (Quantity, IntOrString, Time, RawExtension...) are left to their own checks. Known deviation:
Go's named string types (``v1.Protocol``) are reported as ``string``, and a float is printed as Python
writes it rather than as the request wrote it.
"""
from __future__ import annotations

from typing import Any

from .. import jsonio, schema
from ..errors import ApiError
from ..registry import ResourceType
from .structural_decode import OPAQUE_DEFINITIONS, _resolve
from ..gofmt import go_quote, go_v as go_plus_v
from .gofield import invalid as go_invalid

_INT_RANGES = {"int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1)}


def _types(node: dict) -> set[str]:
    t = node.get("type")
    return {t} if isinstance(t, str) else set(t or ()) - {"null"}


def _struct_name(name: str | None) -> str:
    return name.rsplit(".", 1)[-1] if name else ""


def _go_type(node: dict, name: str | None) -> str:
    """The Go type a definition node stands for, as reflect's Type.String() prints it."""
    if name is not None:
        parts = name.rsplit(".", 2)
        return f"{parts[-2]}.{parts[-1]}"
    types = _types(node)
    if "array" in types:
        return "[]" + _go_type(*_resolve(node.get("items") or {}))
    if "object" in types:
        element = node.get("additionalProperties")
        return "map[string]" + (_go_type(*_resolve(element)) if isinstance(element, dict) else "interface {}")
    if "string" in types:
        return "[]uint8" if node.get("format") == "byte" else "string"
    if "integer" in types:
        return "int32" if node.get("format") == "int32" else "int64"
    if "number" in types:
        return "float64"
    if "boolean" in types:
        return "bool"
    return "interface {}"


def _shape(node: dict, name: str | None) -> str:
    """struct, map, slice, string, integer, number, boolean, or any (no type to check)."""
    if name in OPAQUE_DEFINITIONS:
        return "any"
    types = _types(node)
    if "properties" in node or (name is not None and "object" in types and "additionalProperties" not in node):
        return "struct"
    if "object" in types:
        return "map" if isinstance(node.get("additionalProperties"), dict) else "any"
    if "array" in types:
        return "slice"
    for shape in ("string", "integer", "number", "boolean"):
        if shape in types:
            return shape
    return "any"


def _json_kind(value: Any) -> str:
    """UnmarshalTypeError.Value for a JSON value that does not fit."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object" if isinstance(value, dict) else "array"


def _number_text(value: int | float) -> str:
    return str(value) if isinstance(value, int) else repr(value).replace("e+", "e")


class _Mismatch(Exception):
    def __init__(self, message: str):
        self.message = message


# --- decoding JSON into the Go type ---------------------------------------------------------------------
def json_decode_error(rt: ResourceType, obj: dict) -> str | None:
    """encoding/json's first UnmarshalTypeError for ``obj`` decoded into ``rt``'s type, or None."""
    if rt.crd is not None:
        return None
    definition = schema.definition_name(rt.group, rt.version, rt.kind)
    if definition is None:
        return None
    try:
        _decode({"$ref": schema.REF_PREFIX + definition}, obj, "", [])
    except _Mismatch as exc:
        return exc.message
    return None


def _decode(ref: dict, value: Any, struct: str, stack: list[str]) -> None:
    if value is None:
        return  # null leaves a field at its zero value
    node, name = _resolve(ref)
    shape = _shape(node, name)
    if shape == "any":
        return
    if shape == "struct":
        if not isinstance(value, dict):
            raise _type_error(_json_kind(value), node, name, struct, stack)
        properties = node.get("properties") or {}
        here = _struct_name(name) or struct
        for key, item in value.items():
            if key in properties:  # unknown fields are skipped (or reported by strict decoding)
                stack.append(key)
                _decode(properties[key], item, here, stack)
                stack.pop()
    elif shape == "map":
        if not isinstance(value, dict):
            raise _type_error(_json_kind(value), node, name, struct, stack)
        for item in value.values():
            _decode(node["additionalProperties"], item, struct, stack)
    elif shape == "slice":
        if not isinstance(value, list):
            raise _type_error(_json_kind(value), node, name, struct, stack)
        for item in value:
            _decode(node.get("items") or {}, item, struct, stack)
    elif shape == "string":
        if not isinstance(value, str):
            raise _type_error(_json_kind(value), node, name, struct, stack)
    elif shape == "boolean":
        if not isinstance(value, bool):
            raise _type_error(_json_kind(value), node, name, struct, stack)
    elif shape == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _type_error(_json_kind(value), node, name, struct, stack)
    else:  # integer
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _type_error(_json_kind(value), node, name, struct, stack)
        low, high = _INT_RANGES[_go_type(node, name)]
        if isinstance(value, float) or not low <= value <= high:
            raise _type_error(f"number {_number_text(value)}", node, name, struct, stack)


def _type_error(what: str, node: dict, name: str | None, struct: str, stack: list[str]) -> _Mismatch:
    go_type = _go_type(node, name)
    if struct or stack:
        return _Mismatch(f"json: cannot unmarshal {what} into Go struct field {struct}.{'.'.join(stack)} "
                         f"of type {go_type}")
    return _Mismatch(f"json: cannot unmarshal {what} into Go value of type {go_type}")


def decode_error(rt: ResourceType, obj: dict, *, patched: bool) -> ApiError | None:
    """The error kube-apiserver answers when ``obj`` does not decode: 400 for a create or update body,
    422 on ``patch`` for the result of a JSON or merge patch."""
    message = json_decode_error(rt, obj)
    if message is None:
        return None
    if patched:
        return _patch_invalid(jsonio.dumps(obj).decode(), message)
    return ApiError(400, "BadRequest", f"{rt.kind} in version {go_quote(rt.version)} cannot be handled as a "
                                       f"{rt.kind}: {message}")


def _patch_invalid(shown: str, message: str) -> ApiError:
    """errors.NewInvalid(schema.GroupKind{}, "", field.Invalid(field.NewPath("patch"), shown, message))."""
    err = go_invalid("patch", shown, message)
    return ApiError(422, "Invalid", f' "" is invalid: {err}',
                    {"causes": [{"reason": err.type, "message": err.error_body(), "field": err.field}]})


# --- converting unstructured data into the Go type (strategic merge patch) ------------------------------
def from_unstructured(rt: ResourceType, obj: dict, patch: dict) -> dict:
    """``obj`` converted as runtime.DefaultUnstructuredConverter.FromUnstructured would hold it (integers
    narrowed the Go way), or the 422 that conversion ends in."""
    if rt.crd is not None:
        return obj
    definition = schema.definition_name(rt.group, rt.version, rt.kind)
    if definition is None:
        return obj
    try:
        return _convert({"$ref": schema.REF_PREFIX + definition}, obj)
    except _Mismatch as exc:
        raise _patch_invalid(go_plus_v(patch), exc.message) from None


def _go_kind(value: Any) -> str:
    """reflect.Kind of an unstructured value."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    return "map" if isinstance(value, dict) else "slice"


def _convert(ref: dict, value: Any):
    if value is None:
        return None
    node, name = _resolve(ref)
    shape = _shape(node, name)
    if shape == "any":
        return value
    if shape == "struct":
        if not isinstance(value, dict):
            raise _Mismatch(f"cannot restore struct from: {_go_kind(value)}")
        properties = node.get("properties") or {}
        return {k: _convert(properties[k], v) if k in properties else v for k, v in value.items()}
    if shape == "map":
        if not isinstance(value, dict):
            raise _Mismatch(f"cannot restore map from {_go_kind(value)}")
        return {k: _convert(node["additionalProperties"], v) for k, v in value.items()}
    if shape == "slice":
        if not isinstance(value, list):
            raise _Mismatch(f"cannot restore slice from {_go_kind(value)}")
        return [_convert(node.get("items") or {}, v) for v in value]
    go_type = _go_type(node, name)
    kind = _go_kind(value)
    if shape == "string":
        if kind == "string":
            return value
        raise _Mismatch(f"cannot convert {kind} to {go_type}" if kind == "int64" else f"unrecognized type: {go_type}")
    if shape == "boolean":
        if kind == "bool":
            return value
        raise _Mismatch(f"unrecognized type: {go_type}")
    if shape == "number":
        if kind in ("int64", "float64"):
            return value
        raise _Mismatch(f"unrecognized type: {go_type}")
    if kind == "int64":  # integer fields: Go's conversion keeps the low bits
        return _wrap(value, go_type)
    if kind == "float64":
        if not value.is_integer():
            raise _Mismatch(f"cannot convert float64 to {go_type}")
        low, high = _INT_RANGES[go_type]
        return int(value) if low <= value <= high else low  # amd64: out-of-range float conversions give MinInt
    raise _Mismatch(f"unrecognized type: {go_type}")


def _wrap(value: int, go_type: str) -> int:
    low, high = _INT_RANGES[go_type]
    span = high - low + 1
    return (value - low) % span + low
