"""kubectl's typed clients send protobuf bodies: what they create must equal the same object sent as YAML.

``kubectl create configmap|secret|namespace|serviceaccount|deployment|job|priorityclass|poddisruptionbudget|
service`` POST ``application/vnd.kubernetes.protobuf``; ``kubectl create -f`` POSTs JSON. Both must store the
same object and print the same ``<resource>/<name> created`` line.
"""
from __future__ import annotations

import base64
import json
import ssl
import time
import urllib.error
import urllib.request

import pytest
import yaml

PROTOBUF = "application/vnd.kubernetes.protobuf"

# (resource, name, kubectl create arguments, the equivalent manifest); namespaced objects go to namespace
# "pb" (protobuf) and "ym" (YAML) under the same name, cluster-scoped ones are named pb-... and ym-...
CASES = {
    "configmap": ("configmap", "settings", ["configmap", "settings", "--from-literal=a=b", "--from-literal=empty="], """
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {a: b, empty: ""}
"""),
    "secret": ("secret", "creds", ["secret", "generic", "creds", "--from-literal=user=admin"], """
apiVersion: v1
kind: Secret
metadata: {name: creds}
type: Opaque
data: {user: YWRtaW4=}
"""),
    "serviceaccount": ("serviceaccount", "runner", ["serviceaccount", "runner"], """
apiVersion: v1
kind: ServiceAccount
metadata: {name: runner}
"""),
    "deployment": ("deployment.apps", "web", ["deployment", "web", "--image=nginx", "--replicas=2", "--port=8080"], """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: nginx, ports: [{containerPort: 8080}]}]
"""),
    "job": ("job.batch", "hello", ["job", "hello", "--image=busybox", "--", "echo", "hi"], """
apiVersion: batch/v1
kind: Job
metadata: {name: hello}
spec:
  template:
    spec:
      containers: [{name: hello, image: busybox, command: [echo, hi]}]
      restartPolicy: Never
"""),
    "poddisruptionbudget": ("poddisruptionbudget.policy", "web",
                            ["poddisruptionbudget", "web", "--selector=app=web", "--min-available=50%"], """
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: 50%
  selector: {matchLabels: {app: web}}
"""),
    "service": ("service", "web", ["service", "clusterip", "web", "--tcp=80:8080"], """
apiVersion: v1
kind: Service
metadata: {name: web, labels: {app: web}}
spec:
  type: ClusterIP
  selector: {app: web}
  ports: [{name: 80-8080, port: 80, protocol: TCP, targetPort: 8080}]
"""),
    "namespace": ("namespace", "{prefix}-team", ["namespace", "{prefix}-team"], """
apiVersion: v1
kind: Namespace
metadata: {name: ym-team}
"""),
    "priorityclass": ("priorityclass.scheduling.k8s.io", "{prefix}-high",
                      ["priorityclass", "{prefix}-high", "--value=1000", "--description=GPU jobs"], """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: ym-high}
value: 1000
description: GPU jobs
"""),
}
CLUSTER_SCOPED = {"namespace", "priorityclass"}


@pytest.fixture(scope="module")
def namespaces(cluster):
    cluster.kubectl("create", "-f", "-", input="apiVersion: v1\nkind: Namespace\nmetadata: {name: pb}\n---\n"
                                              "apiVersion: v1\nkind: Namespace\nmetadata: {name: ym}\n")


def _comparable(obj: dict, name: str) -> str:
    """The object without what differs between any two creations: identity, times, status, allocations."""
    meta = obj["metadata"]
    uid = meta["uid"]
    for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "namespace"):
        meta.pop(key, None)
    obj.pop("status", None)
    for key in ("clusterIP", "clusterIPs"):
        obj.get("spec", {}).pop(key, None)
    return json.dumps(obj, sort_keys=True, indent=1).replace(uid, "<uid>").replace(name, "<name>")


@pytest.mark.parametrize("case", sorted(CASES))
def test_kubectl_create_over_protobuf_stores_what_yaml_stores(cluster, namespaces, case):
    resource, name, args, manifest = CASES[case]
    pb_name, ym_name = name.format(prefix="pb"), name.format(prefix="ym")
    pb_where, ym_where = ([], []) if case in CLUSTER_SCOPED else (["-n", "pb"], ["-n", "ym"])
    proto = cluster.kubectl("-v=8", *pb_where, "create", *(a.format(prefix="pb") for a in args))
    assert proto.stdout == f"{resource}/{pb_name} created\n"
    assert f"Content-Type: {PROTOBUF}" in proto.stderr  # the typed client really sent protobuf
    via_yaml = cluster.kubectl(*ym_where, "create", "-f", "-", input=manifest)
    assert via_yaml.stdout == f"{resource}/{ym_name} created\n"

    def stored(where: list[str], object_name: str) -> str:
        out = cluster.kubectl(*where, "get", resource, object_name, "-o", "json").stdout
        return _comparable(json.loads(out), object_name)

    deadline = time.monotonic() + 10  # controllers (revision annotations, defaults of status) may still write
    while True:
        ours, theirs = stored(pb_where, pb_name), stored(ym_where, ym_name)
        if ours == theirs or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert ours == theirs


def test_server_side_dry_run_over_protobuf(cluster, namespaces):
    out = cluster.kubectl("-n", "pb", "create", "configmap", "dry", "--from-literal=k=v", "--dry-run=server",
                          "-o", "json")
    obj = json.loads(out.stdout)
    assert (obj["kind"], obj["metadata"]["name"], obj["data"]) == ("ConfigMap", "dry", {"k": "v"})
    assert cluster.kubectl("-n", "pb", "get", "configmap", "dry", check=False).returncode == 1


def _post(cluster, path: str, body: bytes) -> tuple[int, dict]:
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    server = config["clusters"][0]["cluster"]
    context = ssl.create_default_context(
        cadata=base64.b64decode(server["certificate-authority-data"]).decode())
    request = urllib.request.Request(server["server"] + path, data=body, method="POST", headers={
        "Content-Type": PROTOBUF, "Accept": f"{PROTOBUF},application/json",
        "Authorization": f"Bearer {config['users'][0]['user']['token']}"})
    try:
        with urllib.request.urlopen(request, context=context) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_a_body_that_is_not_protobuf_gets_the_apiserver_400(cluster):
    code, status = _post(cluster, "/api/v1/namespaces/default/configmaps", b"hello")
    assert (code, status["reason"]) == (400, "BadRequest")
    assert status["message"] == ("the object provided is unrecognized (must be of type ConfigMap): provided data "
                                 "does not appear to be a protobuf message, expected prefix [107 56 115 0] "
                                 "(68656c6c6f)")


def test_an_unregistered_kind_gets_the_apiserver_400(cluster):
    typemeta = b"\x0a\x02v1\x12\x03Foo"
    code, status = _post(cluster, "/api/v1/namespaces/default/configmaps",
                         b"k8s\x00\x0a" + bytes([len(typemeta)]) + typemeta + b"\x12\x00")
    assert code == 400
    assert status["message"] == ('Foo in version "v1" cannot be handled as a ConfigMap: no kind "Foo" is registered '
                                 'for version "v1" in scheme "pkg/api/legacyscheme/scheme.go:30"')


def _get(cluster, path: str, accept: str) -> tuple[int, str, bytes]:
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    server = config["clusters"][0]["cluster"]
    context = ssl.create_default_context(cadata=base64.b64decode(server["certificate-authority-data"]).decode())
    request = urllib.request.Request(server["server"] + path, headers={
        "Accept": accept, "Authorization": f"Bearer {config['users'][0]['user']['token']}"})
    try:
        with urllib.request.urlopen(request, context=context) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], err.read()


@pytest.mark.parametrize("path", ["/apis/apps/v1/namespaces/pb/deployments/web",
                                  "/api/v1/namespaces/pb/configmaps/settings", "/api/v1/nodes/gpulab-worker2"])
def test_get_answers_protobuf_to_a_client_that_asks_for_it(cluster, namespaces, path):
    from gpulab.cluster.server import protobuf

    cluster.kubectl("-n", "pb", "apply", "-f", "-", input=CASES["configmap"][3] + "---" + CASES["deployment"][3])
    code, content_type, body = _get(cluster, path, PROTOBUF)
    assert (code, content_type, body[:4]) == (200, PROTOBUF, b"k8s\x00")
    decoded, _, problem = protobuf.decode(body, ("", ""))  # the reader of kubectl's own protobuf bodies
    assert problem is None
    _, _, as_json = _get(cluster, path, "application/json")
    assert decoded == json.loads(as_json)


def test_a_list_answers_protobuf_to_a_client_that_asks_for_it(cluster, namespaces):
    code, content_type, body = _get(cluster, "/api/v1/nodes", PROTOBUF)
    assert (code, content_type) == (200, PROTOBUF)
    assert body.startswith(b"k8s\x00\x0a\x0e\x0a\x02v1\x12\x08NodeList\x12")  # typeMeta{v1, NodeList}, raw
    names = json.loads(_get(cluster, "/api/v1/nodes", "application/json")[2])["items"]
    assert all(f"\x0a{chr(len(n['metadata']['name']))}{n['metadata']['name']}".encode() in body for n in names)


def test_kubectls_typed_clients_read_protobuf_answers(cluster, namespaces):
    cluster.kubectl("-n", "pb", "apply", "-f", "-", input=CASES["deployment"][3])
    history = cluster.kubectl("-v=8", "-n", "pb", "rollout", "history", "deployment/web")
    assert history.stdout == "deployment.apps/web \nREVISION  CHANGE-CAUSE\n1         <none>\n\n"
    assert f"Content-Type: {PROTOBUF}" in history.stderr.split("replicasets")[-1]  # the ReplicaSet list
    described = cluster.kubectl("-v=8", "-n", "pb", "describe", "deployment", "web")
    assert f"Content-Type: {PROTOBUF}" in described.stderr
    assert "Selector:               app=web\n" in described.stdout
    assert "NewReplicaSet:   web-" in described.stdout


def test_custom_resources_have_no_protobuf(cluster):
    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Cluster", "names": {"plural": "widgets", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}))
    cluster.kubectl("wait", "--for=condition=Established", "crd/widgets.example.com")
    code, _, body = _get(cluster, "/apis/example.com/v1/widgets", PROTOBUF)
    assert (code, json.loads(body)["reason"]) == (406, "NotAcceptable")
    code, content_type, _ = _get(cluster, "/apis/example.com/v1/widgets", f"{PROTOBUF}, application/json")
    assert (code, content_type) == (200, "application/json")
