"""Unit tests of the pure parts of gpulab/cluster/auth: request attributes, rule matching and covering,
the rule resolver's reasons, RBAC validation and printing, tokens, impersonation headers."""
from __future__ import annotations

import pytest
from multidict import CIMultiDict, MultiDict

from gpulab.cluster.auth import bootstrap, impersonation, requestinfo, rules, tokens
from gpulab.cluster.auth import user as users
from gpulab.cluster.auth.rbac import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, ROLE_BINDINGS, ROLES, visit_rules
from gpulab.cluster.errors import ApiError
from gpulab.cluster.printers import rbac as printers
from gpulab.cluster.validation import rbac as validation


def test_request_attributes():
    q = MultiDict
    attrs = requestinfo.resolve("GET", "/api/v1/namespaces/ns/pods", q())
    assert (attrs.verb, attrs.resource, attrs.namespace, attrs.name) == ("list", "pods", "ns", "")
    assert requestinfo.resolve("GET", "/api/v1/namespaces/ns/pods", q(watch="true")).verb == "watch"
    assert requestinfo.resolve("GET", "/api/v1/namespaces/ns/pods", q(watch="0")).verb == "list"
    named = requestinfo.resolve("GET", "/api/v1/pods", q(fieldSelector="metadata.name=x"))
    assert (named.verb, named.name) == ("list", "x")
    assert requestinfo.resolve("GET", "/api/v1/watch/namespaces/ns/pods/x", q()).verb == "watch"
    assert requestinfo.resolve("DELETE", "/apis/apps/v1/namespaces/ns/deployments", q()).verb == "deletecollection"
    sub = requestinfo.resolve("GET", "/api/v1/namespaces/ns/pods/p/log", q())
    assert (sub.verb, sub.resource, sub.subresource, sub.name) == ("get", "pods", "log", "p")
    status = requestinfo.resolve("PUT", "/api/v1/namespaces/ns/status", q())
    assert (status.resource, status.name, status.subresource, status.namespace) == ("namespaces", "ns", "status", "ns")
    proxy = requestinfo.resolve("GET", "/api/v1/proxy/namespaces/ns/services/s/a/b", q())
    assert (proxy.verb, proxy.subresource) == ("proxy", "")
    assert not requestinfo.resolve("GET", "/apis/apps", q()).resource_request
    assert requestinfo.resolve("GET", "/healthz", q()).verb == "get"


def test_rule_matching():
    attrs = rules.Attributes("get", True, api_group="apps", resource="deployments", subresource="scale", name="d")
    assert rules.rule_allows(attrs, {"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["get"]})
    assert not rules.rule_allows(attrs, {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]})
    assert not rules.rule_allows(attrs, {"apiGroups": ["*"], "resources": ["*"], "verbs": ["get"],
                                         "resourceNames": ["other"]})
    url = rules.Attributes("get", False, path="/apis/apps/v1")
    assert rules.rule_allows(url, {"nonResourceURLs": ["/apis/*"], "verbs": ["get"]})
    assert not rules.rule_allows(url, {"nonResourceURLs": ["/api/*"], "verbs": ["get"]})


def test_covers_and_compact():
    owned = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]
    ok, missing = rules.covers(owned, [{"apiGroups": [""], "resources": ["pods", "secrets"], "verbs": ["get"]}])
    assert not ok and missing == [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]
    merged = rules.compact([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
                            {"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}])
    assert [rules.compact_string(r) for r in merged] == ['{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}']


class _Source:
    def __init__(self, objects):
        self.objects = objects

    def lookup(self, key, name, namespace=""):
        return next((o for k, o in self.objects if k == key and o["metadata"]["name"] == name
                     and o["metadata"].get("namespace", "") == namespace), None)

    def list(self, key):
        return [o for k, o in self.objects if k == key]


def test_forbidden_reason_names_missing_roles():
    source = _Source([(CLUSTER_ROLE_BINDINGS, {"metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole",
                                                                                     "name": "gone"},
                                               "subjects": [{"kind": "User", "name": "u"}]}),
                      (ROLE_BINDINGS, {"metadata": {"name": "rb", "namespace": "ns"},
                                       "roleRef": {"kind": "Role", "name": "r"},
                                       "subjects": [{"kind": "ServiceAccount", "name": "sa"}]}),
                      (ROLES, {"metadata": {"name": "r", "namespace": "ns"},
                               "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]})])
    found, errors = visit_rules(source, users.UserInfo("u"), "")
    assert found == [] and errors == ['clusterrole.rbac.authorization.k8s.io "gone" not found']
    found, _ = visit_rules(source, users.UserInfo("system:serviceaccount:ns:sa"), "ns")
    assert found[0][1] == 'RoleBinding "rb/ns" of Role "r" to ServiceAccount "sa/ns"'
    attrs = rules.Attributes("list", True, resource="pods", namespace="ns")
    denied = requestinfo.forbidden("u", attrs, 'RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found')
    assert denied.message == ('pods is forbidden: User "u" cannot list resource "pods" in API group "" in the '
                              'namespace "ns": RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found')


def test_bootstrap_policy_aggregates():
    objects = dict(((k, o["metadata"]["name"]), o) for k, o in bootstrap.policy() if k == CLUSTER_ROLES)
    admin = objects[(CLUSTER_ROLES, "admin")]["rules"]
    assert {"apiGroups": ["authorization.k8s.io"], "resources": ["localsubjectaccessreviews"],
            "verbs": ["create"]} in admin
    assert {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["get", "list", "watch"]} \
        in admin  # through edit, which aggregates view
    controller = objects[(CLUSTER_ROLES, "system:controller:job-controller")]
    assert controller["metadata"]["labels"] == {"kubernetes.io/bootstrapping": "rbac-defaults"}


def test_validation():
    errs = validation.validate_cluster_role({"metadata": {"name": "r"}, "rules": [
        {"verbs": ["get"], "nonResourceURLs": ["/x"], "resources": ["pods"]}, {"apiGroups": [""]}]})
    assert [str(e) for e in errs] == [
        'rules[0].nonResourceURLs: Invalid value: ["/x"]: rules cannot apply to both regular resources and '
        'non-resource URLs',
        "rules[1].verbs: Required value: verbs must contain at least one value",
        "rules[1].resources: Required value: resource rules must supply at least one resource"]
    crb = {"metadata": {"name": "b"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                                  "name": "r"}, "subjects": [{"kind": "ServiceAccount", "name": "s"}]}
    assert [str(e) for e in validation.validate_cluster_role_binding(crb)] == [
        'roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"',
        "subjects[0].namespace: Required value"]


def test_printers():
    binding = {"metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "view"},
               "subjects": [{"kind": "User", "name": "u"}, {"kind": "ServiceAccount", "name": "s", "namespace": "n"}]}
    assert printers.binding_cells(binding, 0) == ["b", "ClusterRole/view", "<unknown>", "u", "", "n/s"]
    assert [c["name"] for c in printers.rolebinding_columns()] == ["Name", "Role", "Age", "Users", "Groups",
                                                                    "ServiceAccounts"]


def test_tokens(tmp_path):
    issuer = tokens.TokenIssuer(tokens.load_signing_key(tmp_path / "sa.key"))
    token, exp = issuer.issue("ns", "sa", "uid", now=1000.0, expiration=3607,
                              binding=tokens.Binding("Pod", "p", "pu", "n", "nu"))
    claims = issuer.verify(token, now=2000.0)
    assert exp == 1000 + 365 * 24 * 3600 and claims["kubernetes.io"]["warnafter"] == 4607
    assert claims["sub"] == "system:serviceaccount:ns:sa"
    with pytest.raises(tokens.InvalidToken):
        issuer.verify(token, now=2000.0, audiences=("other",))
    with pytest.raises(tokens.InvalidToken):
        issuer.verify(token, now=exp + 1.0)
    other = tokens.TokenIssuer(tokens.load_signing_key(tmp_path / "other.key"))
    with pytest.raises(tokens.InvalidToken):
        other.verify(token, now=2000.0)


def test_impersonation_groups():
    def allow(user, attrs):
        pass

    as_sa = impersonation.impersonate(users.ADMIN, CIMultiDict({"Impersonate-User": "system:serviceaccount:n:s"}),
                                      allow)
    assert as_sa.groups == ("system:serviceaccounts", "system:serviceaccounts:n", "system:authenticated")
    anon = impersonation.impersonate(users.ADMIN, CIMultiDict({"Impersonate-User": "system:anonymous"}), allow)
    assert anon.groups == ("system:unauthenticated",)
    with pytest.raises(ApiError) as no_user:
        impersonation.impersonate(users.ADMIN, CIMultiDict({"Impersonate-Group": "g"}), allow)
    assert no_user.value.code == 500
    assert no_user.value.message == "Internal error occurred: requested [{Group  g    }] without impersonating a user"
