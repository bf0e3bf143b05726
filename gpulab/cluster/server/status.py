"""Status bodies as kube-apiserver writes them.

The JSON serializer (k8s.io/apimachinery/pkg/runtime/serializer/json/json.go ``doEncode``) writes with
encoding/json's Encoder: struct fields in declaration order (metav1.Status: kind, apiVersion, metadata, status,
message, reason, details, code), ``omitempty`` fields left out when empty, ``<``, ``>``, ``&``, U+2028 and
U+2029 escaped, and a newline after the value.
"""
from __future__ import annotations

import orjson

_STATUS_FIELDS = ("kind", "apiVersion", "metadata", "status", "message", "reason", "details", "code")
_DETAILS_FIELDS = ("name", "group", "kind", "uid", "causes", "retryAfterSeconds")
_CAUSE_FIELDS = ("reason", "message", "field")
_GO_ESCAPES = ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"),
               ("\u2028".encode(), b"\\u2028"), ("\u2029".encode(), b"\\u2029"))


def encode(status: dict) -> bytes:
    """A metav1.Status as kube-apiserver writes it: fields in the Go struct's order, empty optional fields
    left out (omitempty), HTML characters escaped and a trailing newline (encoding/json's Encoder)."""
    ordered = _ordered(status, _STATUS_FIELDS, keep=("metadata",))
    details = ordered.get("details")
    if isinstance(details, dict):
        ordered["details"] = _ordered(details, _DETAILS_FIELDS)
        causes = ordered["details"].get("causes")
        if causes:
            ordered["details"]["causes"] = [_ordered(c, _CAUSE_FIELDS) for c in causes]
    body = orjson.dumps(ordered)
    for plain, escaped in _GO_ESCAPES:
        body = body.replace(plain, escaped)
    return body + b"\n"


def _ordered(fields: dict, order: tuple[str, ...], keep: tuple[str, ...] = ()) -> dict:
    known = {k: fields[k] for k in order if k in fields and (k in keep or fields[k] not in ("", 0, None, []))}
    return {**known, **{k: v for k, v in fields.items() if k not in order}}
