"""Validation of one CRD version's ``openAPIV3Schema``: OpenAPI subset, structural rules, defaults.

This is validateCustomResourceDefinitionValidation and its helpers from
k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go
(ValidateCustomResourceDefinitionOpenAPISchema, specStandardValidatorV3,
validateMapListKeysMapSet), pkg/apiserver/schema/validation.go and complete.go
(ValidateStructural: invariants and completeness, sorted by message) and
pkg/apiserver/schema/defaulting/validation.go (ValidateDefaults). The schema is
the v1 JSON form (``additionalProperties`` may be a bool, ``items`` an object).

Go iterates ``properties`` maps in random order; here they go in sorted order.
CEL rules in ``x-kubernetes-validations`` are checked for shape, then compiled
(:func:`.custom_rules.compile_errors`); a valid schema's rules are then held to their cost budget
(:mod:`.rule_cost`).
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, replace

from ..errors import FieldError
from . import gofield
from . import custom_rules, rule_cost, structural_openapi
from .custom import prune
from .path import Path

OPENAPI_V3_TYPES = ["array", "boolean", "integer", "number", "object", "string"]
_META_FIELDS = ("metadata", "kind", "apiVersion")
_REASONS = ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"]
# JSONSchemaProps fields in Go struct order, by JSON name; the root of a schema with a status
# subresource may only set the ones marked True (allowedFieldsAtRootSchema).
_ROOT_FIELDS = [
    ("id", False), ("$schema", False), ("$ref", False), ("description", True), ("type", True),
    ("nullable", False), ("format", True), ("title", True), ("default", False), ("maximum", True),
    ("exclusiveMaximum", True), ("minimum", True), ("exclusiveMinimum", True), ("maxLength", True),
    ("minLength", True), ("pattern", True), ("maxItems", True), ("minItems", True), ("uniqueItems", True),
    ("multipleOf", True), ("enum", False), ("maxProperties", False), ("minProperties", False),
    ("required", True), ("items", True), ("allOf", False), ("oneOf", False), ("anyOf", False), ("not", False),
    ("properties", True), ("additionalProperties", False), ("patternProperties", False), ("dependencies", False),
    ("additionalItems", False), ("definitions", False), ("externalDocs", True), ("example", True),
    ("x-kubernetes-preserve-unknown-fields", True), ("x-kubernetes-embedded-resource", False),
    ("x-kubernetes-int-or-string", False), ("x-kubernetes-list-map-keys", False),
    ("x-kubernetes-list-type", False), ("x-kubernetes-map-type", False), ("x-kubernetes-validations", True),
]
_ALLOWED_AT_ROOT_TEXT = ("[Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength "
                         "MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties "
                         "ExternalDocs Example XPreserveUnknownFields XValidations]")


def validate_version_schema(schema: dict, status_enabled: bool, path: Path) -> list[FieldError]:
    """validateCustomResourceDefinitionValidation for ``spec.versions[i].schema`` (or the hoisted ``spec.validation``).

    ``path`` points at the CustomResourceValidation; errors name ``<path>.openAPIV3Schema...``.
    """
    errs: list[FieldError] = []
    root_path = path.child("openAPIV3Schema")
    if status_enabled:
        errs += _status_root_errors(schema, path)
    if schema.get("nullable"):
        errs.append(gofield.forbidden(path.child("openAPIV3Schema.nullable"), "nullable cannot be true at the root"))
    if not _unsupported_for_structural(schema):  # NewStructural fails: OpenAPI validation below reports why
        structural = validate_structural(schema, root_path)
        errs += structural if structural else validate_defaults(schema, root_path)
    errs += _openapi_schema(schema, root_path, _Ctx(), is_root=True)
    if not errs and custom_rules.has_rules(schema):
        errs += rule_cost.cost_errors(schema, root_path)
    return errs


def _unsupported_for_structural(s: dict) -> bool:
    """Whether schema.NewStructural rejects the schema (convert.go validateUnsupportedFields, newExtensions)."""
    if s.get("id") or s.get("$schema") or s.get("$ref") or s.get("patternProperties") or s.get("dependencies") \
            or "additionalItems" in s or s.get("definitions") or isinstance(s.get("items"), list) \
            or s.get("x-kubernetes-preserve-unknown-fields") is False:
        return True
    children = list((s.get("properties") or {}).values())
    children += [s[k] for k in ("items", "additionalProperties", "not") if isinstance(s.get(k), dict)]
    children += [sub for k in ("allOf", "anyOf", "oneOf") for sub in s.get(k) or []]
    return any(_unsupported_for_structural(c) for c in children)


def _is_zero(value) -> bool:
    return value in (None, False, "", 0, [], {})


def _status_root_errors(schema: dict, path: Path) -> list[FieldError]:
    for name, allowed in _ROOT_FIELDS:
        if _is_zero(schema.get(name)):
            continue
        if name == "type":
            if schema["type"] != "object":
                return [gofield.invalid(path.child("openAPIV3Schema.type"), schema["type"],
                                        'only "object" is allowed as the type at the root of the schema if the '
                                        'status subresource is enabled')]
            continue
        if not allowed:
            return [gofield.invalid(path.child("openAPIV3Schema"), gofield.GoText("apiextensions.JSONSchemaProps{...}"),
                                    f"only {_ALLOWED_AT_ROOT_TEXT} fields are allowed at the root of the schema if "
                                    "the status subresource is enabled")]
    return []


# --- ValidateCustomResourceDefinitionOpenAPISchema ---------------------
@dataclass(frozen=True)
class _Ctx:
    """specStandardValidatorV3's state."""

    allow_defaults: bool = True
    disallow_defaults_reason: str = ""
    inside_resource_meta: bool = False


def _forbid_defaults(ctx: _Ctx, reason: str) -> _Ctx:
    return replace(ctx, allow_defaults=False, disallow_defaults_reason=reason)


def _standard(s: dict, path: Path, ctx: _Ctx) -> list[FieldError]:
    """specStandardValidatorV3.validate."""
    errs = []
    t = s.get("type") or ""
    if t and t not in OPENAPI_V3_TYPES:
        errs.append(gofield.not_supported(path.child("type"), t, OPENAPI_V3_TYPES))
    if "default" in s and s["default"] is not None and not ctx.allow_defaults:
        detail = "must not be set" + (" " + ctx.disallow_defaults_reason if ctx.disallow_defaults_reason else "")
        errs.append(gofield.forbidden(path.child("default"), detail))
    if s.get("id"):
        errs.append(gofield.forbidden(path.child("id"), "id is not supported"))
    if "additionalItems" in s:
        errs.append(gofield.forbidden(path.child("additionalItems"), "additionalItems is not supported"))
    if s.get("patternProperties"):
        errs.append(gofield.forbidden(path.child("patternProperties"), "patternProperties is not supported"))
    if s.get("definitions"):
        errs.append(gofield.forbidden(path.child("definitions"), "definitions is not supported"))
    if "dependencies" in s:
        errs.append(gofield.forbidden(path.child("dependencies"), "dependencies is not supported"))
    if "$ref" in s:
        errs.append(gofield.forbidden(path.child("$ref"), "$ref is not supported"))
    if t == "null":
        errs.append(gofield.forbidden(path.child("type"), "type cannot be set to null, use nullable as an alternative"))
    if isinstance(s.get("items"), list):
        errs.append(gofield.forbidden(path.child("items"), "items must be a schema object and not an array"))
    if ctx.inside_resource_meta and s.get("x-kubernetes-embedded-resource"):
        errs.append(gofield.forbidden(path.child("x-kubernetes-embedded-resource"),
                                      "must not be used inside of resource meta"))
    return errs


def _openapi_schema(s: dict, path: Path, ctx: _Ctx, is_root: bool = False) -> list[FieldError]:
    errs = _standard(s, path, ctx)
    if s.get("uniqueItems"):
        errs.append(gofield.forbidden(path.child("uniqueItems"),
                                      "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"))
    properties = s.get("properties") or {}
    additional = s.get("additionalProperties")
    if additional is not None:
        if properties and (additional is False or isinstance(additional, dict)):
            errs.append(gofield.forbidden(path.child("additionalProperties"),
                                          "additionalProperties and properties are mutual exclusive"))
        if isinstance(additional, dict):
            sub = _forbid_defaults(ctx, "inside additionalProperties applying to object metadata") \
                if ctx.inside_resource_meta else ctx
            errs += _openapi_schema(additional, path.child("additionalProperties"), sub)
    for name in sorted(properties):
        sub = ctx
        if (is_root or s.get("x-kubernetes-embedded-resource")) and name in _META_FIELDS:
            sub = replace(sub, inside_resource_meta=True)
            if is_root:
                sub = _forbid_defaults(sub, f"in top-level {name}")
        errs += _openapi_schema(properties[name], path.child("properties").key(name), sub)
    if isinstance(s.get("not"), dict):
        errs += _openapi_schema(s["not"], path.child("not"), ctx)
    for junctor in ("allOf", "oneOf", "anyOf"):
        for i, sub_schema in enumerate(s.get(junctor) or []):
            errs += _openapi_schema(sub_schema, path.child(junctor).index(i), ctx)
    for name in sorted(s.get("definitions") or {}):
        errs += _openapi_schema(s["definitions"][name], path.child("definitions").key(name), ctx)
    items = s.get("items")
    if isinstance(items, dict):
        errs += _openapi_schema(items, path.child("items"), ctx)
    elif isinstance(items, list):
        for i, item in enumerate(items):
            errs += _openapi_schema(item, path.child("items").index(i), ctx)
    for name in sorted(s.get("dependencies") or {}):
        dependency = s["dependencies"][name]
        if isinstance(dependency, dict):
            errs += _openapi_schema(dependency, path.child("dependencies").key(name), ctx)
    errs += _extension_errors(s, path)
    errs += _map_list_keys_map_set(s, path)
    errs += _x_validations(s, path)
    return errs


def _extension_errors(s: dict, path: Path) -> list[FieldError]:
    errs = []
    t = s.get("type") or ""
    if s.get("x-kubernetes-preserve-unknown-fields") is False:
        errs.append(gofield.invalid(path.child("x-kubernetes-preserve-unknown-fields"), False,
                                    "must be true or undefined"))
    map_type = s.get("x-kubernetes-map-type")
    if map_type is not None and t != "object":
        errs.append(gofield.required(path.child("type"), "must be object if x-kubernetes-map-type is specified")
                    if not t else gofield.invalid(path.child("type"), t,
                                                  "must be object if x-kubernetes-map-type is specified"))
    if map_type is not None and map_type not in ("atomic", "granular"):
        errs.append(gofield.not_supported(path.child("x-kubernetes-map-type"), map_type, ["atomic", "granular"]))
    list_type = s.get("x-kubernetes-list-type")
    items = s.get("items") if isinstance(s.get("items"), dict) else None
    if list_type is not None and t != "array":
        errs.append(gofield.required(path.child("type"), "must be array if x-kubernetes-list-type is specified")
                    if not t else gofield.invalid(path.child("type"), t,
                                                  "must be array if x-kubernetes-list-type is specified"))
    elif list_type == "set" and items is not None:
        if items.get("type") == "array" and items.get("x-kubernetes-list-type") not in (None, "atomic"):
            errs.append(gofield.invalid(path.child("items").child("x-kubernetes-list-type"),
                                        items["x-kubernetes-list-type"],
                                        "must be atomic as item of a list with x-kubernetes-list-type=set"))
        if items.get("type") == "object" and items.get("x-kubernetes-map-type") != "atomic":
            errs.append(gofield.invalid(path.child("items").child("x-kubernetes-map-type"),
                                        items.get("x-kubernetes-list-type"),
                                        "must be atomic as item of a list with x-kubernetes-list-type=set"))
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        errs.append(gofield.not_supported(path.child("x-kubernetes-list-type"), list_type, ["atomic", "set", "map"]))
    map_keys = s.get("x-kubernetes-list-map-keys") or []
    if map_keys:
        if list_type is None:
            errs.append(gofield.required(path.child("x-kubernetes-list-type"),
                                         "must be map if x-kubernetes-list-map-keys is non-empty"))
        elif list_type != "map":
            errs.append(gofield.invalid(path.child("x-kubernetes-list-type"), list_type,
                                        "must be map if x-kubernetes-list-map-keys is non-empty"))
    if list_type == "map":
        if not map_keys:
            errs.append(gofield.required(path.child("x-kubernetes-list-map-keys"),
                                         "must not be empty if x-kubernetes-list-type is map"))
        if "items" not in s:
            errs.append(gofield.required(path.child("items"), "must have a schema if x-kubernetes-list-type is map"))
        if isinstance(s.get("items"), list):
            errs.append(gofield.invalid(path.child("items"), s["items"],
                                        "must only have a single schema if x-kubernetes-list-type is map"))
        if items is not None and items.get("type") != "object":
            errs.append(gofield.invalid(path.child("items").child("type"), items.get("type", ""),
                                        "must be object if parent array's x-kubernetes-list-type is map"))
        if items is not None and items.get("type") == "object":
            seen = set()
            for key in map_keys:
                key_schema = (items.get("properties") or {}).get(key)
                if key_schema is None:
                    errs.append(gofield.invalid(path.child("x-kubernetes-list-map-keys"), map_keys,
                                                "entries must all be names of item properties"))
                elif key_schema.get("type") in ("array", "object"):
                    errs.append(gofield.invalid(path.child("items").child("properties").key(key).child("type"),
                                                items.get("type"),
                                                "must be a scalar type if parent array's x-kubernetes-list-type is map"))
                if key in seen:
                    errs.append(gofield.invalid(path.child("x-kubernetes-list-map-keys"), map_keys,
                                                "must not contain duplicate entries"))
                seen.add(key)
    return errs


def _map_list_keys_map_set(s: dict, path: Path) -> list[FieldError]:
    """validateMapListKeysMapSet."""
    items = s.get("items")
    list_type = s.get("x-kubernetes-list-type")
    if not isinstance(items, dict) or list_type not in ("set", "map"):
        return []
    errs = []
    if items.get("nullable"):
        errs.append(gofield.forbidden(path.child("items").child("nullable"),
                                      "cannot be nullable when x-kubernetes-list-type is " + list_type))
    if list_type == "map":
        required = set(items.get("required") or [])
        for key in s.get("x-kubernetes-list-map-keys") or []:
            key_schema = (items.get("properties") or {}).get(key)
            if key_schema is None:
                continue
            key_path = path.child("items").child("properties").key(key)
            if key not in required and key_schema.get("default") is None:
                errs.append(gofield.required(key_path.child("default"), "this property is in x-kubernetes-list-map-keys,"
                                                                        " so it must have a default or be a required "
                                                                        "property"))
            if key_schema.get("nullable"):
                errs.append(gofield.forbidden(key_path.child("nullable"),
                                              "this property is in x-kubernetes-list-map-keys, so it cannot be nullable"))
    return errs


_NEWLINES = re.compile(r"[\n\r]+")


def _x_validations(s: dict, path: Path) -> list[FieldError]:
    """The shape checks of x-kubernetes-validations rules, then their compilation."""
    errs = []
    for i, rule in enumerate(s.get("x-kubernetes-validations") or []):
        rule_path = path.child("x-kubernetes-validations").index(i)
        text = (rule.get("rule") or "").strip()
        message = rule.get("message") or ""
        if not text:
            errs.append(gofield.required(rule_path.child("rule"), "rule is not specified"))
        elif message and not message.strip():
            errs.append(gofield.invalid(rule_path.child("message"), message, "message must be non-empty if specified"))
        elif _NEWLINES.search(message.strip()):
            errs.append(gofield.invalid(rule_path.child("message"), message, "message must not contain line breaks"))
        elif _NEWLINES.search(text) and not message.strip():
            errs.append(gofield.required(rule_path.child("message"),
                                         "message must be specified if rule contains line breaks"))
        expression = rule.get("messageExpression") or ""
        if expression and not expression.strip():
            errs.append(gofield.required(rule_path.child("messageExpression"),
                                         "messageExpression must be non-empty if specified"))
        if rule.get("reason") is not None and rule["reason"] not in _REASONS:
            errs.append(gofield.not_supported(rule_path.child("reason"), rule["reason"], _REASONS))
        field_path = rule.get("fieldPath") or ""
        if field_path and not field_path.strip():
            errs.append(gofield.invalid(rule_path.child("fieldPath"), field_path,
                                        "fieldPath must be non-empty if specified"))
        if _NEWLINES.search(field_path):
            errs.append(gofield.invalid(rule_path.child("fieldPath"), field_path,
                                        "fieldPath must not contain line breaks"))
    return errs + custom_rules.compile_errors(s.get("x-kubernetes-validations") or [], path)


# --- ValidateStructural ----------------------------------------------
_ROOT, _ITEM, _FIELD = "root", "item", "field"
_INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]
_JUNCTORS = ("anyOf", "allOf", "oneOf")


def validate_structural(s: dict, path: Path) -> list[FieldError]:
    """schema.ValidateStructural: invariants and completeness, sorted by message as upstream does."""
    errs = _invariants(s, _ROOT, path) + _completeness(s, s, path, path)
    return sorted(errs, key=str)


def _invariants(s: dict, level: str, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    t = s.get("type") or ""
    items = s.get("items") if isinstance(s.get("items"), dict) else None
    if t == "array" and items is None:
        errs.append(gofield.required(path.child("items"), "must be specified"))
    if items is not None:
        errs += _invariants(items, _ITEM, path.child("items"))
    for name, prop in (s.get("properties") or {}).items():
        errs += _invariants(prop, _FIELD, path.child("properties").key(name))
    if "additionalProperties" in s:
        if level == _ROOT:
            errs.append(gofield.forbidden(path.child("additionalProperties"), "must not be used at the root"))
        if isinstance(s["additionalProperties"], dict):
            errs += _invariants(s["additionalProperties"], _FIELD, path.child("additionalProperties"))
    int_or_string = bool(s.get("x-kubernetes-int-or-string"))
    preserve = bool(s.get("x-kubernetes-preserve-unknown-fields"))
    embedded = bool(s.get("x-kubernetes-embedded-resource"))
    if int_or_string and preserve:
        errs.append(gofield.invalid(path.child("x-kubernetes-preserve-unknown-fields"), True,
                                    "must be false if x-kubernetes-int-or-string is true"))
    if int_or_string and embedded:
        errs.append(gofield.invalid(path.child("x-kubernetes-embedded-resource"), True,
                                    "must be false if x-kubernetes-int-or-string is true"))
    any_of = s.get("anyOf") or []
    all_of = s.get("allOf") or []
    skip_any_of = any_of == _INT_OR_STRING_ANY_OF
    skip_first_all_of_any_of = bool(all_of) and (all_of[0].get("anyOf") or []) == _INT_OR_STRING_ANY_OF
    errs += _value_validation(s, skip_any_of, skip_first_all_of_any_of, path)
    check_metadata = level == _ROOT or embedded
    if embedded and t != "object":
        errs.append(gofield.required(path.child("type"), "must be object if x-kubernetes-embedded-resource is true")
                    if not t else gofield.invalid(path.child("type"), t,
                                                  "must be object if x-kubernetes-embedded-resource is true"))
    elif not t and not int_or_string and not preserve:
        detail = {_ROOT: "must not be empty at the root", _ITEM: "must not be empty for specified array items",
                  _FIELD: "must not be empty for specified object fields"}[level]
        errs.append(gofield.required(path.child("type"), detail))
    if embedded and "additionalProperties" in s:
        errs.append(gofield.forbidden(path.child("additionalProperties"),
                                      "must not be used if x-kubernetes-embedded-resource is set"))
    if level == _ROOT and t and t != "object":
        errs.append(gofield.invalid(path.child("type"), t, "must be object at the root"))
    properties = s.get("properties") or {}
    for name in ("kind", "apiVersion"):
        if name in properties and check_metadata and properties[name].get("type", "") != "string":
            errs.append(gofield.invalid(path.child("properties").key(name).child("type"),
                                        properties[name].get("type", ""), "must be string"))
    if "metadata" in properties:
        errs += _metadata_invariants(properties["metadata"], check_metadata, level,
                                     path.child("properties").key("metadata"))
    if embedded and not preserve and not properties:
        errs.append(gofield.required(path.child("properties"), "must not be empty if x-kubernetes-embedded-resource is"
                                                               " true without x-kubernetes-preserve-unknown-fields"))
    return errs


def _metadata_invariants(s: dict, check_metadata: bool, level: str, path: Path) -> list[FieldError]:
    errs = []
    if check_metadata and s.get("type", "") != "object":
        errs.append(gofield.invalid(path.child("type"), s.get("type", ""), "must be object"))
    if level == _ROOT:
        rest = {k: v for k, v in s.items() if k not in ("type", "default")}
        names = set((rest.get("properties") or {}).keys())
        if names and names <= {"name", "generateName"}:
            rest.pop("properties")
        if any(not _is_zero(v) for v in rest.values()):
            errs.append(gofield.forbidden(path, "must not specify anything other than name and generateName, but "
                                                "metadata is implicitly specified"))
    return errs


def _value_validation(s: dict, skip_any_of: bool, skip_first_all_of_any_of: bool, path: Path) -> list[FieldError]:
    """validateValueValidation: nested junctors must not carry structural parts."""
    errs: list[FieldError] = []
    if not skip_any_of:
        for i, sub in enumerate(s.get("anyOf") or []):
            errs += _nested(sub, False, path.child("anyOf").index(i))
    for i, sub in enumerate(s.get("allOf") or []):
        errs += _nested(sub, skip_first_all_of_any_of and i == 0, path.child("allOf").index(i))
    for i, sub in enumerate(s.get("oneOf") or []):
        errs += _nested(sub, False, path.child("oneOf").index(i))
    if isinstance(s.get("not"), dict):
        errs += _nested(s["not"], False, path.child("not"))
    pattern = s.get("pattern")
    if pattern:
        try:
            structural_openapi.go_regexp(pattern)
        except re.error as err:
            errs.append(gofield.invalid(path.child("pattern"), pattern,
                                        f"must be a valid regular expression, but isn't: {err}"))
    return errs


_NESTED_FORBIDDEN = [
    ("type", "must be empty to be structural"),
    ("additionalProperties", "must be undefined to be structural"),
    ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "must be undefined to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
]


def _nested(v: dict, skip_any_of: bool, path: Path) -> list[FieldError]:
    """validateNestedValueValidation."""
    errs = _value_validation(v, skip_any_of, False, path)
    if isinstance(v.get("items"), dict):
        errs += _nested(v["items"], False, path.child("items"))
    for name, prop in (v.get("properties") or {}).items():
        errs += _nested(prop, False, path.child("properties").key(name))
    for name, detail in _NESTED_FORBIDDEN:
        if name == "default" and v.get("default") is None:
            continue
        if not _is_zero(v.get(name)):
            errs.append(gofield.forbidden(path.child(name), detail))
    if "metadata" in (v.get("properties") or {}):
        errs.append(gofield.forbidden(path.child("properties").key("metadata"),
                                      "must not be specified in a nested context"))
    return errs


def _completeness(v: dict, s: dict | None, s_path: Path, v_path: Path) -> list[FieldError]:
    """validateValueValidationCompleteness: fields named in junctors must exist in the structural part."""
    errs: list[FieldError] = []
    if isinstance(v.get("not"), dict):
        errs += _nested_completeness(v["not"], s, s_path, v_path.child("not"))
    for junctor in ("allOf", "anyOf", "oneOf"):
        for i, sub in enumerate(v.get(junctor) or []):
            errs += _nested_completeness(sub, s, s_path, v_path.child(junctor).index(i))
    return errs


def _nested_completeness(v: dict, s: dict | None, s_path: Path, v_path: Path) -> list[FieldError]:
    if s is None:
        return [gofield.required(s_path, f"because it is defined in {v_path}")]
    errs = _completeness(v, s, s_path, v_path)
    if isinstance(v.get("items"), dict):
        items = s.get("items") if isinstance(s.get("items"), dict) else None
        errs += _nested_completeness(v["items"], items, s_path.child("items"), v_path.child("items"))
    properties = s.get("properties") or {}
    for name, sub in (v.get("properties") or {}).items():
        if name not in properties:
            errs.append(gofield.required(s_path.child("properties").key(name),
                                         f"because it is defined in {v_path.child('properties').key(name)}"))
        else:
            errs += _nested_completeness(sub, properties[name], s_path.child("properties").key(name),
                                         v_path.child("properties").key(name))
    return errs


# --- ValidateDefaults --------------------------------------------------
def validate_defaults(s: dict, path: Path) -> list[FieldError]:
    """defaulting.ValidateDefaults: every default validates against its schema and holds no unknown fields.

    The root counts as an embedded resource. Defaults inside TypeMeta/ObjectMeta are forbidden elsewhere and
    not re-checked here.
    """
    return _defaults({**s, "x-kubernetes-embedded-resource": True}, path, inside_meta=False)


def _defaults(s: dict, path: Path, inside_meta: bool) -> list[FieldError]:
    if s.get("x-kubernetes-embedded-resource"):
        inside_meta = False
    errs: list[FieldError] = []
    if s.get("default") is not None and not inside_meta:
        value = s["default"]
        pruned = copy.deepcopy(value)
        prune(pruned, s, "", [])
        if pruned != value:
            errs.append(gofield.invalid(path.child("default"), value, "must not have unknown fields"))
        errs += structural_openapi.validate(s, value, path.child("default"))
    if isinstance(s.get("items"), dict):
        errs += _defaults(s["items"], path.child("items"), inside_meta)
    for name in sorted(s.get("properties") or {}):
        sub_meta = inside_meta or (bool(s.get("x-kubernetes-embedded-resource")) and name in _META_FIELDS)
        errs += _defaults(s["properties"][name], path.child("properties").key(name), sub_meta)
    return errs
