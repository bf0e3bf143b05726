"""Request bodies in ``application/vnd.kubernetes.protobuf``, decoded to the JSON a JSON client would send.

kubectl's typed clients (``kubectl create configmap|secret|deployment|job|...``, ``kubectl create token``)
send protobuf. kube-apiserver decodes a body into the Go struct and, for a JSON client, the same struct is what
``encoding/json`` would have written; so a protobuf body becomes, here, the dict that struct marshals to:
non-pointer zero values dropped by ``omitempty``, ``creationTimestamp`` dropped by ``omitzero``, pointers kept
even when zero (``replicas: 0``), non-omitempty fields always present (``"selector": null``,
``"containers": null``, ``"resources": {}``), Time as RFC 3339, bytes as base64. The rest of the server then
treats it exactly as a JSON body.

Framing (staging/src/k8s.io/apimachinery/pkg/runtime/serializer/protobuf/protobuf.go): the bytes ``k8s\\x00``,
then a ``runtime.Unknown`` {typeMeta{apiVersion, kind}=1, raw=2, contentEncoding=3, contentType=4}; ``raw``
is the object with the field numbers of k8s.io/api/<group>/<version>/generated.proto. Field numbers, types and
the Go JSON facts come from gpulab/cluster/data/protobuf_fields.json (tools/gen_protobuf_fields.py); the wire
reading and its error strings follow the gogo-protobuf ``Unmarshal``/``skipGenerated`` functions of every
generated.pb.go; Time, MicroTime and Quantity follow meta/v1/time_proto.go, micro_time_proto.go and
api/resource/quantity_proto.go. Decode errors are answered as rest.go's transformDecodeError words them.

Why a hand-written reader: the ``protobuf`` package is not installed (and its descriptor-based parser would
need .proto descriptors we do not ship, and would not give gogo's error texts). The format needs only varints,
fixed 64/32-bit values and length-delimited slices; this table-driven reader decodes kubectl's Deployment in
about 0.1 ms.
"""
from __future__ import annotations

import base64
import functools
import struct
from pathlib import Path

import orjson

from ..errors import ApiError, bad_request
from ..registry import ResourceType
from ..gofmt import go_quote

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
PREFIX = b"k8s\x00"
TABLE = Path(__file__).resolve().parent.parent / "data" / "protobuf_fields.json"
# naming.GetNameFromCallsite of legacyscheme.Scheme (pkg/api/legacyscheme/scheme.go) in a -trimpath build.
SCHEME_NAME = "pkg/api/legacyscheme/scheme.go:30"

# Kinds a subresource's handler decodes into (the storage's New() in pkg/registry/.../storage).
SUBRESOURCE_KINDS = {
    "binding": ("v1", "Binding"),
    "eviction": ("policy/v1", "Eviction"),
    "scale": ("autoscaling/v1", "Scale"),
    "token": ("authentication.k8s.io/v1", "TokenRequest"),
}

ERR_EOF = "unexpected EOF"
ERR_INVALID_LENGTH = "proto: negative length found during unmarshaling"
ERR_OVERFLOW = "proto: integer overflow"
ERR_END_OF_GROUP = "proto: unexpected end of group"

_VARINT_TYPES = frozenset({"bool", "int32", "int64", "uint32", "uint64"})
_ZERO_TIME_SECONDS = -62135596800  # time.Time{}: January 1, year 1, 00:00:00 UTC
_U64 = (1 << 64) - 1


class WireError(Exception):
    """A decode error with the text gogo-protobuf's generated code (or the serializer) returns."""


class _Field:
    """One field of a message, with what encoding/json writes when the wire does not carry it."""

    __slots__ = ("name", "number", "index", "type", "message", "sub", "repeated", "pointer", "omitempty",
                 "omitzero", "inline", "hidden", "go", "map_type", "wire", "zero")

    def __init__(self, spec: dict, index: int):
        self.name = spec["name"]
        self.number = spec["number"]
        self.index = index
        self.type = spec["type"]
        self.message = spec.get("message") or spec.get("map_message") or spec.get("map_list_go")
        self.sub: _Message | None = None  # the message of ``message``, resolved when the table loads
        self.repeated = spec.get("repeated", False)
        self.pointer = spec.get("pointer", False)
        self.omitempty = spec.get("omitempty", False)
        self.omitzero = spec.get("omitzero", False)
        self.inline = spec.get("inline", False)
        self.hidden = spec.get("skip_json", False)  # json:"-"
        self.go = spec["go"]
        self.map_type = spec.get("map_type")
        self.wire = 0 if self.type in _VARINT_TYPES else 1 if self.type == "double" else 2
        self.zero = _OMIT if self.hidden else _absent(self)

    def absent(self):
        """A fresh copy of the JSON of this field's Go zero value."""
        return orjson.loads(self.sub.zero_json) if self.zero is _ZERO_MESSAGE else self.zero


class _Message:
    __slots__ = ("name", "go", "fields", "by_number", "always", "zero_json")

    def __init__(self, name: str, go: str, specs: list[dict]):
        self.name, self.go = name, go
        self.fields = [_Field(spec, i) for i, spec in enumerate(specs)]
        self.by_number = {f.number: f for f in self.fields}
        self.always = frozenset(f for f in self.fields if f.zero is not _OMIT)  # written even when absent
        self.zero_json = b""


_OMIT = object()  # encoding/json writes nothing for the field
_ZERO_MESSAGE = object()  # a non-pointer struct: always written, as the struct's own zero JSON
_SPECIAL_ZERO = {"Time": None, "MicroTime": None, "Quantity": "0", "IntOrString": 0, "RawExtension": None,
                 "FieldsV1": None}
_SCALAR_ZERO = {"string": "", "bool": False, "int32": 0, "int64": 0, "uint32": 0, "uint64": 0, "double": 0}


def _absent(f: _Field):
    """What encoding/json writes for a field the wire did not carry: Go's zero value, or nothing."""
    if f.omitzero:
        return _OMIT
    if f.pointer or f.repeated or f.type in ("map", "bytes"):  # nil
        return _OMIT if f.omitempty else None
    if f.type == "message":  # omitempty never drops a struct
        return _ZERO_MESSAGE
    if f.type in _SPECIAL_ZERO:  # structs with MarshalJSON
        return _SPECIAL_ZERO[f.type]
    return _OMIT if f.omitempty else _SCALAR_ZERO[f.type]


def _synthetic(go: str, *fields: tuple) -> _Message:
    """A message read only for its values (never written as JSON): (name, number, type, Go name[, repeated])."""
    return _Message(go, go, [{"name": f[0], "number": f[1], "type": f[2], "go": f[3], "repeated": f[4:] == (True,)}
                             for f in fields])


# Messages of types that marshal by hand (no generated field table): meta/v1 Timestamp (time_proto.go),
# resource.Quantity (quantity_proto.go, field "String_"), intstr.IntOrString, runtime.RawExtension and
# meta/v1 FieldsV1 (their generated.proto), and go-to-protobuf's wrapper of a named slice {repeated items = 1}.
_TIMESTAMP = _synthetic("Timestamp", ("seconds", 1, "int64", "Seconds"), ("nanos", 2, "int32", "Nanos"))
_QUANTITY = _synthetic("Quantity", ("string", 1, "string", "String_"))
_INT_OR_STRING = _synthetic("IntOrString", ("type", 1, "int64", "Type"), ("intVal", 2, "int32", "IntVal"),
                            ("strVal", 3, "string", "StrVal"))
_RAW_EXTENSION = _synthetic("RawExtension", ("raw", 1, "bytes", "Raw"))
_FIELDS_V1 = _synthetic("FieldsV1", ("Raw", 1, "bytes", "Raw"))


class _Table:
    """protobuf_fields.json, resolved: messages by name, body kinds, the envelope."""

    def __init__(self, path: Path):
        data = orjson.loads(path.read_bytes())
        self.messages = {name: _Message(name, m["go"], m["fields"]) for name, m in data["messages"].items()}
        for msg in self.messages.values():
            for f in msg.fields:
                self._resolve(msg, f)
        for msg in self.messages.values():
            self._zero_json(msg)
        self.kinds = {(api_version, kind): self.messages[name]
                      for api_version, kinds in data["kinds"].items() for kind, name in kinds.items()}
        self.every_version = {kind: self.messages[name] for kind, name in data["every_version_kinds"].items()}
        self.envelope = self.messages[data["envelope"]]
        self.type_meta = self.envelope.by_number[1].sub

    def _resolve(self, msg: _Message, f: _Field) -> None:
        value_type = f.map_type if f.type == "map" else f.type
        if value_type not in (*_SCALAR_ZERO, *_SPECIAL_ZERO, "bytes", "message", "list") or \
                (f.omitzero and f.type not in ("Time", "MicroTime")):
            raise ValueError(f"{msg.name}.{f.name}: the decoder has no rule for {f.type}/{value_type}")
        if value_type == "message":
            f.sub = self.messages[f.message]
        elif value_type == "list":
            f.sub = _synthetic(f.message, ("items", 1, "string", "Items", True))

    def _zero_json(self, msg: _Message) -> bytes:
        """The JSON of the Go zero value of a message."""
        if not msg.zero_json:
            out: dict = {}
            for f in msg.fields:
                if f.zero is _OMIT:
                    continue
                value = orjson.loads(self._zero_json(f.sub)) if f.zero is _ZERO_MESSAGE else f.zero
                if f.inline:
                    out.update(value)
                else:
                    out[f.name] = value
            msg.zero_json = orjson.dumps(out)
        return msg.zero_json


@functools.cache
def table() -> _Table:
    """protobuf_fields.json, loaded once (the encoder of responses reads it too)."""
    return _Table(TABLE)


# --- the wire ---------------------------------------------------------------------------------------------


def _varint(buf: bytes, i: int, end: int) -> tuple[int, int]:
    if i >= end:
        raise WireError(ERR_EOF)
    b = buf[i]
    if b < 0x80:
        return b, i + 1
    value, shift, i = b & 0x7F, 7, i + 1
    while True:
        if shift >= 64:
            raise WireError(ERR_OVERFLOW)
        if i >= end:
            raise WireError(ERR_EOF)
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value & _U64, i
        shift += 7


def _length(buf: bytes, i: int, start: int, end: int) -> tuple[int, int]:
    """A length prefix at i: (start, end) of the payload. The generated code reads it into a signed int."""
    n, i = _varint(buf, i, end)
    if n >= 1 << 63 or (i - start) + n >= 1 << 63:
        raise WireError(ERR_INVALID_LENGTH)
    if i + n > end:
        raise WireError(ERR_EOF)
    return i, i + n


def _skip(buf: bytes, i: int, end: int) -> int:
    """skipGenerated: where the unknown field starting at i ends."""
    depth = 0
    while i < end:
        wire, i = _varint(buf, i, end)
        wire_type = wire & 7
        if wire_type == 0:
            _, i = _varint(buf, i, end)
        elif wire_type == 1:
            i += 8
        elif wire_type == 2:
            n, i = _varint(buf, i, end)
            if n >= 1 << 63:
                raise WireError(ERR_INVALID_LENGTH)
            i += n
        elif wire_type == 3:
            depth += 1
        elif wire_type == 4:
            if depth == 0:
                raise WireError(ERR_END_OF_GROUP)
            depth -= 1
        elif wire_type == 5:
            i += 4
        else:
            raise WireError(f"proto: illegal wireType {wire_type}")
        if depth == 0:
            if i > end:
                raise WireError(ERR_EOF)
            return i
    raise WireError(ERR_EOF)


def _scalar(type_: str, value: int):
    """A varint as the Go field type reads it: int32 keeps the low 32 bits, signed."""
    if type_ == "int32":
        value &= 0xFFFFFFFF
        return value - (1 << 32) if value >= 1 << 31 else value
    if type_ == "int64":
        return value - (1 << 64) if value >= 1 << 63 else value
    if type_ == "bool":
        return value != 0
    if type_ == "uint32":
        return value & 0xFFFFFFFF
    return value


def _string(buf: bytes, s: int, e: int) -> str:
    return buf[s:e].decode("utf-8", "replace")  # encoding/json writes invalid UTF-8 as U+FFFD


_LAST_WINS = frozenset({"string", "bytes", "Time", "MicroTime"})  # Unmarshal replaces; messages merge


def _collect(msg: _Message, buf: bytes, start: int, end: int) -> dict:
    """One message's fields as found on the wire: number -> value, list of values, or span(s) to decode later.

    Mirrors a generated ``Unmarshal``: the same checks in the same order, hence the same error for bad input.
    """
    values: dict = {}
    by_number = msg.by_number
    i = start
    while i < end:
        pre = i
        wire = buf[i]
        if wire < 0x80:
            i += 1
        else:
            wire, i = _varint(buf, i, end)
        number, wire_type = (wire >> 3) & 0xFFFFFFFF, wire & 7
        if number >= 1 << 31:
            number -= 1 << 32
        if wire_type == 4:
            raise WireError(f"proto: {msg.go}: wiretype end group for non-group")
        if number <= 0:
            raise WireError(f"proto: {msg.go}: illegal tag {number} (wire type {wire})")
        f = by_number.get(number)
        if f is None:
            i = _skip(buf, pre, end)
            continue
        if wire_type != f.wire and not (wire_type == 2 and f.repeated and f.wire != 2):
            raise WireError(f"proto: wrong wireType = {wire_type} for field {f.go}")
        type_ = f.type
        if wire_type == 0:
            value = buf[i] if i < end else 0x80
            if value < 0x80:
                i += 1
            else:
                value, i = _varint(buf, i, end)
            value = _scalar(type_, value)
        elif wire_type == 1:
            if i + 8 > end:
                raise WireError(ERR_EOF)
            value = struct.unpack_from("<d", buf, i)[0]
            i += 8
        else:
            n = buf[i] if i < end else 0x80
            if n < 0x80 and i + 1 + n <= end:
                s, i = i + 1, i + 1 + n
            else:
                s, i = _length(buf, i, start, end)
            if f.wire != 2:  # packed repeated scalars
                values.setdefault(number, []).extend(_packed(type_, buf, s, i))
                continue
            if type_ == "string":
                value = _string(buf, s, i)
            elif type_ == "map":
                key, item = _map_entry(f, buf, s, i)
                values.setdefault(number, {})[key] = item
                continue
            else:
                value = (s, i)  # bytes and messages: decoded when the JSON is built
        if f.repeated or (wire_type == 2 and type_ not in _LAST_WINS):
            values.setdefault(number, []).append(value)
        else:
            values[number] = value
    return values


def _packed(type_: str, buf: bytes, s: int, e: int) -> list:
    if type_ == "double":
        if (e - s) % 8:
            raise WireError(ERR_EOF)
        return list(struct.unpack_from(f"<{(e - s) // 8}d", buf, s))
    out = []
    while s < e:
        value, s = _varint(buf, s, e)
        out.append(_scalar(type_, value))
    return out


def _map_entry(f: _Field, buf: bytes, start: int, end: int) -> tuple[str, object]:
    """A map entry {key = 1; value = 2}: the generated code checks no wire types here; absent means zero."""
    key, value = "", None
    i = start
    while i < end:
        pre = i
        wire, i = _varint(buf, i, end)
        if wire >> 3 == 1:
            s, i = _length(buf, i, start, end)
            key = _string(buf, s, i)
        elif wire >> 3 == 2:
            value = _length(buf, i, start, end)
            i = value[1]
        else:
            i = _skip(buf, pre, end)
    s, e = value or (end, end)
    t = f.map_type
    if t == "string":
        return key, _string(buf, s, e)
    if t == "bytes":
        return key, base64.b64encode(buf[s:e]).decode()
    if t == "message":
        return key, _message_json(f.sub, buf, [(s, e)])
    if t == "list":
        return key, _collect(f.sub, buf, s, e).get(1)
    return key, _special(t, buf, [(s, e)])


# --- Go structs as encoding/json writes them -----------------------------------------------------------------


def _index(f: _Field) -> int:
    return f.index


def _message_json(msg: _Message, buf: bytes, spans: list[tuple[int, int]]) -> dict:
    if len(spans) > 1:  # repeated occurrences of a message merge: the same as decoding them concatenated
        buf = b"".join(buf[s:e] for s, e in spans)
        spans = [(0, len(buf))]
    values = _collect(msg, buf, *spans[0])
    if not values:
        return orjson.loads(msg.zero_json)
    by_number = msg.by_number
    out: dict = {}
    for f in sorted(msg.always.union(by_number[n] for n in values), key=_index):  # Go field order
        if f.hidden:
            continue
        value = values.get(f.number, _OMIT)
        value = f.absent() if value is _OMIT else _field_json(f, buf, value)
        if value is _OMIT:
            continue
        if f.inline:
            out.update(value)
        else:
            out[f.name] = value
    return out


def _field_json(f: _Field, buf: bytes, value):
    """A field that was on the wire, as JSON; ``_OMIT`` where omitempty or omitzero drops it."""
    t = f.type
    if t == "message":
        if f.repeated:
            return [_message_json(f.sub, buf, [span]) for span in value]
        return _message_json(f.sub, buf, value)
    if t == "bytes":
        if f.repeated:
            return [base64.b64encode(buf[s:e]).decode() for s, e in value]
        s, e = value
        if s == e and f.omitempty and not f.pointer:
            return _OMIT
        return base64.b64encode(buf[s:e]).decode()
    if t in _SPECIAL_ZERO:
        if f.repeated:
            return [_special(t, buf, [span]) for span in value]
        result = _special(t, buf, value if isinstance(value, list) else [value])
        return _OMIT if result is None and f.omitzero else result
    if f.omitempty and not value and not f.pointer and not f.repeated and t != "map":
        return _OMIT  # omitempty drops "", 0 and false
    return value


def _special(type_: str, buf: bytes, spans: list[tuple[int, int]]):
    """The hand-written encodings of apimachinery: Time, MicroTime, Quantity, IntOrString, raw JSON."""
    if type_ in ("Time", "MicroTime"):  # their Unmarshal starts afresh: the last occurrence counts
        s, e = spans[-1]
        if s == e:
            return None
        values = _collect(_TIMESTAMP, buf, s, e)
        micro = type_ == "MicroTime"
        return _format_time(values.get(1, 0), values.get(2, 0) if micro else 0, micro)
    if len(spans) > 1:
        buf = b"".join(buf[s:e] for s, e in spans)
        spans = [(0, len(buf))]
    s, e = spans[0]
    if type_ == "Quantity":
        return _collect(_QUANTITY, buf, s, e).get(1, "0")
    if type_ == "IntOrString":
        values = _collect(_INT_OR_STRING, buf, s, e)
        return values.get(3, "") if values.get(1, 0) == 1 else values.get(2, 0)
    raw = _collect(_RAW_EXTENSION if type_ == "RawExtension" else _FIELDS_V1, buf, s, e).get(1)
    if raw is None or raw[0] == raw[1]:
        return None
    try:
        return orjson.loads(buf[raw[0]:raw[1]])
    except orjson.JSONDecodeError as exc:
        raise WireError(f"{type_}.Raw is not JSON: {exc}") from None


def _format_time(seconds: int, nanos: int, micro: bool) -> str | None:
    """metav1.Time (RFC 3339, seconds) or MicroTime (RFC3339Micro) in UTC; the zero time is null."""
    seconds += nanos // 1_000_000_000  # time.Unix normalizes nanoseconds outside [0, 1e9)
    nanos %= 1_000_000_000
    if seconds == _ZERO_TIME_SECONDS and nanos == 0:
        return None
    days, rest = divmod(seconds, 86400)
    year, month, day = _civil_from_days(days)
    text = f"{year:04d}-{month:02d}-{day:02d}T{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return text + (f".{nanos // 1000:06d}Z" if micro else "Z")


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """Proleptic Gregorian date of a day count from 1970-01-01 (any range, unlike datetime)."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, doy - (153 * mp + 2) // 5 + 1


# --- the request -----------------------------------------------------------------------------------------------


def body_type(rt: ResourceType, subresource: str | None) -> tuple[str, str]:
    """(apiVersion, kind) a create or update handler decodes its body into."""
    return SUBRESOURCE_KINDS.get(subresource or "", (rt.api_version, rt.kind))


def decode(raw: bytes, default: tuple[str, str]) -> tuple[dict | None, tuple[str, str] | None, str | None]:
    """protobuf.Serializer.Decode: (object, (apiVersion, kind) of the body, error text).

    The kind is None when the error came before the envelope was read, as upstream returns a nil gvk then.
    """
    if not raw:
        return None, None, "empty data"
    if raw[:4] != PREFIX:
        return None, None, "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
    if len(raw) == 4:
        return None, None, "empty body"
    fields = table()
    try:
        envelope = _collect(fields.envelope, raw, 4, len(raw))
        type_meta = b"".join(raw[s:e] for s, e in envelope.get(1, ()))
        type_meta = _collect(fields.type_meta, type_meta, 0, len(type_meta))
    except WireError as exc:
        return None, None, str(exc)
    # copyKindDefaults: the handler's kind and version fill in what the envelope leaves empty.
    api_version, kind = type_meta.get(1) or default[0], type_meta.get(2) or default[1]
    gvk = (api_version, kind)
    msg = fields.kinds.get(gvk) or fields.every_version.get(kind)
    if msg is None:
        return None, gvk, f"no kind {go_quote(kind)} is registered for version {go_quote(api_version)} " \
                          f"in scheme {go_quote(SCHEME_NAME)}"
    body_span = envelope.get(2, (0, 0))
    try:
        obj = _message_json(msg, raw, [body_span])
    except WireError as exc:
        return None, gvk, str(exc)
    return {"kind": kind, "apiVersion": api_version, **obj}, gvk, None


def decode_request(raw: bytes, into: tuple[str, str] | None) -> dict:
    """A create/update body decoded into ``into`` (apiVersion, kind), or a DELETE body (``into`` None).

    Errors read as create.go/update.go's transformDecodeError words them (400); a DELETE body's errors are
    not wrapped by delete.go and answer 500 without a reason, as responsewriters.ErrorToAPIStatus does.
    """
    obj, gvk, problem = decode(raw, into or ("meta.k8s.io/v1", "DeleteOptions"))
    if problem is None:
        return obj
    if into is None:
        raise ApiError(500, "", problem)
    if gvk is not None:
        version = gvk[0].rsplit("/", 1)[-1]
        raise bad_request(f"{gvk[1]} in version {go_quote(version)} cannot be handled as a {into[1]}: {problem}")
    raise unrecognized(raw, into, problem)


def unrecognized(raw: bytes, into: tuple[str, str], problem: str) -> ApiError:
    """transformDecodeError for a body whose group/version/kind could not be read (any media type)."""
    return bad_request(f"the object provided is unrecognized (must be of type {into[1]}): {problem} "
                       f"({_summary(raw)})")


def _summary(data: bytes) -> str:
    """summarizeData(body, 30) of rest.go."""
    if not data:
        return "<empty>"
    if data[:1] == b"{":
        return data[:30].decode("utf-8", "replace") + (" ..." if len(data) > 30 else "")
    return data[:30].hex() + (" ..." if len(data) > 30 else "")
