"""The authentication, impersonation and authorization filters of the API server, in upstream's order
(staging/src/k8s.io/apiserver/pkg/server/config.go DefaultBuildHandlerChain: WithAuthentication,
WithImpersonation, WithAuthorization), as one object the HTTP server calls per request.

The user a request acts as is kept in a context variable for the rest of its handling (RBAC's escalation
checks and the review APIs read it); code that runs outside a request (the in-process controllers,
scheduler and node agent, like kube-apiserver's loopback client in system:masters) finds none and is not
checked.
"""
from __future__ import annotations

import contextvars
from dataclasses import dataclass

from ..errors import unauthorized
from . import impersonation, requestinfo
from .authenticator import Authenticator
from .rbac import Authorizer
from .rules import Attributes
from .user import UserInfo

# pods/exec, attach and portforward over a WebSocket are GETs; kube-apiserver also asks for ``create`` on them
# (AuthorizePodWebsocketUpgradeCreatePermission), which is the verb their SPDY POSTs carry.
_CONNECT_CREATE = ("exec", "attach", "portforward")


@dataclass(frozen=True)
class RequestUser:
    user: UserInfo
    authorizer: Authorizer


_current: contextvars.ContextVar[RequestUser | None] = contextvars.ContextVar("gpulab_request_user", default=None)


def current() -> RequestUser | None:
    """The user of the request being served, with the authorizer; None outside a client's request."""
    return _current.get()


class RequestAuth:
    def __init__(self, authenticator: Authenticator, authorizer: Authorizer):
        self.authenticator = authenticator
        self.authorizer = authorizer

    def check(self, user: UserInfo, attrs: Attributes) -> None:
        """Raise the 403 of ``attrs`` unless ``user`` may do it."""
        allowed, reason = self.authorizer.authorize(user, attrs)
        if not allowed:
            raise requestinfo.forbidden(user.name, attrs, reason)

    def admit(self, method: str, path: str, headers, query) -> UserInfo:
        """Authenticate, impersonate and authorize one request; ApiError 401/403 (or 500) when it may not go on.
        Sets the request's user for the rest of its handling."""
        user = self.authenticator.authenticate(headers.get("Authorization"))
        if user is None:
            raise unauthorized()
        user = impersonation.impersonate(user, headers, self.check)
        attrs = requestinfo.resolve(method, path, query)
        if attrs.resource_request and attrs.resource == "pods" and attrs.verb == "get" \
                and attrs.subresource in _CONNECT_CREATE:
            attrs = Attributes(**{**attrs.__dict__, "verb": "create"})
        self.check(user, attrs)
        _current.set(RequestUser(user, self.authorizer))
        return user
