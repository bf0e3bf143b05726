"""Who a request is: user.Info of k8s.io/apiserver/pkg/authentication/user, and the well-known names.

The names and groups are upstream's constants (user/user.go, serviceaccount/util.go); the kubeconfig's
user is the one kind's admin kubeconfig names (kubeadm's admin.conf since v1.29: ``kubernetes-admin`` in
``kubeadm:cluster-admins``, bound to cluster-admin by the ``kubeadm:cluster-admins`` ClusterRoleBinding).
"""
from __future__ import annotations

from dataclasses import dataclass, field

ANONYMOUS = "system:anonymous"
ALL_AUTHENTICATED = "system:authenticated"
ALL_UNAUTHENTICATED = "system:unauthenticated"
SYSTEM_MASTERS = "system:masters"
SERVICE_ACCOUNTS = "system:serviceaccounts"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
ADMIN_NAME = "kubernetes-admin"
ADMIN_GROUP = "kubeadm:cluster-admins"

# Extra keys of a bound ServiceAccount token's user (pkg/serviceaccount/claims.go, apiserver's serviceaccount).
EXTRA_POD_NAME = "authentication.kubernetes.io/pod-name"
EXTRA_POD_UID = "authentication.kubernetes.io/pod-uid"
EXTRA_NODE_NAME = "authentication.kubernetes.io/node-name"
EXTRA_NODE_UID = "authentication.kubernetes.io/node-uid"
EXTRA_CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"


@dataclass(frozen=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False, hash=False)

    @property
    def key(self) -> tuple:
        """What the authorizer's decisions depend on (name and groups), for its cache."""
        return (self.name, self.groups)

    def as_status(self) -> dict:
        """The UserInfo of authentication.k8s.io/v1 (SelfSubjectReview, TokenReview status)."""
        out: dict = {"username": self.name}
        if self.uid:
            out["uid"] = self.uid
        if self.groups:
            out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = {k: list(v) for k, v in self.extra.items()}
        return out


ADMIN = UserInfo(ADMIN_NAME, groups=(ADMIN_GROUP, ALL_AUTHENTICATED))
ANONYMOUS_USER = UserInfo(ANONYMOUS, groups=(ALL_UNAUTHENTICATED,))
# The loopback identity of in-process components (the apiserver's own loopback client is in system:masters).
LOOPBACK = UserInfo("system:apiserver", groups=(SYSTEM_MASTERS,))


def service_account_username(namespace: str, name: str) -> str:
    return f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"


def split_service_account(username: str) -> tuple[str, str] | None:
    """(namespace, name) of ``system:serviceaccount:NS:NAME``; None for any other user name."""
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return None
    parts = username[len(SERVICE_ACCOUNT_PREFIX):].split(":")
    if len(parts) != 2 or not parts[0] or not parts[1]:
        return None
    return parts[0], parts[1]


def service_account_groups(namespace: str) -> tuple[str, ...]:
    """serviceaccount.MakeGroupNames."""
    return (SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNTS}:{namespace}")


def with_authenticated_group(user: UserInfo) -> UserInfo:
    """The authenticatedGroupAdder: every authenticated user but the anonymous one is in system:authenticated."""
    if user.name == ANONYMOUS or ALL_AUTHENTICATED in user.groups or ALL_UNAUTHENTICATED in user.groups:
        return user
    return UserInfo(user.name, user.uid, (*user.groups, ALL_AUTHENTICATED), user.extra)
