"""``Impersonate-*`` headers: acting as another user, as staging/src/k8s.io/apiserver/pkg/endpoints/filters/
impersonation.go does it.

Each thing asked for (the user or ServiceAccount, each group, each extra value, the uid) must be allowed
with the ``impersonate`` verb on ``users``, ``serviceaccounts`` (in its namespace), ``groups``,
``userextras/<key>`` or ``uids`` (the last two in authentication.k8s.io); the first one refused answers 403
as any denied request. The impersonated user gets ``system:authenticated`` (or, for ``system:anonymous``,
``system:unauthenticated``) unless the asked-for groups already settle it, and a ServiceAccount without
asked-for groups gets its fixed ones.
"""
from __future__ import annotations

from urllib.parse import unquote

from ..errors import internal
from . import user as users
from .rules import Attributes

USER_HEADER = "Impersonate-User"
GROUP_HEADER = "Impersonate-Group"
UID_HEADER = "Impersonate-Uid"
EXTRA_PREFIX = "Impersonate-Extra-"


def _requests(headers) -> list[tuple[str, str, str, str]]:
    """buildImpersonationRequests: (kind, namespace, name, extra key) of each thing asked for."""
    if not any(name[:12].lower() == "impersonate-" for name in headers.keys()):
        return []  # the common case, decided without building anything
    out = []
    requested_user = headers.get(USER_HEADER, "")
    if requested_user:
        sa = users.split_service_account(requested_user)
        out.append(("ServiceAccount", sa[0], sa[1], "") if sa else ("User", "", requested_user, ""))
    groups = headers.getall(GROUP_HEADER, [])
    out += [("Group", "", g, "") for g in groups]
    extras = [(name, value) for name, value in headers.items() if name.lower().startswith(EXTRA_PREFIX.lower())]
    out += [("UserExtra", "", value, unquote(name[len(EXTRA_PREFIX):].lower())) for name, value in extras]
    uid = headers.get(UID_HEADER, "")
    if uid:
        out.append(("UID", "", uid, ""))
    if (groups or extras or uid) and not requested_user:
        described = " ".join(_go_object_reference(r) for r in out)
        raise internal(f"requested [{described}] without impersonating a user")
    return out


def _go_object_reference(request: tuple[str, str, str, str]) -> str:
    """``%v`` of the v1.ObjectReference upstream builds (Kind Namespace Name UID APIVersion RV FieldPath)."""
    kind, namespace, name, key = request
    api_version = "authentication.k8s.io/v1" if kind in ("UserExtra", "UID") else ""
    return "{" + " ".join((kind, namespace, name, "", api_version, "", key)) + "}"


def impersonate(requestor: users.UserInfo, headers, authorize) -> users.UserInfo:
    """The user a request acts as: ``requestor`` itself without impersonation headers; ApiError 403 or 500.

    ``authorize(user, attrs)`` raises the 403 of a denied check."""
    requests = _requests(headers)
    if not requests:
        return requestor
    groups_specified = bool(headers.getall(GROUP_HEADER, []))
    name, uid, groups, extra = "", "", [], {}
    for kind, namespace, value, key in requests:
        if kind == "ServiceAccount":
            attrs = Attributes("impersonate", True, resource="serviceaccounts", namespace=namespace, name=value)
            name = users.service_account_username(namespace, value)
            if not groups_specified:
                groups = list(users.service_account_groups(namespace))
        elif kind == "User":
            attrs = Attributes("impersonate", True, resource="users", name=value)
            name = value
        elif kind == "Group":
            attrs = Attributes("impersonate", True, resource="groups", name=value)
            groups.append(value)
        elif kind == "UserExtra":
            attrs = Attributes("impersonate", True, api_group="authentication.k8s.io", api_version="v1",
                               resource="userextras", subresource=key, name=value)
            extra.setdefault(key, []).append(value)
        else:
            attrs = Attributes("impersonate", True, api_group="authentication.k8s.io", api_version="v1",
                               resource="uids", name=value)
            uid = value
        authorize(requestor, attrs)
    if name != users.ANONYMOUS:
        if not any(g in (users.ALL_AUTHENTICATED, users.ALL_UNAUTHENTICATED) for g in groups):
            groups.append(users.ALL_AUTHENTICATED)
    elif users.ALL_UNAUTHENTICATED not in groups:
        groups.append(users.ALL_UNAUTHENTICATED)
    return users.UserInfo(name, uid, tuple(groups), {k: tuple(v) for k, v in extra.items()})
