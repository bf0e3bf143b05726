"""Custom resources: pruning, defaulting and OpenAPI validation against their CRD's structural schema.

What apiextensions-apiserver does to a custom resource, in its order:

* decoding (pkg/apiserver/customresource_handler.go, unstructuredSchemaCoercer.apply):
  unknown fields of the top-level ``metadata`` are dropped (objectmeta
  GetObjectMetaWithOptions), fields the schema does not declare are pruned
  (schema/pruning/algorithm.go; the paths come back sorted), nulls of
  non-nullable fields without a default are removed
  (schema/defaulting/prunenulls.go), embedded resources' metadata is coerced
  (schema/objectmeta/coerce.go), then defaults are applied
  (schema/defaulting/algorithm.go). The collected paths are what
  ``fieldValidation=Strict`` reports as ``unknown field "spec.foo"``.
* validation (pkg/registry/customresource/strategy.go and validator.go): TypeMeta,
  ObjectMeta (the shared validation/meta.py), the OpenAPI schema (kube-openapi, see
  :mod:`structural_openapi`), the scale subresource's replicas, and the
  ``x-kubernetes-list-type`` set/map uniqueness (schema/listtype/validation.go),
  then, unless one of those errors is blocking, the ``x-kubernetes-validations``
  CEL rules (:mod:`custom_rules`).
"""
from __future__ import annotations

import copy
from typing import Any

import orjson

from ..errors import FieldError
from ..gofmt import go_v
from ..registry import ResourceType
from . import structural_decode as decode
from . import gofield
from . import custom_rules, structural_openapi
from .formats import name_is_dns_subdomain
from .meta import validate_object_meta, validate_object_meta_update
from .path import Path, child as _child, key as _key

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_META_FIELDS = ("apiVersion", "kind", "metadata")
_MAX_INT32 = 2 ** 31 - 1


def openapi_schema(rt: ResourceType) -> dict:
    """The version's ``schema.openAPIV3Schema`` (a CRD without one prunes everything but metadata)."""
    return ((rt.crd or {}).get("schema") or {}).get("openAPIV3Schema") or {}


# --- decoding: pruning and defaulting ---------------------------------
def prune_and_default(rt: ResourceType, obj: dict) -> list[str]:
    """Prune ``obj`` in place as the decoder does, apply schema defaults, return the pruned paths.

    The paths are in kube-apiserver's order: unknown top-level metadata fields, then the pruned
    fields sorted, then unknown metadata fields of embedded resources sorted.
    """
    s = openapi_schema(rt)
    paths = _prune_unknown(s, obj)
    default(obj, s)
    return paths


def unknown_field_paths(rt: ResourceType, obj: dict) -> list[str]:
    """What :func:`prune_and_default` would report, without touching ``obj``."""
    return _prune_unknown(openapi_schema(rt), copy.deepcopy(obj))


def _prune_unknown(s: dict, obj: dict) -> list[str]:
    paths = []
    if isinstance(obj.get("metadata"), dict):
        # GetObjectMetaWithOptions: json.Marshal of the map (sorted keys), strict decode into ObjectMeta
        paths += ["metadata." + p for p in decode.unknown_paths(OBJECT_META, obj["metadata"], sort_keys=True)]
        decode.drop_unknown(OBJECT_META, obj["metadata"])
    pruned: list[str] = []
    prune(obj, {**s, "x-kubernetes-embedded-resource": True}, "", pruned)
    paths += sorted(pruned)
    prune_non_nullable_nulls(obj, s)
    embedded: list[str] = []
    _coerce_embedded(obj, s, Path(), embedded, is_root=True)
    return paths + sorted(embedded)


def _join(parent: str, key: str) -> str:
    """UnknownFieldPathOptions.AppendKey: a dot before every key but the first."""
    return f"{parent}.{key}" if parent else key


def _additional(s: dict) -> tuple[bool, dict | None]:
    """(has additionalProperties, its schema); ``additionalProperties: true`` has no schema."""
    ap = s.get("additionalProperties")
    if ap is None:
        return False, None
    return True, ap if isinstance(ap, dict) else None


def prune(x: Any, s: dict | None, path: str, out: list[str]) -> None:
    """pruning.prune: drop what ``s`` does not declare, appending each dropped field's path to ``out``."""
    if s is not None and s.get("x-kubernetes-preserve-unknown-fields"):
        _skip_prune(x, s, path, out)
        return
    if isinstance(x, dict):
        if s is None:
            out.extend(_join(path, k) for k in x)
            x.clear()
            return
        embedded = s.get("x-kubernetes-embedded-resource")
        properties = s.get("properties") or {}
        has_additional, additional = _additional(s)
        for key in list(x):
            if embedded and key in _META_FIELDS:
                continue
            if key in properties:
                prune(x[key], properties[key], _join(path, key), out)
            elif has_additional:
                prune(x[key], additional, _join(path, key), out)
            else:
                if key not in _META_FIELDS or path:
                    out.append(_join(path, key))
                del x[key]
    elif isinstance(x, list):
        items = s.get("items") if s is not None else None
        for i, v in enumerate(x):
            prune(v, items, f"{path}[{i}]", out)


def _skip_prune(x: Any, s: dict, path: str, out: list[str]) -> None:
    """pruning.skipPrune: under x-kubernetes-preserve-unknown-fields only declared fields are pruned into."""
    if isinstance(x, dict):
        embedded = s.get("x-kubernetes-embedded-resource")
        properties = s.get("properties") or {}
        has_additional, additional = _additional(s)
        for key, v in x.items():
            if embedded and key in _META_FIELDS:
                continue
            if key in properties:
                prune(v, properties[key], _join(path, key), out)
            elif has_additional:
                prune(v, additional, _join(path, key), out)
    elif isinstance(x, list) and isinstance(s.get("items"), dict):
        for i, v in enumerate(x):
            _skip_prune(v, s["items"], f"{path}[{i}]", out)


def _field_schema(key: str, s: dict | None) -> dict | None:
    if s is None:
        return None
    if key in (s.get("properties") or {}):
        return s["properties"][key]
    return _additional(s)[1]


def prune_non_nullable_nulls(x: Any, s: dict | None) -> None:
    """defaulting.PruneNonNullableNullsWithoutDefaults: ``null`` of a non-nullable field without default goes."""
    if isinstance(x, dict):
        for key in list(x):
            sub = _field_schema(key, s)
            if x[key] is None and sub is not None and not sub.get("nullable") and "default" not in sub:
                del x[key]
            else:
                prune_non_nullable_nulls(x[key], sub)
    elif isinstance(x, list):
        items = s.get("items") if s is not None else None
        for v in x:
            prune_non_nullable_nulls(v, items)


def _coerce_embedded(x: Any, s: dict | None, path: Path, out: list[str], is_root: bool = False) -> None:
    """objectmeta.Coerce: the metadata of every x-kubernetes-embedded-resource object loses unknown fields."""
    if s is None:
        return
    if isinstance(x, dict):
        if s.get("x-kubernetes-embedded-resource") and not is_root and isinstance(x.get("metadata"), dict):
            prefix = str(path.child("metadata"))
            out.extend(f"{prefix}.{p}" for p in decode.unknown_paths(OBJECT_META, x["metadata"], sort_keys=True))
            decode.drop_unknown(OBJECT_META, x["metadata"])
        properties = s.get("properties") or {}
        has_additional, additional = _additional(s)
        for key, v in x.items():
            if key in properties:
                _coerce_embedded(v, properties[key], path.child(key), out)
            elif has_additional:
                _coerce_embedded(v, additional, path.key(key), out)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            _coerce_embedded(v, s.get("items"), path.index(i), out)


def default(x: Any, s: dict | None) -> None:
    """defaulting.Default: absent (or null non-nullable) fields take a deep copy of their ``default``."""
    if s is None:
        return
    if isinstance(x, dict):
        properties = s.get("properties") or {}
        for key, prop in properties.items():
            if "default" in prop and prop["default"] is not None:
                if key not in x or (x[key] is None and not prop.get("nullable")):
                    x[key] = copy.deepcopy(prop["default"])
        _, additional = _additional(s)
        for key in x:
            if key in properties:
                default(x[key], properties[key])
            elif additional is not None:
                if x[key] is None and not additional.get("nullable") and additional.get("default") is not None:
                    x[key] = copy.deepcopy(additional["default"])
                default(x[key], additional)
    elif isinstance(x, list):
        items = s.get("items")
        if isinstance(items, dict):
            for i, v in enumerate(x):
                if v is None and not items.get("nullable") and items.get("default") is not None:
                    x[i] = copy.deepcopy(items["default"])
                default(x[i], items)


# --- validation --------------------------------------------------------
def validate_custom_resource(rt: ResourceType, obj: dict, old: dict | None = None) -> list[FieldError]:
    """customResourceStrategy.Validate (or ValidateUpdate when ``old`` is given).

    TypeMeta (alone when wrong), ObjectMeta (ValidateObjectMetaAccessor, or ...Update on update), the OpenAPI
    schema, the scale subresource's replicas, list-type set/map uniqueness (ratcheted on update: only
    checked when the old object passed it), then the CEL rules unless an earlier error blocks them.
    """
    type_errs = _validate_type_meta(rt, obj)
    if type_errs:
        return type_errs
    meta = obj.get("metadata") or {}
    if old is None:
        errs: list[FieldError] = validate_object_meta(meta, rt.namespaced, name_is_dns_subdomain,
                                                      kube_finalizers=False)
    else:
        errs = validate_object_meta_update(meta, old.get("metadata") or {}, kube_finalizers=False)
    s = openapi_schema(rt)
    errs += structural_openapi.validate(s, obj, None)
    scale = (rt.crd.get("subresources") or {}).get("scale") if rt.crd else None
    if scale:
        errs += _validate_scale(obj, scale)
    if old is None or not validate_list_sets_and_maps(None, s, old):
        errs += validate_list_sets_and_maps(None, s, obj)
    if custom_rules.has_rules(s):
        blocked = custom_rules.blocking_error(errs)
        errs += [blocked] if blocked else custom_rules.validate(s, obj, old)
    return errs


def _validate_type_meta(rt: ResourceType, obj: dict) -> list[FieldError]:
    """customResourceValidator.ValidateTypeMeta."""
    errs = []
    if obj.get("kind") != rt.kind:
        errs.append(gofield.invalid("kind", obj.get("kind", ""), f"must be {rt.kind}"))
    expected = f"{rt.group}/{rt.version}"
    if obj.get("apiVersion") != expected:
        errs.append(gofield.invalid("apiVersion", obj.get("apiVersion", ""), f"must be {expected}"))
    return errs


_GO_TYPE_NAMES = {str: "string", int: "int64", float: "float64", bool: "bool", dict: "map[string]interface {}",
                  list: "[]interface {}", type(None): "<nil>"}


def _nested_int64(obj: dict, json_path: str) -> tuple[int, str | None]:
    """unstructured.NestedInt64 (apimachinery unstructured/helpers.go): (value, accessor error)."""
    fields = json_path.removeprefix(".").split(".")
    value: Any = obj
    for i, name in enumerate(fields):
        if value is None:
            return 0, None
        if not isinstance(value, dict):
            return 0, (f".{'.'.join(fields[:i + 1])} accessor error: {go_v(value)} is of the type "
                       f"{_GO_TYPE_NAMES[type(value)]}, expected map[string]interface{{}}")
        if name not in value:
            return 0, None
        value = value[name]
    if isinstance(value, int) and not isinstance(value, bool):
        return value, None
    return 0, (f".{'.'.join(fields)} accessor error: {go_v(value)} is of the type "
               f"{_GO_TYPE_NAMES[type(value)]}, expected int64")


def _validate_scale(obj: dict, scale: dict) -> list[FieldError]:
    """ValidateScaleSpec and ValidateScaleStatus: replicas are a non-negative int32."""
    errs = []
    for json_path in (scale.get("specReplicasPath"), scale.get("statusReplicasPath")):
        if not json_path:
            continue
        replicas, err = _nested_int64(obj, json_path)
        if err:
            errs.append(gofield.invalid(json_path, replicas, err))
        elif replicas < 0:
            errs.append(gofield.invalid(json_path, replicas, "should be a non-negative integer"))
        elif replicas > _MAX_INT32:
            errs.append(gofield.invalid(json_path, replicas, f"should be less than or equal to {_MAX_INT32}"))
    return errs


def validate_list_sets_and_maps(path: Path | None, s: dict | None, obj: Any) -> list[FieldError]:
    """listtype.ValidateListSetsAndMaps: set items and map-list keys must be unique."""
    if s is None or not isinstance(obj, dict):
        return []
    errs: list[FieldError] = []
    _, additional = _additional(s)
    properties = s.get("properties") or {}
    if additional is not None:
        for key, v in obj.items():
            errs += _list_sets_and_maps(_key(path, key), additional, v)
    for key, v in obj.items():
        if key in properties:
            errs += _list_sets_and_maps(_child(path, key), properties[key], v)
    return errs


def _list_sets_and_maps(path: Path, s: dict, obj: Any) -> list[FieldError]:
    if isinstance(obj, list):
        errs: list[FieldError] = []
        list_type = s.get("x-kubernetes-list-type")
        if list_type == "set":
            errs += [gofield.duplicate(path.index(i), obj[i]) for i in _non_unique(obj)]
        elif list_type == "map":
            errs += _validate_list_map(path, s.get("x-kubernetes-list-map-keys") or [], obj)
        items = s.get("items")
        if isinstance(items, dict):
            for i, v in enumerate(obj):
                errs += _list_sets_and_maps(path.index(i), items, v)
        return errs
    if isinstance(obj, dict):
        return validate_list_sets_and_maps(path, s, obj)
    return []


_UNSPECIFIED = object()  # unspecifiedKeyValue{}: an item without the key field


def _identity(x: Any) -> Any:
    """What Go compares: scalars by dynamic type and value, compounds by their JSON encoding."""
    if x is _UNSPECIFIED:
        return ("unspecified",)
    if isinstance(x, (dict, list)):
        return ("json", orjson.dumps(x, option=orjson.OPT_SORT_KEYS))
    return (type(x).__name__, x)


def _non_unique(items: list) -> list[int]:
    """validateListSet: the index of each value's second appearance."""
    seen: dict[Any, int] = {}
    out = []
    for i, x in enumerate(items):
        ident = _identity(x)
        seen[ident] = seen.get(ident, 0) + 1
        if seen[ident] == 2:
            out.append(i)
    return out


def _validate_list_map(path: Path, keys: list[str], items: list) -> list[FieldError]:
    for i, x in enumerate(items):
        if x is not None and not isinstance(x, dict):
            return [gofield.invalid(path.index(i), x, "must be an object for an array of list-type map")]
    if len(items) <= 1:
        return []
    if len(keys) == 1:
        key_field = keys[0]
        values = [x[key_field] if isinstance(x, dict) and key_field in x else _UNSPECIFIED for x in items]
        return [gofield.duplicate(path.index(i), {} if values[i] is _UNSPECIFIED else {key_field: values[i]})
                for i in _non_unique(values)]
    composite = [{k: x[k] for k in keys if k in x} if isinstance(x, dict) else {} for x in items]
    return [gofield.duplicate(path.index(i), composite[i]) for i in _non_unique(composite)]
