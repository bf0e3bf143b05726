"""RBAC's escalation prevention: nobody grants, through a role or a binding, more than they hold.

pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/policybased/storage.go with
pkg/registry/rbac/escalation_check.go and validation/rule.go ConfirmNoEscalation. A write passes when its
user is in ``system:masters``, holds ``escalate`` on the role resource (``bind`` on the referenced role, for
a binding), or already holds every rule granted; else 403 ``... is attempting to grant RBAC permissions not
currently held:`` and the missing rules, compacted and sorted. Setting an aggregationRule needs full
authority. Writes from in-process components (no request user) are not checked, as upstream's loopback.
"""
from __future__ import annotations

from ..errors import ApiError, internal
from . import filters
from . import user as users
from .rbac import GROUP, aggregate_errors, role_reference_rules
from .requestinfo import new_forbidden
from .rules import Attributes, compact, compact_string, covers, go_quote_list
from ..gofmt import go_quote

FULL_AUTHORITY = [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                  {"nonResourceURLs": ["*"], "verbs": ["*"]}]


def _allowed(request: filters.RequestUser, attrs: Attributes) -> bool:
    return request.authorizer.authorize(request.user, attrs)[0]


def _confirm_no_escalation(request: filters.RequestUser, namespace: str, rules: list[dict]) -> str | None:
    """ConfirmNoEscalation: None, or the error text naming what the user lacks."""
    owned, errors = request.authorizer.rules_for(request.user, namespace)
    ok, missing = covers([rule for rule, _ in owned], rules)
    if ok:
        return None
    described = sorted({compact_string(rule) for rule in compact(missing)})
    user = request.user
    msg = (f"user {go_quote(user.name)} (groups={go_quote_list(user.groups)}) is attempting to grant RBAC "
           f"permissions not currently held:\n" + "\n".join(described))
    if errors:
        msg += f"; resolution errors: [{aggregate_errors(errors)}]"
    return msg


def check_role(resource: str, role: dict, old: dict | None = None) -> None:
    """A Role or ClusterRole write (``resource`` ``roles`` or ``clusterroles``); ApiError 403 when it escalates."""
    request = filters.current()
    if request is None or users.SYSTEM_MASTERS in request.user.groups:
        return
    if old is not None and (old.get("rules") or []) == (role.get("rules") or []) \
            and old.get("aggregationRule") == role.get("aggregationRule"):
        return
    meta = role["metadata"]
    namespace = meta.get("namespace") or ""
    if _allowed(request, Attributes("escalate", True, api_group=GROUP, api_version="v1", resource=resource,
                                    namespace=namespace, name=meta["name"] if old is not None else "")):
        return
    why = _confirm_no_escalation(request, namespace, role.get("rules") or [])
    if why is None and role.get("aggregationRule") is not None \
            and _confirm_no_escalation(request, namespace, FULL_AUTHORITY) is not None:
        why = "must have cluster-admin privileges to use the aggregationRule"
    if why is not None:
        raise new_forbidden(GROUP, resource, meta["name"], why)


def check_binding(resource: str, binding: dict, source) -> None:
    """A RoleBinding or ClusterRoleBinding write; ApiError 403 (or the role's 404) when it escalates."""
    request = filters.current()
    if request is None or users.SYSTEM_MASTERS in request.user.groups:
        return
    meta, ref = binding["metadata"], binding.get("roleRef") or {}
    namespace = meta.get("namespace") or ""
    kind = {"ClusterRole": "clusterroles", "Role": "roles"}.get(ref.get("kind"))
    if kind and _allowed(request, Attributes("bind", True, api_group=ref.get("apiGroup") or "", resource=kind,
                                             namespace=namespace, name=ref.get("name", ""))):
        return
    if kind is None:  # GetRoleReferenceRules' plain error, which the storage returns as it is (a 500)
        raise internal(f"unsupported role reference kind: {go_quote(ref.get('kind') or '')}")
    rules, err = role_reference_rules(source, ref, namespace)
    if err:
        plural = "roles" if ref.get("kind") == "Role" else "clusterroles"
        raise ApiError(404, "NotFound", f"{plural}.{GROUP} {go_quote(ref.get('name', ''))} not found",
                       {"name": ref.get("name", ""), "group": GROUP, "kind": plural})
    why = _confirm_no_escalation(request, namespace, rules)
    if why is not None:
        raise new_forbidden(GROUP, resource, meta["name"], why)
