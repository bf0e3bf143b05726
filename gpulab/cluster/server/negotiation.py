"""Request and response encodings, as kube-apiserver negotiates them.

Requests: JSON, YAML, protobuf (``protobuf.py``) and, for patches, the four patch media types.
Responses: JSON, protobuf for built-in objects and lists (``protobuf_encode.py``), or a conversion asked for in the Accept header
(``application/json;as=Table;v=v1;g=meta.k8s.io``, ``as=PartialObjectMetadata``
and ``as=PartialObjectMetadataList``), following
staging/src/k8s.io/apiserver/pkg/endpoints/handlers/negotiation.
"""
from __future__ import annotations

import codecs
import json
from dataclasses import dataclass

import orjson
import yaml

from .. import jsonio
from ..errors import ApiError, bad_request, unsupported_media_type
from ..gofmt import go_quote
from . import protobuf, yamlbounds

try:  # libyaml when present: several times faster on big manifests
    _YamlLoader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _YamlLoader = yaml.SafeLoader

PATCH_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
    "application/apply-patch+cbor": None,
}



@dataclass(frozen=True)
class Conversion:
    """What the client asked the response to be turned into (``None`` kind = the object itself)."""

    kind: str | None = None
    group_version: str = "meta.k8s.io/v1"
    protobuf: bool = False  # the object itself, as Kubernetes protobuf


def _params(media: str) -> tuple[str, dict]:
    parts = [p.strip() for p in media.split(";")]
    params = {}
    for p in parts[1:]:
        if "=" in p:
            k, v = p.split("=", 1)
            params[k.strip()] = v.strip()
    return parts[0].lower(), params


def negotiate_output(accept: str | None, protobuf_ok: bool = False) -> Conversion:
    """Pick the first acceptable entry of the Accept header; 406 when there is none.

    ``protobuf_ok``: the response is a built-in object or list, which has a protobuf encoding (custom resources,
    conversions and watch streams are served in JSON only here).
    """
    if not accept:
        return Conversion()
    saw_unusable = False
    for entry in accept.split(","):
        media, params = _params(entry)
        if media == protobuf.MEDIA_TYPE and protobuf_ok and not params.get("as"):
            return Conversion(protobuf=True)
        if media in ("application/json", "*/*", "application/*", "application/yaml", "") or media.endswith("+json"):
            as_kind = params.get("as")
            if as_kind:
                group, version = params.get("g", ""), params.get("v", "")
                if as_kind in ("Table", "PartialObjectMetadata", "PartialObjectMetadataList") and \
                        group == "meta.k8s.io" and version in ("v1", "v1beta1"):
                    return Conversion(as_kind, f"meta.k8s.io/{version}")
                saw_unusable = True
                continue
            return Conversion()
        saw_unusable = True
    if saw_unusable:
        raise ApiError(406, "NotAcceptable",
                       "only the following media types are accepted: application/json, application/yaml, "
                       "application/vnd.kubernetes.protobuf", {})
    return Conversion()


def decode_body(raw: bytes, content_type: str | None, *, patch: bool = False,
                into: tuple[str, str] | None = None):
    """Decode a request body (read within bounds by :mod:`.bodies`) by its Content-Type; returns
    (value, patch_type or None).

    ``into`` is the (apiVersion, kind) a create or update handler decodes into; protobuf bodies need it
    (their errors name it); without it a protobuf body is a DELETE's DeleteOptions.
    """
    media, _ = _params(content_type or "application/json")
    if patch:
        kind = patch_type(content_type)
        if kind == "apply":
            return _yaml(raw), kind
        return _json(raw, patch=True), kind
    if media in ("application/json", "", "application/yaml", "application/x-yaml", "text/yaml"):
        try:
            return (_json(raw) if media in ("application/json", "") else _yaml(raw)), None
        except ApiError as exc:
            if into is None or exc.code != 400:
                raise
            # create.go/update.go transformDecodeError: the body's kind could not even be read
            raise protobuf.unrecognized(raw, into, exc.message) from None
    if media == protobuf.MEDIA_TYPE:
        return protobuf.decode_request(raw, into), None
    raise unsupported_media_type(media)


def patch_type(content_type: str | None) -> str:
    """The patch flavour a PATCH's Content-Type names, or 415 (handlers/patch.go checks it before anything)."""
    media, _ = _params(content_type or "application/json")
    kind = PATCH_TYPES.get(media)
    if kind is None:
        raise ApiError(415, "UnsupportedMediaType",
                       "the body of the request was in an unknown format - accepted media types include: "
                       "application/json-patch+json, application/merge-patch+json, "
                       "application/apply-patch+yaml", {})
    return kind


def _json(raw: bytes, *, patch: bool = False):
    # A JSON, merge or strategic patch that is not valid JSON (empty, too deep) is refused before anything reads
    # it: handlers/patch.go validateAndTranscodePatch, json.Valid.
    if not raw.strip():
        raise bad_request("invalid JSON patch" if patch else
                          "couldn't get version/kind; json parse error: unexpected end of JSON input")
    try:
        return _go_json(raw)
    except ValueError as exc:
        if patch:
            raise bad_request("invalid JSON patch") from None
        message = str(exc) if isinstance(exc, jsonio.TooDeep) else go_json_error(raw)
        raise bad_request(f"couldn't get version/kind; json parse error: {message}") from None


def _go_json(raw: bytes):
    """Parse as Go's decoder does: invalid UTF-8 and lone surrogate escapes inside strings become U+FFFD.

    Raises ValueError for anything Go refuses.
    """
    try:
        return jsonio.loads(raw)
    except jsonio.TooDeep:
        raise
    except ValueError:
        pass
    text = raw.decode("utf-8", errors=_PER_BYTE_REPLACEMENT)
    value = json.loads(text, parse_constant=_refuse_constant)  # what orjson refused; Go may still accept it
    return _without_lone_surrogates(value)


def as_go_utf8(raw: bytes) -> bytes:
    """``raw`` with every byte that is not UTF-8 replaced by U+FFFD, as Go's decoder reads strings."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors=_PER_BYTE_REPLACEMENT).encode()
    return raw


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _replace_each_byte(err: UnicodeDecodeError):
    """Go's utf8.DecodeRune: every byte of an invalid sequence becomes its own U+FFFD."""
    return "\ufffd" * (err.end - err.start), err.end


_PER_BYTE_REPLACEMENT = "gpulab-go-utf8"
codecs.register_error(_PER_BYTE_REPLACEMENT, _replace_each_byte)


def _without_lone_surrogates(value):
    """encoding/json's unquote turns a ``\\ud800`` without its pair into U+FFFD."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace") if _has_surrogate(value) \
            else value
    if isinstance(value, list):
        return [_without_lone_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_without_lone_surrogates(k): _without_lone_surrogates(v) for k, v in value.items()}
    return value


def _has_surrogate(text: str) -> bool:
    return any("\ud800" <= ch <= "\udfff" for ch in text)


def go_json_error(raw: bytes) -> str:
    """The message Go's encoding/json gives for a malformed document (scanner.go), from Python's diagnosis.

    Go's scanner works on bytes: a character it names is the byte where it stopped (``'\u00ff'`` for 0xff).
    """
    text = raw.decode("utf-8", errors="surrogateescape")
    try:
        json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        pos, msg = exc.pos, exc.msg
    except ValueError:  # NaN, Infinity: Go refuses them as a value
        return "invalid character 'N' looking for beginning of value"
    else:  # pragma: no cover - _go_json accepted what json accepts
        return "invalid character 'N' looking for beginning of value"
    if pos >= len(text.rstrip()) or msg.startswith("Unterminated string"):
        return "unexpected end of JSON input"
    char = _go_quote_char(chr(text[pos:pos + 1].encode("utf-8", "surrogateescape")[0]))
    if msg.startswith("Expecting property name"):
        return f"invalid character {char} looking for beginning of object key string"
    if msg == "Expecting ':' delimiter":
        return f"invalid character {char} after object key"
    if msg == "Expecting ',' delimiter":
        where = "after array element" if _container_at(text, pos) == "[" else "after object key:value pair"
        return f"invalid character {char} {where}"
    if msg.startswith("Invalid control character"):
        return f"invalid character {char} in string literal"
    if msg == "Extra data":
        return f"invalid character {char} after top-level value"
    return f"invalid character {char} looking for beginning of value"


def _container_at(text: str, pos: int) -> str | None:
    """The innermost open bracket before ``pos``, ignoring brackets inside strings."""
    stack, in_string, escaped = [], False, False
    for ch in text[:pos]:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            stack.append(ch)
        elif ch in "]}" and stack:
            stack.pop()
    return stack[-1] if stack else None


def _go_quote_char(ch: str) -> str:
    """Go's quoteChar: 'x', with \\' and \" special-cased and other characters strconv.Quote'd."""
    if ch == "'":
        return "'\\''"
    if ch == '"':
        return "'\"'"
    return f"'{go_quote(ch)[1:-1]}'"


def _yaml(raw: bytes):
    loader = _YamlLoader(raw)
    try:
        node = loader.get_single_node()
        if b"*" in raw:  # no alias without an asterisk
            yamlbounds.check(node, raw)
        value = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise bad_request(f"error converting YAML to JSON: yaml: {line}{problem}") from None
    finally:
        loader.dispose()
    return value


def dumps(obj) -> bytes:
    return orjson.dumps(obj)
