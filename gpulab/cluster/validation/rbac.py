"""rbac.authorization.k8s.io/v1: a port of pkg/apis/rbac/validation/validation.go.

Role and binding names are path segment names (ValidateRBACName), so ``system:node`` is a valid name; a
subject that is a ServiceAccount has a DNS subdomain name, and in a ClusterRoleBinding a namespace.
"""
from __future__ import annotations

from ..errors import FieldError
from .field import invalid, not_supported, required
from .formats import name_is_dns_subdomain, path_segment_name
from .labels import selector_parse_error, validate_label_selector
from .meta import validate_object_meta, validate_object_meta_update
from .path import Path

GROUP = "rbac.authorization.k8s.io"


def _policy_rule(rule: dict, namespaced: bool, path: Path) -> list[FieldError]:
    errs = []
    if not rule.get("verbs"):
        errs.append(required(path.child("verbs"), "verbs must contain at least one value"))
    urls = rule.get("nonResourceURLs") or []
    if urls:
        if namespaced:
            errs.append(invalid(path.child("nonResourceURLs"), urls, "namespaced rules cannot apply to non-resource URLs"))
        if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
            errs.append(invalid(path.child("nonResourceURLs"), urls,
                                "rules cannot apply to both regular resources and non-resource URLs"))
        return errs
    if not rule.get("apiGroups"):
        errs.append(required(path.child("apiGroups"), "resource rules must supply at least one api group"))
    if not rule.get("resources"):
        errs.append(required(path.child("resources"), "resource rules must supply at least one resource"))
    return errs


def _rules(obj: dict, namespaced: bool) -> list[FieldError]:
    return [e for i, rule in enumerate(obj.get("rules") or []) for e in _policy_rule(rule, namespaced,
                                                                                    Path("rules").index(i))]


def validate_role(role: dict) -> list[FieldError]:
    return validate_object_meta(role.get("metadata") or {}, True, path_segment_name) + _rules(role, True)


def validate_cluster_role(role: dict) -> list[FieldError]:
    errs = validate_object_meta(role.get("metadata") or {}, False, path_segment_name) + _rules(role, False)
    aggregation = role.get("aggregationRule")
    if aggregation is not None:
        path = Path("aggregationRule").child("clusterRoleSelectors")
        selectors = aggregation.get("clusterRoleSelectors") or []
        if not selectors:
            errs.append(required(path, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
        for i, selector in enumerate(selectors):
            errs += validate_label_selector(selector, path.index(i))
            if selector_parse_error(selector):
                errs.append(invalid(path.index(i), selector, "invalid label selector."))
    return errs


def _subject(subject: dict, namespaced: bool, path: Path) -> list[FieldError]:
    errs = []
    name, kind, group = subject.get("name") or "", subject.get("kind") or "", subject.get("apiGroup") or ""
    if not name:
        errs.append(required(path.child("name")))
    if kind == "ServiceAccount":
        if name:
            errs += [invalid(path.child("name"), name, m) for m in name_is_dns_subdomain(name)]
        if group:
            errs.append(not_supported(path.child("apiGroup"), group, [""]))
        if not namespaced and not subject.get("namespace"):
            errs.append(required(path.child("namespace")))
    elif kind in ("User", "Group"):
        if group != GROUP:
            errs.append(not_supported(path.child("apiGroup"), group, [GROUP]))
    else:
        errs.append(not_supported(path.child("kind"), kind, ["ServiceAccount", "User", "Group"]))
    return errs


def _binding(binding: dict, namespaced: bool) -> list[FieldError]:
    errs = validate_object_meta(binding.get("metadata") or {}, namespaced, path_segment_name)
    ref, path = binding.get("roleRef") or {}, Path("roleRef")
    if (ref.get("apiGroup") or "") != GROUP:
        errs.append(not_supported(path.child("apiGroup"), ref.get("apiGroup") or "", [GROUP]))
    kinds = ["Role", "ClusterRole"] if namespaced else ["ClusterRole"]
    if (ref.get("kind") or "") not in kinds:
        errs.append(not_supported(path.child("kind"), ref.get("kind") or "", kinds))
    role_name = ref.get("name") or ""
    if not role_name:
        errs.append(required(path.child("name")))
    else:
        errs += [invalid(path.child("name"), role_name, m) for m in path_segment_name(role_name, False)]
    for i, subject in enumerate(binding.get("subjects") or []):
        errs += _subject(subject, namespaced, Path("subjects").index(i))
    return errs


def validate_role_binding(binding: dict) -> list[FieldError]:
    return _binding(binding, True)


def validate_cluster_role_binding(binding: dict) -> list[FieldError]:
    return _binding(binding, False)


def validate_update(new: dict, old: dict, validate) -> list[FieldError]:
    """ValidateRoleUpdate and friends: the object's own checks, then ObjectMeta's update checks."""
    return validate(new) + validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})


def validate_binding_update(new: dict, old: dict, validate) -> list[FieldError]:
    """ValidateRoleBindingUpdate / ValidateClusterRoleBindingUpdate: the roleRef cannot change."""
    errs = validate_update(new, old, validate)
    if _role_ref(new) != _role_ref(old):
        errs.append(invalid(Path("roleRef"), _role_ref(new), "cannot change roleRef"))
    return errs


def _role_ref(binding: dict) -> dict:
    ref = binding.get("roleRef") or {}
    return {"apiGroup": ref.get("apiGroup") or "", "kind": ref.get("kind") or "", "name": ref.get("name") or ""}
