"""Server-side field validation (``fieldValidation=Strict|Warn|Ignore``): unknown and duplicate fields.

kubectl sends ``fieldValidation=Strict`` with every ``create``/``apply`` by
default (``--validate=strict``), so this decides whether a typo in a learner's
manifest is an error. What kube-apiserver reports:

* built-in kinds: the strict JSON decoder's errors in document order
  (see :mod:`structural_decode`; k8s.io/apimachinery/pkg/runtime/serializer/json/json.go),
* custom resources: duplicates from decoding, then the fields pruning drops
  (customresource_handler.go schemaCoercingDecoder, see :func:`custom.unknown_field_paths`).

On create and update a strict failure is a 400 whose message is wrapped by
transformDecodeError (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/rest.go):
``Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.foo"``.
A JSON or merge patch fails with a 422 ``patch: Invalid value`` instead (handlers/patch.go).
With ``Warn`` every message becomes a ``Warning`` header (addStrictDecodingWarnings).
"""
from __future__ import annotations

from typing import Any

from .. import schema
from ..errors import ApiError
from ..gofmt import go_quote
from ..registry import ResourceType
from . import custom
from . import structural_decode as decode
from . import gofield


def strict_messages(rt: ResourceType, body: bytes | str | dict) -> list[str]:
    """Every strict decoding message for a request body, duplicates included when ``body`` is raw JSON.

    These are the texts of both the Strict error and the Warn warnings:
    ``unknown field "spec.foo"``, ``duplicate field "spec.replicas"``.
    """
    value: Any = decode.parse_pairs(body) if isinstance(body, (bytes, str)) else body
    if rt.crd is not None:
        messages = decode.strict_messages(None, value)
        plain = value if isinstance(body, dict) else _plain(value)
        return messages + [unknown_field_message(p) for p in custom.unknown_field_paths(rt, plain)]
    definition = schema.definition_name(rt.group, rt.version, rt.kind)
    return decode.strict_messages(definition, value) if definition else []


def _plain(value: Any) -> Any:
    """A parsed body with duplicate keys resolved as Go's map decoding does: the last value wins."""
    if isinstance(value, decode.Pairs):
        return {k: _plain(v) for k, v in value}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def unknown_field_message(path: str) -> str:
    """One strict error / warning text: ``unknown field "spec.foo"``."""
    return decode.message(decode.UNKNOWN, path)


def strict_decoding_error(messages: list[str], *, kind: str = "", version: str = "") -> ApiError:
    """400 BadRequest ``<Kind> in version "<v>" cannot be handled as a <Kind>: strict decoding error: ...``."""
    text = "strict decoding error: " + ", ".join(messages)
    if kind:
        text = f"{kind} in version {go_quote(version)} cannot be handled as a {kind}: {text}"
    return ApiError(400, "BadRequest", text)


def strict_patch_error(messages: list[str], patched: str) -> ApiError:
    """422 for a JSON/merge patch whose result has unknown fields: errors.NewInvalid(schema.GroupKind{}, "", ...).

    ``patched`` is the patched object's JSON (JSON and merge patches) or the ``%+v`` of the patch
    (``gofmt.go_v``: strategic merge patch, whose messages upstream sorts first).
    """
    err = gofield.invalid("patch", patched, "strict decoding error: " + ", ".join(messages))
    return ApiError(422, "Invalid", f' "" is invalid: {err}',
                    {"causes": [{"reason": err.type, "message": err.error_body(), "field": err.field}]})
