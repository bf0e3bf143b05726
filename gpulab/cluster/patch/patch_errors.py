"""The Status bodies kube-apiserver answers bad patches with.

From staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go and
k8s.io/apimachinery/pkg/api/errors/errors.go: a JSON patch that fails to apply
and some strategic-merge-patch errors become
``NewGenericServerResponse(422, ...)`` (the same message for every cause, and no
details); a plain Go error becomes a 500 without a reason
(responsewriters.ErrorToAPIStatus); a patched document that no longer decodes
becomes 422 Invalid on the field ``patch``. :mod:`gpulab.cluster.errors` has no
constructors for these shapes.
"""
from __future__ import annotations

from ..errors import ApiError
from ..gofmt import go_json, go_quote, json_kind

UNPROCESSABLE_MESSAGE = "the server rejected our request due to an error in our request"


def unprocessable() -> ApiError:
    """NewGenericServerResponse(http.StatusUnprocessableEntity, "", GroupResource{}, "", msg, 0, false)."""
    return ApiError(422, "Invalid", UNPROCESSABLE_MESSAGE, {})


def internal(message: str) -> ApiError:
    """A non-Status error from the patch code: code 500, reason unset, the error text as message."""
    return ApiError(500, "", message)


def undecodable(document) -> ApiError:
    """The patched document is not an object: decoding it into the kind fails (json serializer meta.Interpret)."""
    text = go_json(document)
    cause = ("couldn't get version/kind; json parse error: json: cannot unmarshal "
             f"{json_kind(document)} into Go value of type struct "
             '{ APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }')
    body = f"Invalid value: {go_quote(text)}: {cause}"
    return ApiError(422, "Invalid", f' "" is invalid: patch: {body}',
                    {"causes": [{"reason": "FieldValueInvalid", "message": body, "field": "patch"}]})
