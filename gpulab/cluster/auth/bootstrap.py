"""The RBAC objects a new kind cluster starts with, and ClusterRole aggregation.

The bootstrap policy (plugin/pkg/auth/authorizer/rbac/bootstrappolicy: policy.go, controller_policy.go,
namespace_policy.go) is data here: ``data/bootstrap-policy.json``, transcribed from upstream's testdata
that pins it; ``data/kubeadm-policy.json`` holds what kubeadm adds on a kind cluster. Each bootstrap object
carries ``kubernetes.io/bootstrapping: rbac-defaults`` and ``rbac.authorization.kubernetes.io/autoupdate``
as upstream's; every controller role is bound to its controller's ServiceAccount in kube-system by a
ClusterRoleBinding of the same name (controller_policy.go's ControllerRoleBindings).

:func:`aggregated_rules` is the clusterrole-aggregation controller's computation
(pkg/controller/clusterroleaggregation): the rules of every ClusterRole selected by an aggregationRule, in
name order, each rule once.
"""
from __future__ import annotations

from pathlib import Path

import orjson

from ..selectors import label_selector_from_dict, matches_labels
from .rbac import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, GROUP, ROLE_BINDINGS, ROLES

DATA = Path(__file__).resolve().parent / "data"
_RBAC_V1 = f"{GROUP}/v1"
_BOOTSTRAP_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
_AUTOUPDATE = {"rbac.authorization.kubernetes.io/autoupdate": "true"}
CONTROLLER_PREFIX = "system:controller:"
# Roles and bindings a client's first request may need (the admin's, discovery, public info, self reviews):
# seeded before the server answers, the rest right after.
EARLY = frozenset({"cluster-admin", "kubeadm:cluster-admins", "system:discovery", "system:basic-user",
                   "system:public-info-viewer"})


def _split(text: str) -> list[str]:
    return text.split(",")


def _rule(spec: list[str]) -> dict:
    if len(spec) == 2:
        return {"verbs": _split(spec[1]), "nonResourceURLs": _split(spec[0])}
    rule = {"verbs": _split(spec[2]), "apiGroups": _split(spec[0]), "resources": _split(spec[1])}
    if len(spec) == 4:
        rule["resourceNames"] = _split(spec[3])
    return rule


def _subject(text: str) -> dict:
    kind, _, rest = text.partition(":")
    if kind == "ServiceAccount":
        namespace, _, name = rest.partition("/")
        return {"kind": kind, "name": name, "namespace": namespace}
    return {"kind": kind, "apiGroup": GROUP, "name": rest}


def _meta(name: str, namespace: str | None, bootstrap: bool, labels: dict | None = None) -> dict:
    meta: dict = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if bootstrap:
        meta["labels"] = {**_BOOTSTRAP_LABELS, **(labels or {})}
        meta["annotations"] = dict(_AUTOUPDATE)
    return meta


def _role(kind: str, spec: dict, bootstrap: bool) -> dict:
    labels = {}
    if spec.get("aggregateTo"):
        labels[f"rbac.authorization.k8s.io/aggregate-to-{spec['aggregateTo']}"] = "true"
    obj = {"apiVersion": _RBAC_V1, "kind": kind, "metadata": _meta(spec["name"], spec.get("namespace"), bootstrap,
                                                                    labels)}
    if spec.get("aggregate"):
        obj["aggregationRule"] = {"clusterRoleSelectors": [
            {"matchLabels": {f"rbac.authorization.k8s.io/aggregate-to-{spec['aggregate']}": "true"}}]}
    obj["rules"] = [_rule(r) for r in spec.get("rules") or ()]
    return obj


def _binding(kind: str, spec: dict, role_kind: str, bootstrap: bool) -> dict:
    obj = {"apiVersion": _RBAC_V1, "kind": kind, "metadata": _meta(spec["name"], spec.get("namespace"), bootstrap),
           "roleRef": {"apiGroup": GROUP, "kind": role_kind, "name": spec.get("role", spec["name"])}}
    if spec.get("subjects"):
        obj["subjects"] = [_subject(s) for s in spec["subjects"]]
    return obj


def _load(name: str, bootstrap: bool) -> list[tuple[str, dict]]:
    doc = orjson.loads((DATA / name).read_bytes())
    out = [(CLUSTER_ROLES, _role("ClusterRole", s, bootstrap)) for s in doc.get("clusterRoles", ())]
    for spec in doc.get("controllerRoles", ()):
        role = {**spec, "name": CONTROLLER_PREFIX + spec["name"]}
        out.append((CLUSTER_ROLES, _role("ClusterRole", role, bootstrap)))
    out += [(CLUSTER_ROLE_BINDINGS, _binding("ClusterRoleBinding", s, "ClusterRole", bootstrap))
            for s in doc.get("clusterRoleBindings", ())]
    for spec in doc.get("controllerRoles", ()):
        binding = {"name": CONTROLLER_PREFIX + spec["name"], "subjects": [f"ServiceAccount:kube-system/{spec['name']}"]}
        out.append((CLUSTER_ROLE_BINDINGS, _binding("ClusterRoleBinding", binding, "ClusterRole", bootstrap)))
    out += [(ROLES, _role("Role", s, bootstrap)) for s in doc.get("roles", ())]
    out += [(ROLE_BINDINGS, _binding("RoleBinding", s, "Role", bootstrap)) for s in doc.get("roleBindings", ())]
    return out


def policy() -> list[tuple[str, dict]]:
    """(storage key, object) of every RBAC object a new cluster has, aggregated roles' rules filled in."""
    objects = _load("bootstrap-policy.json", True) + _load("kubeadm-policy.json", False)
    cluster_roles = [obj for key, obj in objects if key == CLUSTER_ROLES]
    aggregated = [obj for obj in cluster_roles if obj.get("aggregationRule")]
    changed = True
    while changed:  # the controller's passes until nothing changes (admin aggregates edit, which aggregates view)
        changed = False
        for obj in aggregated:
            rules = aggregated_rules(obj, cluster_roles)
            changed |= rules != obj["rules"]
            obj["rules"] = rules
    return objects


def aggregated_rules(role: dict, cluster_roles: list[dict]) -> list[dict]:
    """The rules the clusterrole-aggregation controller gives ``role`` from ``cluster_roles``."""
    selected = {}
    for selector in (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or ():
        requirements = label_selector_from_dict(selector)
        for other in cluster_roles:
            name = other["metadata"]["name"]
            if name != role["metadata"]["name"] and matches_labels(requirements, other["metadata"].get("labels")):
                selected[name] = other
    rules: list[dict] = []
    for name in sorted(selected):
        for rule in selected[name].get("rules") or ():
            if rule not in rules:
                rules.append(rule)
    return rules
