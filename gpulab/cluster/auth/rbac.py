"""The RBAC authorizer and its rule resolver, with the evaluated rules cached per user and namespace.

plugin/pkg/auth/authorizer/rbac/rbac.go (Authorize, RulesFor) over pkg/registry/rbac/validation/rule.go's
DefaultRuleResolver: the ClusterRoleBindings that name the user, then (for a namespaced request) the
namespace's RoleBindings, each resolved to its role's rules; an allowed request's reason names the binding
(``RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "y" to Group "z"``), a denied one's reason lists
the bindings whose roles could not be resolved. In front of RBAC, as kube-apiserver's authorizer chain puts
it, members of ``system:masters`` are allowed everything.

Speed: resolving a user's rules walks every binding; the result is kept per (user, groups, namespace), and each
decision per (user, groups, request attributes), both dropped whenever a role or binding changes (the
authorizer subscribes to the four RBAC resources).
"""
from __future__ import annotations

from typing import Protocol

from ..gofmt import go_quote
from . import user as users
from .rules import Attributes, rule_allows

GROUP = "rbac.authorization.k8s.io"
ROLES = f"roles.{GROUP}"
CLUSTER_ROLES = f"clusterroles.{GROUP}"
ROLE_BINDINGS = f"rolebindings.{GROUP}"
CLUSTER_ROLE_BINDINGS = f"clusterrolebindings.{GROUP}"
RBAC_KEYS = (ROLES, CLUSTER_ROLES, ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS)
_CACHE_LIMIT = 4096


class Source(Protocol):
    """Stored objects by storage key (the store, or a strategy's context)."""

    def lookup(self, key: str, name: str, namespace: str = "") -> dict | None: ...

    def list(self, key: str) -> list[dict]: ...


def _describe_subject(subject: dict, binding_namespace: str) -> str:
    kind, name = subject.get("kind", ""), subject.get("name", "")
    if kind == "ServiceAccount":
        return f"{kind} {go_quote(name + '/' + (subject.get('namespace') or binding_namespace))}"
    return f"{kind} {go_quote(name)}"


def _applies(user: users.UserInfo, subject: dict, namespace: str) -> bool:
    kind = subject.get("kind")
    if kind == "User":
        return user.name == subject.get("name")
    if kind == "Group":
        return subject.get("name") in user.groups
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or namespace
        return bool(ns) and user.name == users.service_account_username(ns, subject.get("name", ""))
    return False


def _not_found(resource: str, name: str) -> str:
    return f"{resource}.{GROUP} {go_quote(name)} not found"


def role_reference_rules(source: Source, role_ref: dict, namespace: str) -> tuple[list[dict], str | None]:
    """GetRoleReferenceRules: the rules of a binding's role, or the lister's error."""
    kind, name = role_ref.get("kind"), role_ref.get("name", "")
    if kind == "Role":
        role = source.lookup(ROLES, name, namespace)
        return (role.get("rules") or [], None) if role else ([], _not_found("role", name))
    if kind == "ClusterRole":
        role = source.lookup(CLUSTER_ROLES, name)
        return (role.get("rules") or [], None) if role else ([], _not_found("clusterrole", name))
    return [], f"unsupported role reference kind: {go_quote(kind or '')}"


def visit_rules(source: Source, user: users.UserInfo, namespace: str) -> tuple[list[tuple[dict, str]], list[str]]:
    """VisitRulesFor, all of it: every (rule, the binding granting it) and every resolution error, in order."""
    found, errors = [], []

    def bindings(key: str, ns: str) -> list[dict]:
        objs = [b for b in source.list(key) if (b["metadata"].get("namespace") or "") == ns]
        return sorted(objs, key=lambda b: b["metadata"]["name"])

    for crb in bindings(CLUSTER_ROLE_BINDINGS, ""):
        subject = next((s for s in crb.get("subjects") or () if _applies(user, s, "")), None)
        if subject is None:
            continue
        rules, err = role_reference_rules(source, crb.get("roleRef") or {}, "")
        if err:
            errors.append(err)
            continue
        ref = crb["roleRef"]
        described = (f"ClusterRoleBinding {go_quote(crb['metadata']['name'])} of {ref['kind']} "
                     f"{go_quote(ref['name'])} to {_describe_subject(subject, '')}")
        found += [(rule, described) for rule in rules]
    if namespace:
        for rb in bindings(ROLE_BINDINGS, namespace):
            subject = next((s for s in rb.get("subjects") or () if _applies(user, s, namespace)), None)
            if subject is None:
                continue
            rules, err = role_reference_rules(source, rb.get("roleRef") or {}, namespace)
            if err:
                errors.append(err)
                continue
            ref = rb["roleRef"]
            described = (f"RoleBinding {go_quote(rb['metadata']['name'] + '/' + namespace)} of {ref['kind']} "
                         f"{go_quote(ref['name'])} to {_describe_subject(subject, namespace)}")
            found += [(rule, described) for rule in rules]
    return found, errors


def aggregate_errors(errors: list[str]) -> str:
    """utilerrors.NewAggregate(...).Error(): one message as it is, several deduplicated in brackets."""
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


class StoreSource:
    """A :class:`Source` over the store."""

    def __init__(self, store):
        self._store = store

    def lookup(self, key: str, name: str, namespace: str = "") -> dict | None:
        return self._store.get(key, namespace, name)

    def list(self, key: str) -> list[dict]:
        return self._store.list(key)


class Authorizer:
    """kube-apiserver's chain as a kind cluster runs it (privileged group, then RBAC), with a rules cache."""

    def __init__(self, api):
        self._source = StoreSource(api.store)
        self._cache: dict[tuple, tuple[list[tuple[dict, str]], list[str]]] = {}
        self._decisions: dict[tuple, tuple[bool, str]] = {}
        for key in RBAC_KEYS:
            api.subscribe(key, self._invalidate)

    def _invalidate(self, *_args) -> None:
        self._cache.clear()
        self._decisions.clear()

    def rules_for(self, user: users.UserInfo, namespace: str) -> tuple[list[tuple[dict, str]], list[str]]:
        key = (user.key, namespace)
        hit = self._cache.get(key)
        if hit is None:
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            hit = self._cache[key] = visit_rules(self._source, user, namespace)
        return hit

    def authorize(self, user: users.UserInfo, attrs: Attributes) -> tuple[bool, str]:
        """(allowed, reason) as the union authorizer returns them."""
        if users.SYSTEM_MASTERS in user.groups:
            return True, ""
        key = (user.key, attrs)
        decision = self._decisions.get(key)
        if decision is None:
            if len(self._decisions) >= _CACHE_LIMIT:
                self._decisions.clear()
            decision = self._decisions[key] = self._decide(user, attrs)
        return decision

    def _decide(self, user: users.UserInfo, attrs: Attributes) -> tuple[bool, str]:
        rules, errors = self.rules_for(user, attrs.namespace)
        for rule, source in rules:
            if rule_allows(attrs, rule):
                return True, f"RBAC: allowed by {source}"
        return False, f"RBAC: {aggregate_errors(errors)}" if errors else ""
