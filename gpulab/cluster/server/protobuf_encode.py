"""Responses in ``application/vnd.kubernetes.protobuf``: a built-in object or list, as kube-apiserver writes it.

A client that asks for protobuf first (client-go's typed clients do, ``Accept: application/vnd.kubernetes.protobuf,
*/*``; a client may ask for nothing else) gets the object encoded with the field numbers of
k8s.io/api/<group>/<version>/generated.proto, framed as runtime/serializer/protobuf/protobuf.go frames it: the
bytes ``k8s\\x00``, then a ``runtime.Unknown`` {typeMeta{apiVersion, kind}=1, raw=2, contentEncoding=3,
contentType=4}. This is the inverse of :mod:`.protobuf`, from the same field table
(gpulab/cluster/data/protobuf_fields.json): the JSON each Go field marshals to goes back to its protobuf field.
Time, MicroTime, Quantity, IntOrString and raw JSON (RawExtension, FieldsV1) follow their hand-written
``Marshal`` in apimachinery. Lists are ``<Kind>List`` {ListMeta metadata=1, repeated items=2} with ListMeta
{selfLink=1, resourceVersion=2, continue=3, remainingItemCount=4}, as every generated.proto declares them.

Fields are written in field-number order; zero values a JSON body leaves out are left out here too (gogo
writes non-pointer zeros; a decoder reads both the same).
"""
from __future__ import annotations

import base64
import calendar
import struct
from datetime import datetime

import orjson

from ..protowire import FIXED64, VARINT, delimited, tag, varint
from . import protobuf

MEDIA_TYPE = protobuf.MEDIA_TYPE
_U64 = (1 << 64) - 1
_LIST_META = (("selfLink", 1, "string"), ("resourceVersion", 2, "string"), ("continue", 3, "string"),
              ("remainingItemCount", 4, "int64"))


def can_encode(api_version: str, kind: str) -> bool:
    """Whether the kind is a built-in one with a protobuf message (custom resources have none)."""
    return (api_version, kind) in protobuf.table().kinds


def encode(obj: dict) -> bytes:
    """A built-in object, or a ``<Kind>List`` of them, framed as protobuf.Serializer.Encode frames it."""
    api_version, kind = obj.get("apiVersion", ""), obj.get("kind", "")
    kinds = protobuf.table().kinds
    if (api_version, kind) in kinds:
        raw = _message(kinds[(api_version, kind)], obj)
    else:
        item = kinds[(api_version, kind.removesuffix("List"))]
        raw = delimited(1, _scalars(_LIST_META, obj.get("metadata") or {}))
        raw += b"".join(delimited(2, _message(item, i)) for i in obj.get("items") or [])
    type_meta = delimited(1, api_version.encode()) + delimited(2, kind.encode())
    return protobuf.PREFIX + delimited(1, type_meta) + delimited(2, raw) + delimited(3, b"") + delimited(4, b"")


def _message(msg, value: dict) -> bytes:
    out = []
    for f in sorted(msg.fields, key=lambda f: f.number):
        if f.hidden:
            continue
        v = value if f.inline else value.get(f.name)
        if v is None:
            continue
        if f.repeated:
            out += [_field(f, f.type, item) for item in v]
        elif f.type == "map":
            out += [delimited(f.number, delimited(1, k.encode()) + _field_value(f, f.map_type, 2, v[k]))
                    for k in sorted(v)]
        else:
            out.append(_field(f, f.type, v))
    return b"".join(out)


def _field(f, type_: str, value) -> bytes:
    return _field_value(f, type_, f.number, value)


def _field_value(f, type_: str, number: int, value) -> bytes:
    if type_ == "string":
        return delimited(number, value.encode())
    if type_ in ("bool", "int32", "int64", "uint32", "uint64"):
        return tag(number, VARINT) + varint(int(value) & _U64)
    if type_ == "double":
        return tag(number, FIXED64) + struct.pack("<d", value)
    if type_ == "bytes":
        return delimited(number, base64.b64decode(value))
    if type_ == "message":
        return delimited(number, _message(f.sub, value))
    if type_ == "list":
        return delimited(number, b"".join(delimited(1, item.encode()) for item in value))
    return delimited(number, _special(type_, value))


def _special(type_: str, value) -> bytes:
    """The hand-written marshalling of apimachinery's Time, MicroTime, Quantity, IntOrString and raw JSON."""
    if type_ in ("Time", "MicroTime"):
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        seconds = calendar.timegm(moment.utctimetuple())
        out = tag(1, VARINT) + varint(seconds & _U64)
        nanos = moment.microsecond * 1000 if type_ == "MicroTime" else 0
        return out + (tag(2, VARINT) + varint(nanos) if nanos else b"")
    if type_ == "Quantity":
        return delimited(1, str(value).encode())
    if type_ == "IntOrString":
        if isinstance(value, str):
            return tag(1, VARINT) + varint(1) + delimited(3, value.encode())
        return tag(1, VARINT) + varint(0) + tag(2, VARINT) + varint(value & _U64)
    return delimited(1, orjson.dumps(value))  # RawExtension, FieldsV1: the JSON itself


def _scalars(fields: tuple, value: dict) -> bytes:
    out = b""
    for name, number, type_ in fields:
        if value.get(name) not in (None, ""):
            out += delimited(number, value[name].encode()) if type_ == "string" else \
                tag(number, VARINT) + varint(value[name] & _U64)
    return out
