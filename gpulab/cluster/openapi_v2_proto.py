"""``/openapi/v2`` as protobuf: the swagger 2.0 dict encoded as gnostic's ``openapi.v2.Document``.

kubectl asks for ``/openapi/v2`` with ``Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf``
(client-go discovery ``OpenAPISchema``) and unmarshals the body as that message whatever the Content-Type, e.g.
for ``kubectl explain --output=plaintext-openapiv2`` and when ``apply``'s validation falls back from v3 to v2.
kube-apiserver answers with ``ToProtoBinary(json)`` (k8s.io/kube-openapi/pkg/handler/handler.go):
``openapi_v2.ParseDocument`` (google/gnostic-models openapiv2/OpenAPIv2.go) then ``proto.Marshal``.

Why hand-written: the venv has no protobuf runtime, and one would still need code generated from
OpenAPIv2.proto plus gnostic's JSON-to-message rules. The wire format needed here is small (varints,
length-delimited fields, little-endian doubles), so this module carries a writer and a table of the
message shapes, derived from google/gnostic-models openapiv2/OpenAPIv2.proto, and applies ParseDocument's rules:

- fields are written in field-number order (protobuf-go's marshal order); proto3 zero values (``""``, ``false``,
  ``0``, empty lists) are left out, while a present message, a oneof member and a repeated element always count;
- objects that gnostic keeps as ordered maps (definitions, properties, paths, responses, ...) become repeated
  ``Named*`` messages (``name = 1``, ``value = 2``) in the dict's key order;
- ``default``, ``example``, ``enum`` entries and every ``x-`` vendor extension become ``Any`` messages whose ``yaml``
  field (2) holds the value written by gopkg.in/yaml.v3 ``Marshal`` after gnostic's ``clearStyle`` (block style,
  4-space indent, no line wrapping, ``"..."`` only for strings that would read back as another type);
- oneofs pick their member as gnostic's parsers do (``$ref`` -> ``JsonReference``, ``in: body`` ->
  ``BodyParameter``, the other ``in`` values -> their ``*ParameterSubSchema``, ``type: file`` -> ``FileSchema``,
  boolean ``additionalProperties`` -> ``boolean``, security schemes by ``type``/``flow``).

Where gnostic rejects a document (unknown keys, wrong value types) kube-apiserver serves no protobuf at all;
this encoder skips such keys instead.
"""
from __future__ import annotations

import functools
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass

import orjson
import yaml

from .protowire import FIXED64, VARINT, delimited, tag, varint

# Content negotiation (kube-openapi pkg/handler RegisterOpenAPIVersionedService).
PROTOBUF_MEDIA_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_JSON = "application/json"
_ACCEPTED = (  # (type, subtype, Content-Type answered), in the handler's order
    ("application", "json", _JSON),
    ("application", "com.github.proto-openapi.spec.v2@v1.0+protobuf", PROTOBUF_MEDIA_TYPE),
    ("application", "com.github.proto-openapi.spec.v2.v1.0+protobuf", PROTOBUF_MEDIA_TYPE),
)

# --- message shapes ---------------------------------------------------------------------------------------------
# Each layout lists a message's fields in field-number order starting at 1, one token per field:
#   ``key``            string field read from the JSON key ``key``
#   ``key:T``          T is bool | double | int64 | strings | Any | a message name; ``[T]`` is a repeated field
#   ``x-``             the vendor extensions: every ``x-`` key as a repeated NamedAny
#   ``/:T`` ``*:T``    the remaining keys (``/``: those starting with ``/``) as repeated Named<T>
#   ``=T``             the whole JSON value (TypeItem, ItemsItem, StringArray: a scalar counts as a list of one)
# Oneof messages are in _ONEOF instead: JSON value -> (field number, member type).
_VALIDATIONS = ("format items:PrimitivesItems collectionFormat default:Any maximum:double exclusiveMaximum:bool "
                "minimum:double exclusiveMinimum:bool maxLength:int64 minLength:int64 pattern maxItems:int64 "
                "minItems:int64 uniqueItems:bool enum:[Any] multipleOf:double")
_HEADER_OR_PATH_PARAMETER = f"required:bool in description name type {_VALIDATIONS} x-"
_QUERY_OR_FORM_PARAMETER = f"required:bool in description name allowEmptyValue:bool type {_VALIDATIONS} x-"
_OAUTH2 = "type flow scopes:Oauth2Scopes"
_LAYOUTS = {
    "Document": "swagger info:Info host basePath schemes:strings consumes:strings produces:strings paths:Paths "
                "definitions:Definitions parameters:ParameterDefinitions responses:ResponseDefinitions "
                "security:[SecurityRequirement] securityDefinitions:SecurityDefinitions tags:[Tag] "
                "externalDocs:ExternalDocs x-",
    "Info": "title version description termsOfService contact:Contact license:License x-",
    "Contact": "name url email x-",
    "License": "name url x-",
    "ExternalDocs": "description url x-",
    "Tag": "name description externalDocs:ExternalDocs x-",
    "Xml": "name namespace prefix attribute:bool wrapped:bool x-",
    "Paths": "x- /:PathItem",
    "PathItem": "$ref get:Operation put:Operation post:Operation delete:Operation options:Operation "
                "head:Operation patch:Operation parameters:[ParametersItem] x-",
    "Operation": "tags:strings summary description externalDocs:ExternalDocs operationId produces:strings "
                 "consumes:strings parameters:[ParametersItem] responses:Responses schemes:strings "
                 "deprecated:bool security:[SecurityRequirement] x-",
    "JsonReference": "$ref description",
    "BodyParameter": "description name in required:bool schema:Schema x-",
    "HeaderParameterSubSchema": _HEADER_OR_PATH_PARAMETER,
    "PathParameterSubSchema": _HEADER_OR_PATH_PARAMETER,
    "QueryParameterSubSchema": _QUERY_OR_FORM_PARAMETER,
    "FormDataParameterSubSchema": _QUERY_OR_FORM_PARAMETER,
    "PrimitivesItems": f"type {_VALIDATIONS} x-",
    "Header": f"type {_VALIDATIONS} description x-",
    "Responses": "*:ResponseValue x-",
    "Response": "description schema:SchemaItem headers:Headers examples:Examples x-",
    "FileSchema": "format title description default:Any required:strings type readOnly:bool "
                  "externalDocs:ExternalDocs example:Any x-",
    "Schema": "$ref format title description default:Any multipleOf:double maximum:double exclusiveMaximum:bool "
              "minimum:double exclusiveMinimum:bool maxLength:int64 minLength:int64 pattern maxItems:int64 "
              "minItems:int64 uniqueItems:bool maxProperties:int64 minProperties:int64 required:strings enum:[Any] "
              "additionalProperties:AdditionalPropertiesItem type:TypeItem items:ItemsItem allOf:[Schema] "
              "properties:Properties discriminator readOnly:bool xml:Xml externalDocs:ExternalDocs example:Any x-",
    "TypeItem": "=strings",
    "ItemsItem": "=[Schema]",
    "StringArray": "=strings",
    "Definitions": "*:Schema",
    "Properties": "*:Schema",
    "ParameterDefinitions": "*:Parameter",
    "ResponseDefinitions": "*:Response",
    "Headers": "*:Header",
    "Examples": "*:Any",
    "SecurityRequirement": "*:StringArray",
    "SecurityDefinitions": "*:SecurityDefinitionsItem",
    "Oauth2Scopes": "*:string",
    "BasicAuthenticationSecurity": "type description x-",
    "ApiKeySecurity": "type name in description x-",
    "Oauth2ImplicitSecurity": f"{_OAUTH2} authorizationUrl description x-",
    "Oauth2PasswordSecurity": f"{_OAUTH2} tokenUrl description x-",
    "Oauth2ApplicationSecurity": f"{_OAUTH2} tokenUrl description x-",
    "Oauth2AccessCodeSecurity": f"{_OAUTH2} authorizationUrl tokenUrl description x-",
}
_NON_BODY = {"header": (1, "HeaderParameterSubSchema"), "formData": (2, "FormDataParameterSubSchema"),
             "query": (3, "QueryParameterSubSchema"), "path": (4, "PathParameterSubSchema")}
_OAUTH2_FLOWS = {"implicit": (3, "Oauth2ImplicitSecurity"), "password": (4, "Oauth2PasswordSecurity"),
                 "application": (5, "Oauth2ApplicationSecurity"), "accessCode": (6, "Oauth2AccessCodeSecurity")}
_ONEOF: dict[str, Callable[[dict], tuple[int, str] | None]] = {
    "ParametersItem": lambda v: (2, "JsonReference") if "$ref" in v else (1, "Parameter"),
    "Parameter": lambda v: (1, "BodyParameter") if v.get("in") == "body" else (2, "NonBodyParameter"),
    "NonBodyParameter": lambda v: _NON_BODY.get(v.get("in")),
    "ResponseValue": lambda v: (2, "JsonReference") if "$ref" in v else (1, "Response"),
    "SchemaItem": lambda v: (2, "FileSchema") if v.get("type") == "file" else (1, "Schema"),
    "AdditionalPropertiesItem": lambda v: (1, "Schema"),  # (2, "bool") for true/false: see _message
    "SecurityDefinitionsItem": lambda v: {"basic": (1, "BasicAuthenticationSecurity"),
                                          "apiKey": (2, "ApiKeySecurity")}.get(v.get("type"))
                                         or _OAUTH2_FLOWS.get(v.get("flow")),
}


@dataclass(frozen=True)
class _Field:
    number: int
    kind: str       # "string", "bool", "double", "int64", "Any" or a message name
    repeated: bool


@dataclass(frozen=True)
class _Layout:
    keyed: dict[str, _Field]
    vendor: _Field | None            # x- keys
    paths: _Field | None             # keys starting with /
    rest: _Field | None              # every other key
    whole: _Field | None             # the JSON value itself


def _field(number: int, kind: str) -> _Field:
    if kind == "strings":
        return _Field(number, "string", True)
    if kind.startswith("["):
        return _Field(number, kind[1:-1], True)
    return _Field(number, kind, False)


def _compile(layout: str) -> _Layout:
    keyed, vendor, paths, rest, whole = {}, None, None, None, None
    for number, token in enumerate(layout.split(), start=1):
        key, _, kind = token.partition(":")
        if token == "x-":
            vendor = _Field(number, "Any", True)
        elif key == "/":
            paths = _Field(number, kind, True)
        elif key == "*":
            rest = _Field(number, kind, True)
        elif key.startswith("="):
            whole = _field(number, key[1:])
        else:
            keyed[key] = _field(number, kind or "string")
    return _Layout(keyed, vendor, paths, rest, whole)


_COMPILED = {name: _compile(layout) for name, layout in _LAYOUTS.items()}

# --- values -----------------------------------------------------------------------------------------------------

def _scalar(number: int, kind: str, value, always: bool) -> bytes:
    """One string/bool/double/int64 field; ``always``: a repeated element or oneof member (zero values count)."""
    if kind == "string":
        if isinstance(value, str) and (value or always):
            return delimited(number, value.encode())
    elif kind == "bool":
        if isinstance(value, bool) and (value or always):
            return tag(number, VARINT) + (b"\x01" if value else b"\x00")
    elif kind == "double":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            packed = struct.pack("<d", value)
            if always or packed != b"\x00" * 8:
                return tag(number, FIXED64) + packed
    elif kind == "int64":
        if isinstance(value, int) and not isinstance(value, bool) and (value or always):
            return tag(number, VARINT) + varint(value & 0xFFFFFFFFFFFFFFFF)
    return b""


def _value(number: int, kind: str, value, always: bool = False) -> bytes:
    if kind == "Any":
        return delimited(number, _any(orjson.dumps(value)))
    if kind in _COMPILED or kind in _ONEOF:
        body = _message(kind, value)
        return b"" if body is None else delimited(number, body)
    return _scalar(number, kind, value, always)


def _repeated_or_single(f: _Field, value) -> bytes:
    if not f.repeated:
        return _value(f.number, f.kind, value)
    items = value if isinstance(value, list) else [value]
    return b"".join(_value(f.number, f.kind, item, always=True) for item in items)


def _named(f: _Field, name: str, value) -> bytes:
    """A Named<T> entry: name = 1, value = 2."""
    return delimited(f.number, _scalar(1, "string", name, False) + _value(2, f.kind, value))


def _message(kind: str, value) -> bytes | None:
    """The message's bytes; None when the JSON value cannot be this message (the field is then left out)."""
    choose = _ONEOF.get(kind)
    if choose is not None:
        if kind == "AdditionalPropertiesItem" and isinstance(value, bool):
            member = (2, "bool")
        elif isinstance(value, dict):
            member = choose(value)
        else:
            return None
        if member is None:
            return None
        number, member_kind = member
        return _value(number, member_kind, value, always=True) or None
    layout = _COMPILED[kind]
    if layout.whole is not None:
        return _repeated_or_single(layout.whole, value)
    if not isinstance(value, dict):
        return None
    parts: list[tuple[int, bytes]] = []
    for key, item in value.items():
        f = layout.keyed.get(key)
        if f is not None:
            parts.append((f.number, _repeated_or_single(f, item)))
        elif layout.vendor is not None and key.startswith("x-"):
            parts.append((layout.vendor.number, _named(layout.vendor, key, item)))
        elif layout.paths is not None and key.startswith("/"):
            parts.append((layout.paths.number, _named(layout.paths, key, item)))
        elif layout.rest is not None:
            parts.append((layout.rest.number, _named(layout.rest, key, item)))
    parts.sort(key=lambda part: part[0])  # stable: map entries keep the dict's order
    return b"".join(body for _, body in parts)


# --- Any: the value as gnostic's compiler.Marshal writes it (gopkg.in/yaml.v3) -----------------------------------

class _YamlV3StyleDumper(yaml.SafeDumper):
    """PyYAML's emitter is libyaml's, as yaml.v3's is; these overrides add yaml.v3's choices on top."""

    yaml_implicit_resolvers: dict = {}  # yaml.v3's resolve table instead of YAML 1.1's (below)

    def increase_indent(self, flow: bool = False, indentless: bool = False):
        return super().increase_indent(flow, False)  # yaml.v3 indents a sequence inside a mapping


# gopkg.in/yaml.v3 resolve.go: what a plain scalar reads back as (YAML 1.2 booleans; Go ParseInt base-0 integers;
# yamlStyleFloat; the accepted timestamp layouts; the merge key).
_DIGITS = list("0123456789")
for _kind, _pattern, _first in (
    ("bool", r"true|True|TRUE|false|False|FALSE", list("tTfF")),
    ("null", r"~|null|Null|NULL|", ["~", "n", "N", ""]),
    ("int", r"[-+]?(?:0[bB][01_]+|0[oO]?[0-7_]+|0[xX][0-9a-fA-F_]+|[0-9][0-9_]*)", ["-", "+", *_DIGITS]),
    ("float", r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)",
     ["-", "+", ".", *_DIGITS]),
    ("timestamp", r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
                  r"(?:[Tt][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:\.[0-9]*)?(?:Z|[-+][0-9]{1,2}:[0-9]{2})"
                  r"| [0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(?:\.[0-9]*)?)?", _DIGITS),
    ("merge", r"<<", ["<"]),
):
    _YamlV3StyleDumper.add_implicit_resolver(f"tag:yaml.org,2002:{_kind}", re.compile(f"^(?:{_pattern})$"), _first)


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    """yaml.v3 encoder.node: multi-line -> literal; a string that would read back as another type -> "..."."""
    if "\n" in value:
        style = "|"
    elif dumper.resolve(yaml.ScalarNode, value, (True, False)) != "tag:yaml.org,2002:str":
        style = '"'
    else:
        style = None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_YamlV3StyleDumper.add_representer(str, _represent_str)


@functools.lru_cache(maxsize=4096)
def _any(json_value: bytes) -> bytes:
    """The Any message (``yaml = 2``) for one JSON value; cached, since the same values recur all over."""
    text = yaml.dump(orjson.loads(json_value), Dumper=_YamlV3StyleDumper, indent=4, width=float("inf"),
                     allow_unicode=True, default_flow_style=False, sort_keys=False)
    text = text.removesuffix("...\n")  # yaml.v3 never ends an open-ended document with a marker
    return delimited(2, text.encode())


# --- public API -------------------------------------------------------------------------------------------------

def encode_document(swagger: dict) -> bytes:
    """The swagger 2.0 document as ``proto.Marshal(openapi_v2.ParseDocument(json))`` bytes."""
    return _message("Document", swagger) or b""


def negotiate(accept: str | None) -> str | None:
    """The Content-Type to answer ``/openapi/v2`` with for this Accept header; None means 406.

    kube-openapi's handler walks goautoneg.ParseAccept's clauses (sorted by its ``Less`` with Go's insertion
    sort, which sort.Sort uses for up to 12 elements) and serves the first of JSON, the deprecated
    ``...spec.v2@v1.0+protobuf`` and ``...spec.v2.v1.0+protobuf`` that the clause matches (``*`` matches any).
    """
    clauses = _parse_accept(accept or "*/*")
    for media_type, subtype, _ in clauses:
        for accepted_type, accepted_subtype, answer in _ACCEPTED:
            if media_type in (accepted_type, "*") and subtype in (accepted_subtype, "*"):
                return answer
    return None


def _parse_accept(header: str) -> list[tuple[str, str, float]]:
    """goautoneg.ParseAccept: (type, subtype, q) clauses, best first."""
    clauses = []
    for part in header.split(","):
        media_range, *params = part.strip(" ").split(";")
        pieces = media_range.split("/")
        media_type = pieces[0].strip(" ")
        if len(pieces) == 1 and media_type == "*":
            subtype = "*"
        elif len(pieces) == 2:
            subtype = pieces[1].strip(" ")
        else:
            continue
        q = 1.0
        for param in params:
            token, eq, raw = param.partition("=")
            if eq and token.strip(" ") == "q":
                q = _parse_float(raw)
        clauses.append((media_type, subtype, q))
    for i in range(1, len(clauses)):  # Go's insertionSort with accept_slice.Less
        j = i
        while j > 0 and _accept_less(clauses[j], clauses[j - 1]):
            clauses[j], clauses[j - 1] = clauses[j - 1], clauses[j]
            j -= 1
    return clauses


def _accept_less(a: tuple[str, str, float], b: tuple[str, str, float]) -> bool:
    return a[2] > b[2] or (a[0] != "*" and b[0] == "*") or (a[1] != "*" and b[1] == "*")


def _parse_float(raw: str) -> float:
    """strconv.ParseFloat: no surrounding spaces allowed; an error reads as 0."""
    if raw != raw.strip():
        return 0.0
    try:
        return float(raw)
    except ValueError:
        return 0.0
