"""API errors as kube-apiserver reports them: ``meta/v1 Status`` objects.

kubectl prints ``Error from server (NotFound): pods "x" not found`` straight
from these, so the reason, code and message text follow
k8s.io/apimachinery/pkg/api/errors/errors.go and
k8s.io/apimachinery/pkg/util/validation/field/errors.go.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from .gofmt import go_quote, go_v

# field.ErrorType (the cause reason) -> its message prefix; field/errors.go
FIELD_ERROR_TEXT = {
    "FieldValueNotFound": "Not found",
    "FieldValueRequired": "Required value",
    "FieldValueDuplicate": "Duplicate value",
    "FieldValueInvalid": "Invalid value",
    "FieldValueNotSupported": "Unsupported value",
    "FieldValueForbidden": "Forbidden",
    "FieldValueTooLong": "Too long",
    "FieldValueTooMany": "Too many",
    "InternalError": "Internal error",
    "FieldValueTypeInvalid": "Invalid value",
}
# The types whose body never shows the value.
_VALUELESS = ("FieldValueRequired", "FieldValueForbidden", "FieldValueTooLong", "InternalError")

OMIT = object()  # field.omitValue: the body shows only the error type


def _format_value(value: Any) -> str:
    """field.Error's value rendering: strings %q, numbers and bools %v, the rest as encoding/json writes a struct
    (fields in their order, so not :func:`gofmt.go_json`, which sorts map keys)."""
    if isinstance(value, (bool, int, float)):
        return go_v(value)
    if isinstance(value, str):
        return go_quote(value)
    if value is None:
        return "null"
    # encoding/json escapes these even inside strings (HTMLEscape and the JS line separators).
    return orjson.dumps(value).decode().translate(_JSON_HTML_ESCAPES)


_JSON_HTML_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                                    "\u2028": "\\u2028", "\u2029": "\\u2029"})


@dataclass
class FieldError:
    """One field.Error: ``type`` is a cause reason such as ``FieldValueInvalid``."""

    type: str
    field: str
    bad_value: Any = OMIT
    detail: str = ""

    def error_body(self) -> str:
        """The message without the field path (what goes in a Status cause): ErrorBody."""
        text = FIELD_ERROR_TEXT[self.type]
        if self.type not in _VALUELESS and self.bad_value is not OMIT:
            text += ": " + self.render_value(self.bad_value)
        return f"{text}: {self.detail}" if self.detail else text

    @staticmethod
    def render_value(value: Any) -> str:
        return _format_value(value)

    def __str__(self) -> str:
        # field.Error.Error() prints the path even when it is empty (": Too long: ...").
        return f"{self.field}: {self.error_body()}"


# Convenience constructors named after field.Invalid / field.Required / ...
def invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError("FieldValueInvalid", path, value, detail)


def required(path: str, detail: str = "") -> FieldError:
    return FieldError("FieldValueRequired", path, OMIT, detail)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError("FieldValueForbidden", path, OMIT, detail)


def not_supported(path: str, value: Any, valid: list[str]) -> FieldError:
    # each as strconv.Quote(fmt.Sprint(v))
    detail = "supported values: " + ", ".join(go_quote(go_v(v)) for v in valid) if valid else ""
    return FieldError("FieldValueNotSupported", path, value, detail)


def duplicate(path: str, value: Any) -> FieldError:
    return FieldError("FieldValueDuplicate", path, value, "")


def too_long(path: str, max_len: int) -> FieldError:
    return FieldError("FieldValueTooLong", path, OMIT, f"may not be more than {max_len} bytes")


class ApiError(Exception):
    """An error the server answers with a ``Status`` body; raised anywhere inside the API core."""

    def __init__(self, code: int, reason: str, message: str, details: dict | None = None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict:
        body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": self.message, "reason": self.reason, "code": self.code}
        if self.details is not None:
            body["details"] = self.details
        if not self.reason:
            del body["reason"]
        return body


def _qualified(kind_plural: str, group: str) -> str:
    return f"{kind_plural}.{group}" if group else kind_plural


def not_found(plural: str, group: str, name: str) -> ApiError:
    res = _qualified(plural, group)
    return ApiError(404, "NotFound", f'{res} "{name}" not found',
                    {"name": name, "group": group, "kind": plural} if group else {"name": name, "kind": plural})


def already_exists(plural: str, group: str, name: str) -> ApiError:
    res = _qualified(plural, group)
    details = {"name": name, "kind": plural}
    if group:
        details["group"] = group
    return ApiError(409, "AlreadyExists", f'{res} "{name}" already exists', details)


def conflict(plural: str, group: str, name: str, why: str) -> ApiError:
    res = _qualified(plural, group)
    details = {"name": name, "kind": plural}
    if group:
        details["group"] = group
    return ApiError(409, "Conflict", f'Operation cannot be fulfilled on {res} "{name}": {why}', details)


def invalid_object(kind: str, group: str, name: str, errors: list[FieldError]) -> ApiError:
    """422 Invalid: ``Pod "x" is invalid: spec.containers[0].image: Required value`` (errors.NewInvalid)."""
    causes = [{"reason": e.type, "message": e.error_body(), "field": e.field} for e in errors]
    # ErrorList.ToAggregate drops repeated messages; the causes keep every error.
    messages = list(dict.fromkeys(str(e) for e in errors))
    qualified = f"{kind}.{group}" if group else kind
    details = {"name": name, "kind": kind, "causes": causes}
    if group:
        details["group"] = group
    if not messages:
        return ApiError(422, "Invalid", f'{qualified} "{name}" is invalid', details)
    agg = messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"
    return ApiError(422, "Invalid", f'{qualified} "{name}" is invalid: {agg}', details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def method_not_allowed(message: str = "the server does not allow this method on the requested resource") -> ApiError:
    return ApiError(405, "MethodNotAllowed", message, {})


def unsupported_media_type(content_type: str) -> ApiError:
    return ApiError(415, "UnsupportedMediaType", 'the body of the request was in an unknown format - accepted '
                    'media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf, '
                    'application/cbor, application/apply-patch+yaml', {})


def request_entity_too_large(limit: int) -> ApiError:
    return ApiError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def internal(message: str) -> ApiError:
    return ApiError(500, "InternalError", f"Internal error occurred: {message}",
                    {"causes": [{"message": message}]})


def forbidden_error(message: str) -> ApiError:
    return ApiError(403, "Forbidden", message)
