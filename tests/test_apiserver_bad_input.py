"""Bad input gets kube-apiserver's status code and message, and the server keeps serving with nothing lost."""
from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request

import pytest
import yaml


class Raw:
    """Plain HTTPS requests with the cluster's token, for bodies kubectl would refuse to send."""

    def __init__(self, cluster):
        cfg = yaml.safe_load(cluster.kubeconfig.read_text())
        self.server = cfg["clusters"][0]["cluster"]["server"]
        self.token = cfg["users"][0]["user"]["token"]
        self.ctx = ssl.create_default_context(cafile=str(cluster.home / "clusters" / cluster.name / "pki" / "ca.crt"))

    def request(self, method: str, path: str, body: bytes | None = None, content_type: str = "application/json"):
        req = urllib.request.Request(self.server + path, data=body, method=method,
                                     headers={"Authorization": f"Bearer {self.token}", "Content-Type": content_type})
        try:
            with urllib.request.urlopen(req, context=self.ctx) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read() or b"null")


@pytest.fixture(scope="module")
def raw(cluster):
    cluster.kubectl("create", "configmap", "survivor", "--from-literal=keep=me")
    return Raw(cluster)


def test_malformed_json_body(raw):
    """create.go transformDecodeError: no kind could be read, so the message names the expected type and
    summarizes the body (its first 30 bytes, hex unless it starts with "{")."""
    code, body = raw.request("POST", "/api/v1/namespaces/default/configmaps", b'{"kind": "ConfigMap", ')
    assert code == 400 and body["reason"] == "BadRequest"
    assert body["message"] == ('the object provided is unrecognized (must be of type ConfigMap): couldn\'t get '
                               'version/kind; json parse error: unexpected end of JSON input ({"kind": "ConfigMap", )')
    code, body = raw.request("POST", "/api/v1/namespaces", b"x")
    assert code == 400
    assert body["message"] == ("the object provided is unrecognized (must be of type Namespace): couldn't get "
                               "version/kind; json parse error: invalid character 'x' looking for beginning of value "
                               "(78)")


def test_malformed_yaml_is_refused_by_kubectl_and_loses_nothing(cluster, raw):
    proc = cluster.kubectl("apply", "-f", "-", input="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [x\n",
                           check=False)
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: error parsing STDIN: error converting YAML to JSON: yaml: ")
    code, body = raw.request("POST", "/api/v1/namespaces/default/configmaps", b"a: [b\n", "application/yaml")
    assert code == 400 and body["message"].startswith(
        "the object provided is unrecognized (must be of type ConfigMap): error converting YAML to JSON: yaml: ")
    assert body["message"].endswith(" (613a205b620a)")  # summarizeData: a body not starting with "{" is hex
    assert cluster.kubectl("get", "cm", "survivor", "-o", "jsonpath={.data.keep}").stdout == "me"


def test_unknown_kind(cluster):
    proc = cluster.kubectl("apply", "-f", "-", input="apiVersion: v1\nkind: GpuThing\nmetadata:\n  name: x\n",
                           check=False)
    assert proc.returncode == 1
    assert 'no matches for kind "GpuThing" in version "v1"' in proc.stderr
    assert "ensure CRDs are installed first" in proc.stderr


def test_unknown_field_strict_and_warn(cluster):
    pod = ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: strict\nspec:\n  gpuCount: 1\n  containers:\n"
           "  - name: c\n    image: busybox\n")
    proc = cluster.kubectl("apply", "-f", "-", input=pod, check=False)
    assert proc.returncode == 1
    assert ('Error from server (BadRequest): error when creating "STDIN": Pod in version "v1" cannot be handled as '
            'a Pod: strict decoding error: unknown field "spec.gpuCount"') in proc.stderr
    proc = cluster.kubectl("apply", "--validate=warn", "-f", "-", input=pod)
    assert 'Warning: unknown field "spec.gpuCount"' in proc.stderr
    assert proc.stdout.strip() == "pod/strict created"
    # The typed decoder drops what it warned about: nothing unknown is stored.
    assert "gpuCount" not in json.loads(cluster.kubectl("get", "pod", "strict", "-o", "json").stdout)["spec"]


@pytest.mark.parametrize("validation", ["Ignore", "Warn"])
def test_unknown_fields_of_built_in_kinds_are_dropped(raw, validation):
    """What the Python client sends by default (no fieldValidation, or Warn): unknown fields are not stored, at any
    depth (the typed decoder of k8s.io/apimachinery/pkg/runtime/serializer/json, strict or not, only keeps the Go
    type's fields)."""
    name = f"unknown-{validation.lower()}"
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "lables": {"a": "b"}},
            "data": {"k": "v"}, "datum": {"x": "y"}}
    code, created = raw.request("POST", f"/api/v1/namespaces/default/configmaps?fieldValidation={validation}",
                                json.dumps(body).encode())
    assert code == 201
    code, stored = raw.request("GET", f"/api/v1/namespaces/default/configmaps/{name}")
    for obj in (created, stored):
        assert "datum" not in obj and "lables" not in obj["metadata"] and obj["data"] == {"k": "v"}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [{"name": "c", "image": "busybox", "gpus": 1}], "gpuCount": 1}}
    code, created = raw.request("POST", f"/api/v1/namespaces/default/pods?fieldValidation={validation}",
                                json.dumps(pod).encode())
    assert code == 201 and "gpuCount" not in created["spec"] and "gpus" not in created["spec"]["containers"][0]


def test_invalid_name(cluster):
    proc = cluster.kubectl("create", "configmap", "Bad_Name", check=False)
    assert proc.returncode == 1
    assert ('ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 '
            "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with "
            "an alphanumeric character (e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')") in proc.stderr


def test_fractional_gpu_is_refused(cluster):
    pod = ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: half-gpu\nspec:\n  containers:\n  - name: c\n"
           "    image: busybox\n    resources:\n      limits:\n        nvidia.com/gpu: 0.5\n")
    proc = cluster.kubectl("apply", "-f", "-", input=pod, check=False)
    assert proc.returncode == 1
    assert 'The Pod "half-gpu" is invalid: ' in proc.stderr
    assert "spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: \"500m\": must be an integer" \
        in proc.stderr


def test_huge_body(cluster, raw, tmp_path):
    big = tmp_path / "big.txt"
    big.write_text("x" * (4 * 1024 * 1024))
    proc = cluster.kubectl("create", "configmap", "big", f"--from-file={big}", check=False)
    assert proc.returncode == 1
    assert "Request entity too large: limit is 3145728" in proc.stderr
    assert cluster.kubectl("get", "cm", "survivor", "-o", "jsonpath={.data.keep}").stdout == "me"


def test_wrong_content_type(raw):
    code, body = raw.request("POST", "/api/v1/namespaces/default/configmaps", b"name=x", "text/plain")
    assert code == 415 and body["reason"] == "UnsupportedMediaType"
    code, body = raw.request("PATCH", "/api/v1/namespaces/default/configmaps/survivor", b"{}", "application/json")
    assert code == 415 and body["reason"] == "UnsupportedMediaType"


def test_not_found_and_already_exists(cluster):
    proc = cluster.kubectl("get", "pod", "nope", check=False)
    assert proc.stderr.strip() == 'Error from server (NotFound): pods "nope" not found'
    proc = cluster.kubectl("create", "configmap", "survivor", check=False)
    assert proc.stderr.strip() == 'error: failed to create configmap: configmaps "survivor" already exists'


def test_conflict_on_stale_update(cluster, raw):
    code, cm = raw.request("GET", "/api/v1/namespaces/default/configmaps/survivor")
    stale = dict(cm)
    stale["metadata"] = {**cm["metadata"], "resourceVersion": "1"}
    code, body = raw.request("PUT", "/api/v1/namespaces/default/configmaps/survivor", json.dumps(stale).encode())
    assert code == 409 and body["reason"] == "Conflict"
    assert body["message"] == ('Operation cannot be fulfilled on configmaps "survivor": the object has been modified; '
                               "please apply your changes to the latest version and try again")
    assert cluster.kubectl("get", "cm", "survivor", "-o", "jsonpath={.data.keep}").stdout == "me"
