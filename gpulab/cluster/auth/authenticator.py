"""Who sent a request: the bearer token authenticators of a kind cluster's kube-apiserver, then anonymous.

The union of pkg/kubeapiserver/authenticator/config.go as kind runs it: the kubeconfig's token (kind's
kubeconfig user is kubeadm's ``kubernetes-admin``; here it carries a bearer token where kind's carries a
client certificate), then ServiceAccount tokens (pkg/serviceaccount/jwt.go and claims.go: a valid
signature, issuer, audience and expiry, and the pod, node and ServiceAccount the token is bound to still
there with the uids it names), then anonymous (``system:anonymous`` in ``system:unauthenticated``) for a
request that sends no token. A token that is sent but fails every authenticator is 401 Unauthorized, as
upstream; the authenticated group is added as the authenticatedGroupAdder does.
"""
from __future__ import annotations

import hmac

from . import user as users
from .tokens import InvalidToken, TokenIssuer


def bearer_token(header: str) -> str | None:
    """bearertoken.Authenticator: ``Bearer <token>``, the scheme in any case; None when there is none."""
    parts = header.strip().split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


class Authenticator:
    def __init__(self, admin_token: str, issuer: TokenIssuer, store, clock):
        self._admin_token = admin_token.encode()
        self.issuer = issuer
        self._store = store
        self._clock = clock

    def authenticate(self, authorization: str | None) -> users.UserInfo | None:
        """The request's user, or None for a token no authenticator accepts (401)."""
        if not authorization:
            return users.ANONYMOUS_USER
        token = bearer_token(authorization)
        if token is None:
            return users.ANONYMOUS_USER
        return self.authenticate_token(token)

    def authenticate_token(self, token: str, audiences: tuple[str, ...] | None = None) -> users.UserInfo | None:
        """A token's user (also TokenReview's answer), or None."""
        if hmac.compare_digest(token.encode(), self._admin_token):
            return users.ADMIN
        try:
            return users.with_authenticated_group(self._service_account(token, audiences))
        except InvalidToken:
            return None

    def _service_account(self, token: str, audiences: tuple[str, ...] | None) -> users.UserInfo:
        kwargs = {"audiences": audiences} if audiences else {}
        claims = self.issuer.verify(token, now=self._clock(), **kwargs)
        private = claims.get("kubernetes.io")
        if not isinstance(private, dict):
            raise InvalidToken("token has no kubernetes.io claims")
        ns = private.get("namespace") or ""
        sa_ref = private.get("serviceaccount") or {}
        sa = self._store.get("serviceaccounts", ns, sa_ref.get("name", ""))
        if sa is None or sa["metadata"]["uid"] != sa_ref.get("uid"):
            raise InvalidToken("service account has been deleted or recreated")
        extra: dict[str, tuple[str, ...]] = {}
        pod_ref = private.get("pod")
        if pod_ref:
            pod = self._store.get("pods", ns, pod_ref.get("name", ""))
            if pod is None or pod["metadata"]["uid"] != pod_ref.get("uid"):
                raise InvalidToken("the pod the token is bound to no longer exists")
            if pod["metadata"].get("deletionTimestamp"):
                raise InvalidToken("the pod the token is bound to is being deleted")
            extra[users.EXTRA_POD_NAME] = (pod_ref["name"],)
            extra[users.EXTRA_POD_UID] = (pod_ref["uid"],)
        secret_ref = private.get("secret")
        if secret_ref:
            secret = self._store.get("secrets", ns, secret_ref.get("name", ""))
            if secret is None or secret["metadata"]["uid"] != secret_ref.get("uid"):
                raise InvalidToken("the secret the token is bound to no longer exists")
        node_ref = private.get("node")
        if node_ref:
            node = self._store.get("nodes", "", node_ref.get("name", ""))
            if node is None or (node_ref.get("uid") and node["metadata"]["uid"] != node_ref["uid"]):
                raise InvalidToken("the node the token is bound to no longer exists")
            extra[users.EXTRA_NODE_NAME] = (node_ref["name"],)
            if node_ref.get("uid"):
                extra[users.EXTRA_NODE_UID] = (node_ref["uid"],)
        if claims.get("jti"):
            extra[users.EXTRA_CREDENTIAL_ID] = (f"JTI={claims['jti']}",)
        return users.UserInfo(users.service_account_username(ns, sa_ref.get("name", "")), sa["metadata"]["uid"],
                              users.service_account_groups(ns), dict(sorted(extra.items())))
