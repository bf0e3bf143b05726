"""What a request asks to do, as the authorizer sees it: RequestInfoFactory.NewRequestInfo
(staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go) and the 403 it gets when denied
(endpoints/handlers/responsewriters/errors.go forbiddenMessage, apimachinery's errors.NewForbidden).

``/api/v1/namespaces/NS/pods?watch=1`` -> watch pods in NS; a collection GET is ``list``, a collection DELETE
``deletecollection``; ``/apis/GROUP/VERSION/watch/...`` and ``.../proxy/...`` name their verb in the path;
anything outside ``/api`` and ``/apis/GROUP/VERSION`` is a non-resource request whose verb is the method.
"""
from __future__ import annotations

from ..errors import ApiError
from ..gofmt import go_quote
from .rules import Attributes

_METHOD_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch",
                 "DELETE": "delete"}
_NAMESPACE_SUBRESOURCES = ("status", "finalize")


def _watch_requested(query) -> bool:
    values = query.getall("watch", []) if hasattr(query, "getall") else [query.get("watch")]
    value = values[0] if values and values[0] is not None else None
    return value is not None and value.lower() not in ("false", "0")


def _field_selector_name(query) -> str:
    """FieldSelector.RequiresExactMatch("metadata.name"), when it is a valid path segment."""
    text = query.get("fieldSelector") or ""
    for term in text.split(","):
        for op in ("==", "="):
            field, sep, value = term.partition(op)
            if sep and field.strip() == "metadata.name" and not value.startswith("="):
                value = value.strip()
                if value and value not in (".", "..") and "/" not in value and "%" not in value:
                    return value
                return ""
    return ""


_NAMED: dict[tuple[str, str], Attributes] = {}  # requests that name their object do not depend on the query


def resolve(method: str, path: str, query) -> Attributes:
    """The request's attributes (``query`` is a mapping of the query string, multi-valued or not)."""
    known = _NAMED.get((method, path))
    if known is not None:
        return known
    attrs = _resolve(method, path, query)
    if attrs.name and attrs.verb not in ("list", "watch"):
        if len(_NAMED) >= 4096:
            _NAMED.clear()
        _NAMED[(method, path)] = attrs
    return attrs


def _resolve(method: str, path: str, query) -> Attributes:
    parts = [p for p in path.split("/") if p]
    plain = Attributes(verb=method.lower(), resource_request=False, path=path)
    if len(parts) < 3 or parts[0] not in ("api", "apis"):
        return plain
    rest = parts[1:]
    group = ""
    if parts[0] == "apis":
        if len(rest) < 3:
            return plain
        group, rest = rest[0], rest[1:]
    version, rest = rest[0], rest[1:]
    if rest[0] in ("watch", "proxy"):
        verb, rest = rest[0], rest[1:]
        if not rest:
            return plain
    else:
        verb = _METHOD_VERBS.get(method, "")
    namespace = ""
    if rest[0] == "namespaces":
        if len(rest) > 1:
            namespace = rest[1]
            if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
                rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) >= 2 else ""
    subresource = rest[2] if len(rest) >= 3 and verb != "proxy" else ""
    if not name and verb == "get":
        verb = "watch" if _watch_requested(query) else "list"
        name = _field_selector_name(query)
    if not name and verb == "delete":
        verb = "deletecollection"
    return Attributes(verb=verb, resource_request=True, path=path, api_group=group, api_version=version,
                      resource=resource, subresource=subresource, namespace=namespace, name=name)


def forbidden_message(username: str, attrs: Attributes) -> str:
    """forbiddenMessage: what the user cannot do, without the resource prefix NewForbidden adds."""
    if not attrs.resource_request:
        return f"User {go_quote(username)} cannot {attrs.verb} path {go_quote(attrs.path)}"
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    where = (f"in the namespace {go_quote(attrs.namespace)}" if attrs.namespace else "at the cluster scope")
    return (f"User {go_quote(username)} cannot {attrs.verb} resource {go_quote(resource)} in API group "
            f"{go_quote(attrs.api_group)} {where}")


def new_forbidden(group: str, resource: str, name: str, why: str) -> ApiError:
    """errors.NewForbidden(GroupResource{group, resource}, name, why)."""
    qualified = f"{resource}.{group}" if group else resource
    if not qualified:
        message = f"forbidden: {why}"
    elif not name:
        message = f"{qualified} is forbidden: {why}"
    else:
        message = f"{qualified} {go_quote(name)} is forbidden: {why}"
    details = {k: v for k, v in (("name", name), ("group", group), ("kind", resource)) if v}
    return ApiError(403, "Forbidden", message, details)


def forbidden(username: str, attrs: Attributes, reason: str) -> ApiError:
    """responsewriters.Forbidden: the 403 of a denied request, the authorizer's reason after a colon."""
    why = forbidden_message(username, attrs)
    if reason:
        why = f"{why}: {reason}"
    resource = attrs.resource if attrs.resource_request else ""
    return new_forbidden(attrs.api_group if attrs.resource_request else "", resource, attrs.name, why)
