"""RBAC, the auth APIs, ServiceAccount tokens and impersonation through the real kubectl and the official client.

Each expected string is upstream's (docs/fidelity.md names the source of each); one cluster serves the module.
"""
from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request

import pytest
import yaml

from tests.conftest import wait_for

FORBIDDEN_LIST_PODS = ('pods is forbidden: User "system:serviceaccount:rbac-a:reader" cannot list resource "pods" '
                       'in API group "" in the namespace "rbac-a"')


@pytest.fixture(scope="module")
def ns(kubectl):
    kubectl("create", "namespace", "rbac-a")
    kubectl("create", "serviceaccount", "reader", "-n", "rbac-a")
    return "rbac-a"


def _server(cluster) -> tuple[str, ssl.SSLContext]:
    cfg = yaml.safe_load(cluster.kubeconfig.read_text())
    ctx = ssl.create_default_context(cafile=str(cluster.home / "clusters" / cluster.name / "pki" / "ca.crt"))
    return cfg["clusters"][0]["cluster"]["server"], ctx


def _get(cluster, path: str, token: str | None = None) -> tuple[int, dict | str]:
    server, ctx = _server(cluster)
    req = urllib.request.Request(server + path, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, context=ctx) as resp:
            body = resp.read().decode()
            return resp.status, body
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def _client_with_token(cluster, token: str):
    from kubernetes import client

    server, _ = _server(cluster)
    cfg = client.Configuration()
    cfg.host = server
    cfg.ssl_ca_cert = str(cluster.home / "clusters" / cluster.name / "pki" / "ca.crt")
    cfg.api_key = {"authorization": "Bearer " + token}
    return client.ApiClient(cfg)


# --- the admin user, whoami, can-i -----------------------------------------------------------------------------
def test_whoami_is_kinds_admin(kubectl):
    out = kubectl("auth", "whoami").stdout.splitlines()
    assert [line.split(None, 1) for line in out] == [
        ["ATTRIBUTE", "VALUE"], ["Username", "kubernetes-admin"],
        ["Groups", "[kubeadm:cluster-admins system:authenticated]"]]


def test_can_i_and_list_as_admin(kubectl):
    assert kubectl("auth", "can-i", "create", "pods").stdout == "yes\n"
    assert kubectl("auth", "can-i", "*", "*").stdout == "yes\n"
    listing = kubectl("auth", "can-i", "--list").stdout.splitlines()
    assert listing[0].split() == ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"]
    assert listing[1].split() == ["*.*", "[]", "[]", "[*]"]
    assert listing[2].split() == ["[*]", "[]", "[*]"]
    assert ["selfsubjectreviews.authentication.k8s.io", "[]", "[]", "[create]"] in [r.split() for r in listing]


def test_bootstrap_roles_as_kind_has_them(kubectl):
    roles = kubectl("get", "clusterroles").stdout.splitlines()
    assert roles[0].split() == ["NAME", "CREATED", "AT"]
    names = {r.split()[0] for r in roles[1:]}
    assert {"cluster-admin", "admin", "edit", "view", "system:discovery", "system:basic-user",
            "system:public-info-viewer", "system:node", "system:controller:deployment-controller",
            "system:controller:clusterrole-aggregation-controller", "kubeadm:get-nodes"} <= names
    view = json.loads(kubectl("get", "clusterrole", "view", "-o", "json").stdout)
    assert view["metadata"]["labels"] == {"kubernetes.io/bootstrapping": "rbac-defaults",
                                          "rbac.authorization.k8s.io/aggregate-to-edit": "true"}
    assert view["metadata"]["annotations"] == {"rbac.authorization.kubernetes.io/autoupdate": "true"}
    assert {"apiGroups": ["apps"], "resources": ["controllerrevisions", "daemonsets", "daemonsets/status",
            "deployments", "deployments/scale", "deployments/status", "replicasets", "replicasets/scale",
            "replicasets/status", "statefulsets", "statefulsets/scale", "statefulsets/status"],
            "verbs": ["get", "list", "watch"]} in view["rules"]
    bindings = kubectl("get", "clusterrolebindings").stdout.splitlines()
    assert bindings[0].split() == ["NAME", "ROLE", "AGE"]
    assert ["kubeadm:cluster-admins", "ClusterRole/cluster-admin"] == bindings[
        [b.split()[0] for b in bindings].index("kubeadm:cluster-admins")].split()[:2]


def test_aggregation_fills_rules_from_labelled_roles(kubectl):
    kubectl("create", "-f", "-", input=yaml.safe_dump({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "widgets-view", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get", "list"]}]}))
    rule = {"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get", "list"]}
    for role in ("view", "edit", "admin"):  # view aggregates it, edit aggregates view, admin aggregates edit
        wait_for(lambda: rule in (json.loads(kubectl("get", "clusterrole", role, "-o", "json").stdout)["rules"]),
                 timeout=20, what=f"{role} to aggregate widgets-view")


# --- ServiceAccounts acting within and outside their RBAC ----------------------------------------------------
def test_service_account_token_outside_and_within_rbac(cluster, kubectl, ns):
    from kubernetes import client

    token = kubectl("create", "token", "reader", "-n", ns).stdout.strip()
    core = client.CoreV1Api(_client_with_token(cluster, token))
    with pytest.raises(client.ApiException) as denied:
        core.list_namespaced_pod(ns)
    assert denied.value.status == 403
    body = json.loads(denied.value.body)
    assert body["message"] == FORBIDDEN_LIST_PODS
    assert body["reason"] == "Forbidden" and body["details"] == {"kind": "pods"}
    with pytest.raises(client.ApiException) as cluster_scope:
        core.list_node()
    assert json.loads(cluster_scope.value.body)["message"] == (
        'nodes is forbidden: User "system:serviceaccount:rbac-a:reader" cannot list resource "nodes" in API '
        'group "" at the cluster scope')
    kubectl("create", "role", "pod-reader", "--verb=get,list,watch", "--resource=pods", "-n", ns)
    kubectl("create", "rolebinding", "reader-pods", "--role=pod-reader", f"--serviceaccount={ns}:reader", "-n", ns)
    assert core.list_namespaced_pod(ns).items == []
    with pytest.raises(client.ApiException) as subresource:
        core.connect_get_namespaced_pod_proxy("nothing", ns)
    assert json.loads(subresource.value.body)["message"] == (
        'pods "nothing" is forbidden: User "system:serviceaccount:rbac-a:reader" cannot get resource "pods/proxy" '
        'in API group "" in the namespace "rbac-a"')
    assert kubectl("auth", "can-i", "list", "pods", "-n", ns, f"--as=system:serviceaccount:{ns}:reader").stdout \
        == "yes\n"
    denied_can_i = kubectl("auth", "can-i", "delete", "pods", "-n", ns, f"--as=system:serviceaccount:{ns}:reader",
                           check=False)
    assert (denied_can_i.returncode, denied_can_i.stdout) == (1, "no\n")


def test_projected_token_in_a_pod_is_bound_to_it(cluster, kubectl, ns):
    kubectl("run", "tokened", "-n", ns, "--image=busybox", "--overrides",
            json.dumps({"spec": {"serviceAccountName": "reader"}}), "--", "sleep", "3600")
    wait_for(lambda: kubectl("get", "pod", "tokened", "-n", ns, "-o", "jsonpath={.status.phase}").stdout == "Running",
             what="the pod to run")
    token = kubectl("exec", "tokened", "-n", ns, "--", "cat",
                    "/var/run/secrets/kubernetes.io/serviceaccount/token").stdout.strip()
    who = kubectl("auth", "whoami", "--token", token, "-o", "json")
    info = json.loads(who.stdout)["status"]["userInfo"]
    assert info["username"] == f"system:serviceaccount:{ns}:reader"
    assert info["groups"] == ["system:serviceaccounts", f"system:serviceaccounts:{ns}", "system:authenticated"]
    assert info["extra"]["authentication.kubernetes.io/pod-name"] == ["tokened"]
    assert info["extra"]["authentication.kubernetes.io/node-name"] == [
        kubectl("get", "pod", "tokened", "-n", ns, "-o", "jsonpath={.spec.nodeName}").stdout]
    review = json.loads(kubectl("create", "-o", "json", "-f", "-", input=json.dumps({
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}})).stdout)
    assert review["status"]["authenticated"] is True
    assert review["status"]["user"]["username"] == f"system:serviceaccount:{ns}:reader"
    # a token bound to a deleted pod no longer authenticates
    kubectl("delete", "pod", "tokened", "-n", ns, "--grace-period=0", "--force")
    gone = kubectl("get", "pods", "-n", ns, "--token", token, check=False)
    assert gone.returncode == 1 and "error: You must be logged in to the server (Unauthorized)" in gone.stderr


def test_a_forged_token_is_unauthorized(cluster, kubectl, ns):
    token = kubectl("create", "token", "reader", "-n", ns).stdout.strip()
    header, claims, signature = token.split(".")
    forged = f"{header}.{claims}.{signature[:-4]}AAAA"
    assert _get(cluster, "/api/v1/namespaces", forged)[0] == 401
    too_short = kubectl("create", "token", "reader", "-n", ns, "--duration=5m", check=False)
    assert too_short.returncode == 1 and ('spec.expirationSeconds: Invalid value: 300: may not specify a duration '
                                          'less than 10 minutes') in too_short.stderr


def test_anonymous_requests(cluster):
    assert _get(cluster, "/version")[0] == 200
    assert _get(cluster, "/healthz") == (200, "ok")
    status, body = _get(cluster, "/api")
    assert status == 403 and body["message"] == 'forbidden: User "system:anonymous" cannot get path "/api"'
    status, body = _get(cluster, "/api/v1/namespaces")
    assert status == 403 and body["message"] == ('namespaces is forbidden: User "system:anonymous" cannot list '
                                                 'resource "namespaces" in API group "" at the cluster scope')


# --- impersonation ---------------------------------------------------------------------------------------------
def test_impersonation(kubectl, ns):
    who = kubectl("auth", "whoami", "--as=jane", "--as-group=devs").stdout.splitlines()
    assert [line.split(None, 1) for line in who][1:] == [["Username", "jane"],
                                                         ["Groups", "[devs system:authenticated]"]]
    denied = kubectl("get", "pods", "-n", ns, "--as=jane", check=False)
    assert denied.stderr.strip() == ('Error from server (Forbidden): pods is forbidden: User "jane" cannot list '
                                     f'resource "pods" in API group "" in the namespace "{ns}"')
    token = kubectl("create", "token", "reader", "-n", ns).stdout.strip()
    refused = kubectl("get", "pods", "-n", ns, "--token", token, "--as=jane", check=False)
    assert refused.stderr.strip() == (
        f'Error from server (Forbidden): users "jane" is forbidden: User "system:serviceaccount:{ns}:reader" cannot '
        'impersonate resource "users" in API group "" at the cluster scope')


# --- escalation prevention -------------------------------------------------------------------------------------
def test_escalation_is_refused_without_escalate_or_bind(kubectl, ns):
    kubectl("create", "role", "role-writer", "--verb=create,update", "--resource=roles.rbac.authorization.k8s.io,"
            "rolebindings.rbac.authorization.k8s.io", "-n", ns)
    kubectl("create", "rolebinding", "writer", "--role=role-writer", f"--serviceaccount={ns}:reader", "-n", ns)
    as_reader = f"--as=system:serviceaccount:{ns}:reader"
    grant = kubectl("create", "role", "secrets", "--verb=get", "--resource=secrets", "-n", ns, as_reader, check=False)
    assert grant.returncode == 1
    assert grant.stderr.strip() == (
        f'Error from server (Forbidden): roles.rbac.authorization.k8s.io "secrets" is forbidden: user '
        f'"system:serviceaccount:{ns}:reader" (groups=["system:serviceaccounts" "system:serviceaccounts:{ns}" '
        '"system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n'
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}')
    # what it holds, it may grant
    kubectl("create", "role", "pods-too", "--verb=get", "--resource=pods", "-n", ns, as_reader)
    bind = kubectl("create", "rolebinding", "admin-me", "--clusterrole=admin", "--user=me", "-n", ns, as_reader,
                   check=False)
    assert bind.returncode == 1 and "is attempting to grant RBAC permissions not currently held" in bind.stderr


def test_rbac_validation(kubectl, ns):
    bad = kubectl("create", "-f", "-", check=False, input=yaml.safe_dump({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "bad", "namespace": ns},
        "roleRef": {"apiGroup": "wrong.example.com", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "Robot", "name": "r"}]}))
    assert bad.returncode == 1
    assert bad.stderr.splitlines() == [
        'The RoleBinding "bad" is invalid: ',
        '* roleRef.apiGroup: Unsupported value: "wrong.example.com": supported values: "rbac.authorization.k8s.io"',
        '* subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"']


# --- RBAC as charts and kubectl create it ------------------------------------------------------------------------
BUNDLE = """
apiVersion: v1
kind: ServiceAccount
metadata: {name: operator, namespace: rbac-a}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: operator-role}
rules:
- {apiGroups: [""], resources: [nodes], verbs: [get, list, watch]}
- {apiGroups: [apps], resources: [daemonsets], verbs: ["*"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: operator-binding}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: operator-role}
subjects:
- {kind: ServiceAccount, name: operator, namespace: rbac-a}
"""


def test_apply_a_charts_rbac_and_act_with_it(kubectl, ns):
    assert "clusterrolebinding.rbac.authorization.k8s.io/operator-binding created" in kubectl(
        "apply", "-f", "-", input=BUNDLE).stdout
    as_operator = f"--as=system:serviceaccount:{ns}:operator"
    assert kubectl("auth", "can-i", "list", "nodes", as_operator).stdout == "yes\n"
    assert kubectl("auth", "can-i", "delete", "daemonsets.apps", "-A", as_operator).stdout == "yes\n"
    assert kubectl("auth", "can-i", "delete", "nodes", as_operator, check=False).stdout == "no\n"
    changed = BUNDLE.replace("verbs: [get, list, watch]", "verbs: [get, list, watch, patch]")
    assert "clusterrole.rbac.authorization.k8s.io/operator-role configured" in kubectl(
        "apply", "-f", "-", input=changed).stdout
    assert kubectl("auth", "can-i", "patch", "nodes", as_operator).stdout == "yes\n"
    kubectl("apply", "--server-side", "-f", "-", input=changed)
    wide = kubectl("get", "clusterrolebinding", "operator-binding", "-o", "wide").stdout.splitlines()
    assert wide[0].split() == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    assert wide[1].split()[1] == "ClusterRole/operator-role" and wide[1].split()[-1] == f"{ns}/operator"


def test_kubectl_create_bindings(kubectl, ns):
    assert kubectl("create", "clusterrolebinding", "viewers", "--clusterrole=view", "--group=viewers").stdout == \
        "clusterrolebinding.rbac.authorization.k8s.io/viewers created\n"
    assert kubectl("auth", "can-i", "list", "pods", "-n", ns, "--as=anyone", "--as-group=viewers").stdout == "yes\n"
    rows = kubectl("get", "rolebindings", "-n", ns).stdout.splitlines()
    assert rows[0].split() == ["NAME", "ROLE", "AGE"]
    assert kubectl("get", "roles", "-n", ns).stdout.splitlines()[0].split() == ["NAME", "CREATED", "AT"]
    listed = kubectl("auth", "can-i", "--list", "-n", ns, "--as=anyone", "--as-group=viewers").stdout
    assert any(line.split()[:1] == ["pods"] and line.endswith("[get list watch]")
               for line in listed.splitlines())
