"""kube-apiserver's strict JSON decoding, replayed over the upstream schema.

With ``fieldValidation=Strict|Warn`` the API server decodes a body with
sigs.k8s.io/json ``UnmarshalStrict`` (DisallowUnknownFields,
DisallowDuplicateFields, CaseSensitive) into the Go type. The decoder
(internal/golang/encoding/json/decode.go + kubernetes_patch.go) walks the JSON
in document order and records, without stopping:

* ``unknown field "spec.foo"`` for a key no struct field takes (its value is
  skipped, so nothing inside it is reported),
* ``duplicate field "spec.replicas"`` for a key seen twice in one object,

with the path built from the strict field stack (``.`` before keys, ``[i]`` for
indexes), deduplicated and capped at 100. Python's json keeps no duplicate
keys and knows no Go types, so the walk is redone here over the v1.37 OpenAPI
definitions: ``properties`` are struct fields, ``additionalProperties`` a map,
``items`` a slice. Types with their own UnmarshalJSON (Quantity, IntOrString,
RawExtension, FieldsV1, apiextensions JSON and JSONSchemaPropsOr*) are opaque:
their inside is decoded without strictness.
"""
from __future__ import annotations

from typing import Any, Iterable

from .. import schema
from ..gofmt import go_quote

MAX_STRICT_ERRORS = 100  # kubernetes_patch.go saveStrictError
UNKNOWN = "unknown field"
DUPLICATE = "duplicate field"

# Definitions whose Go types implement json.Unmarshaler: strictness stops there.
OPAQUE_DEFINITIONS = frozenset({
    "io.k8s.apimachinery.pkg.api.resource.Quantity",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
})


class Pairs(list):
    """A JSON object as its (key, value) pairs in document order, duplicates kept."""


def parse_pairs(body: bytes | str) -> Any:
    """Parse a JSON body keeping every key of every object (json.loads with object_pairs_hook)."""
    import json

    return json.loads(body, object_pairs_hook=Pairs)


def _items(value: Any) -> Iterable[tuple[str, Any]] | None:
    if isinstance(value, Pairs):
        return value
    if isinstance(value, dict):
        return value.items()
    return None


class _Collector:
    """saveStrictError: keeps the first 100 distinct errors in order."""

    def __init__(self):
        self.found: list[tuple[str, str]] = []

    def add(self, kind: str, path: str) -> None:
        if len(self.found) < MAX_STRICT_ERRORS and (kind, path) not in self.found:
            self.found.append((kind, path))


def message(kind: str, path: str) -> str:
    """strictError.Error(): the path quoted with %q."""
    return f"{kind} {go_quote(path)}"


def _key_path(stack: str, key: str) -> str:
    return f"{stack}.{key}" if stack else key


def strict_messages(definition: str | None, value: Any, *, sort_keys: bool = False) -> list[str]:
    """Messages of a strict decode of ``value`` into the type of ``definition``.

    ``definition`` None decodes into ``map[string]interface{}`` (custom resources): only duplicates count.
    ``sort_keys`` replays a decode of ``json.Marshal(map)`` output, whose keys Go sorts.
    """
    return [message(kind, path) for kind, path in _strict_errors(definition, value, sort_keys)]


def unknown_paths(definition: str, value: Any, *, sort_keys: bool = False) -> list[str]:
    """The paths of the ``unknown field`` errors only."""
    return [path for kind, path in _strict_errors(definition, value, sort_keys) if kind == UNKNOWN]


def _strict_errors(definition: str | None, value: Any, sort_keys: bool) -> list[tuple[str, str]]:
    out = _Collector()
    node = {"$ref": schema.REF_PREFIX + definition} if definition else None
    _walk(node, value, "", out, sort_keys)
    return out.found


def _resolve(node: dict) -> tuple[dict, str | None]:
    """Follow $ref / single allOf; also say which named definition the node is."""
    ref = node.get("$ref")
    if ref is None and len(node.get("allOf") or ()) == 1:
        ref = node["allOf"][0].get("$ref")
    if ref is None:
        return node, None
    name = schema.ref_name(ref)
    return schema.definitions()[name], name


def _is_object_type(node: dict) -> bool:
    t = node.get("type")
    return t == "object" or (isinstance(t, list) and "object" in t)


def _walk(node: dict | None, value: Any, stack: str, out: _Collector, sort_keys: bool) -> None:
    if node is None:  # interface{}: a map or slice decoded without a type
        _walk_untyped(value, stack, out, sort_keys)
        return
    node, name = _resolve(node)
    if name in OPAQUE_DEFINITIONS:
        return
    pairs = _items(value)
    if "properties" in node or (name is not None and _is_object_type(node) and "additionalProperties" not in node):
        if pairs is not None:
            _walk_struct(node.get("properties") or {}, pairs, stack, out, sort_keys)
    elif "additionalProperties" in node:
        if pairs is not None:
            element = node["additionalProperties"]
            _walk_map(element if isinstance(element, dict) else None, pairs, stack, out, sort_keys)
    elif "items" in node and isinstance(value, list):
        for i, v in enumerate(value):
            _walk(node["items"], v, f"{stack}[{i}]", out, sort_keys)


def _ordered(pairs: Iterable[tuple[str, Any]], sort_keys: bool) -> list[tuple[str, Any]]:
    return sorted(pairs, key=lambda kv: kv[0]) if sort_keys else list(pairs)


def _walk_struct(properties: dict, pairs, stack: str, out: _Collector, sort_keys: bool) -> None:
    seen = set()
    for key, v in _ordered(pairs, sort_keys):
        if key not in properties:
            out.add(UNKNOWN, _key_path(stack, key))
            continue
        if key in seen:
            out.add(DUPLICATE, _key_path(stack, key))
        seen.add(key)
        _walk(properties[key], v, _key_path(stack, key), out, sort_keys)


def _walk_map(element: dict | None, pairs, stack: str, out: _Collector, sort_keys: bool) -> None:
    seen = set()
    for key, v in _ordered(pairs, sort_keys):
        if key in seen:
            out.add(DUPLICATE, _key_path(stack, key))
        seen.add(key)
        _walk(element, v, _key_path(stack, key), out, sort_keys)


def _walk_untyped(value: Any, stack: str, out: _Collector, sort_keys: bool) -> None:
    pairs = _items(value)
    if pairs is not None:
        _walk_map(None, pairs, stack, out, sort_keys)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _walk_untyped(v, f"{stack}[{i}]", out, sort_keys)


def drop_unknown(definition: str, value: Any) -> None:
    """Remove, in place, the fields a decode into ``definition`` would not keep (nested ones too)."""
    node, name = _resolve({"$ref": schema.REF_PREFIX + definition})
    _drop(node, name, value)


def _drop(node: dict, name: str | None, value: Any) -> None:
    if name in OPAQUE_DEFINITIONS:
        return
    if "properties" in node or (name is not None and _is_object_type(node) and "additionalProperties" not in node):
        if isinstance(value, dict):
            properties = node.get("properties") or {}
            for key in [k for k in value if k not in properties]:
                del value[key]
            for key, v in value.items():
                if isinstance(v, (dict, list)):  # scalars have no fields to drop
                    _drop(*_resolve(properties[key]), v)
    elif isinstance(node.get("additionalProperties"), dict) and isinstance(value, dict):
        element = _resolve(node["additionalProperties"])
        for v in value.values():
            if isinstance(v, (dict, list)):
                _drop(*element, v)
    elif "items" in node and isinstance(value, list):
        element = _resolve(node["items"])
        for v in value:
            if isinstance(v, (dict, list)):
                _drop(*element, v)
