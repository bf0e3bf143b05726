"""Hostile and careless requests get kube-apiserver's answer in bounded time: the server keeps answering its
health probe meanwhile, and nothing already stored is lost (issue 16, the server items)."""
from __future__ import annotations

import json
import time

import pytest

from .responsiveness import Api, assert_responsive, during

NS = "/api/v1/namespaces/default"
BOMB = b"".join([b'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'] +
                [f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n".encode() for p, c in zip("abcdefgh", "bcdefghi")])


@pytest.fixture(scope="module")
def api(cluster):
    cluster.kubectl("create", "configmap", "survivor", "--from-literal=keep=me")
    return Api(cluster)


def _survivor_intact(cluster):
    assert cluster.kubectl("get", "cm", "survivor", "-o", "jsonpath={.data.keep}").stdout == "me"


def _bad(api, *args, **kwargs):
    """Send a bad request while probing /healthz; the first reply is the one checked. On a loaded machine a
    probe may be late once; a stalled server is late every time, so the request is repeated up to twice."""
    first = None
    for attempt in range(3):
        reply, latencies = during(api, lambda: api.request(*args, **kwargs))
        first = first or reply
        try:
            assert_responsive(latencies)
            return first
        except AssertionError:
            if attempt == 2:
                raise
    return first


def _configmap(name: str, **extra) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, **extra})


# --- YAML aliases (go-yaml v2 decode.go) ------------------------------------------------------------------
def test_yaml_alias_bomb_is_refused_before_it_expands(cluster, api):
    assert len(BOMB) < 400  # 8 levels of aliases: 9**9 strings once expanded
    reply = _bad(api, "POST", f"{NS}/configmaps", BOMB, "application/yaml")
    assert reply.status == 400 and reply.json["reason"] == "BadRequest"
    assert "error converting YAML to JSON: yaml: document contains excessive aliasing" in reply.json["message"]
    reply = _bad(api, "PATCH", f"{NS}/configmaps/survivor?fieldManager=x", BOMB, "application/apply-patch+yaml")
    assert reply.status == 400 and "document contains excessive aliasing" in reply.json["message"]
    _survivor_intact(cluster)


def test_yaml_aliases_within_budget_and_self_reference(api):
    body = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: anchored\n  labels: &l {app: web}\n"
            "  annotations: *l\ndata: {a: &v hello, b: *v}\n")
    reply = api.request("POST", f"{NS}/configmaps", body, "application/yaml")
    assert reply.status == 201, reply
    assert reply.json["metadata"]["annotations"] == {"app": "web"} and reply.json["data"]["b"] == "hello"
    reply = api.request("POST", f"{NS}/configmaps", b"a: &x [1, *x]\n", "application/yaml")
    assert reply.status == 400 and "yaml: anchor 'x' value contains itself" in reply.json["message"]


# --- integers beyond their Go type (sigs.k8s.io/json decode.go) -----------------------------------------
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "huge"},
              "spec": {"replicas": 3000000000, "selector": {"matchLabels": {"app": "huge"}},
                       "template": {"metadata": {"labels": {"app": "huge"}},
                                    "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}


def test_int32_overflow_is_refused(cluster, api):
    proc = cluster.kubectl("apply", "-f", "-", input=json.dumps(DEPLOYMENT), check=False)
    assert proc.returncode == 1
    assert ('Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal number '
            '3000000000 into Go struct field DeploymentSpec.spec.replicas of type int32') in proc.stderr
    assert cluster.kubectl("get", "deploy", "huge", check=False).returncode == 1
    assert cluster.kubectl("get", "pods", "-l", "app=huge", "-o", "name").stdout == ""


def test_int64_given_a_float_is_refused_and_the_namespace_stays_listable(cluster, api):
    reply = _bad(api, "POST", f"{NS}/configmaps", '{"apiVersion":"v1","kind":"ConfigMap","metadata":'
                                                  '{"name":"gen","generation":1e30}}')
    assert reply.status == 400
    assert reply.json["message"] == ('ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot '
                                     'unmarshal number 1e30 into Go struct field ObjectMeta.metadata.generation '
                                     'of type int64')
    from kubernetes import client

    names = [c.metadata.name for c in client.CoreV1Api(cluster.client()).list_namespaced_config_map("default").items]
    assert "survivor" in names and "gen" not in names


def test_patches_that_overflow(cluster, api):
    small = {**DEPLOYMENT, "metadata": {"name": "small"}, "spec": {**DEPLOYMENT["spec"], "replicas": 0}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(small))
    proc = cluster.kubectl("patch", "deploy", "small", "--type=merge", "-p", '{"spec":{"replicas":3000000000}}',
                           check=False)
    assert proc.returncode == 1
    assert ('json: cannot unmarshal number 3000000000 into Go struct field DeploymentSpec.spec.replicas of type '
            'int32') in proc.stderr and 'is invalid: patch: Invalid value: ' in proc.stderr
    # a strategic merge patch is converted from unstructured data: the int32 wraps, then validation refuses it
    proc = cluster.kubectl("patch", "deploy", "small", "-p", '{"spec":{"replicas":3000000000}}', check=False)
    assert proc.returncode == 1
    assert "spec.replicas: Invalid value: -1294967296: must be greater than or equal to 0" in proc.stderr
    assert cluster.kubectl("get", "deploy", "small", "-o", "jsonpath={.spec.replicas}").stdout == "0"


# --- dryRun (apimachinery meta/v1/validation ValidateDryRun) ----------------------------------------------
def test_unsupported_dry_run_values_are_refused(cluster, api):
    reply = api.request("POST", f"{NS}/configmaps?dryRun=true", _configmap("dry"))
    assert reply.status == 422
    assert reply.json["message"] == ('CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: '
                                     '["true"]: supported values: "All"')
    assert reply.json["details"] == {"group": "meta.k8s.io", "kind": "CreateOptions", "causes": [
        {"reason": "FieldValueNotSupported", "message": 'Unsupported value: ["true"]: supported values: "All"',
         "field": "dryRun"}]}
    assert api.request("GET", f"{NS}/configmaps/dry").status == 404
    reply = api.request("DELETE", f"{NS}/configmaps/survivor?dryRun=all")
    assert reply.status == 422
    assert reply.json["message"].startswith('DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: '
                                            '["all"]')
    _survivor_intact(cluster)
    proc = cluster.kubectl("delete", "cm", "survivor", "--dry-run=server")
    assert proc.stdout.strip() == 'configmap "survivor" deleted from default namespace (server dry run)'
    _survivor_intact(cluster)


# --- inputs that used to answer 500 ----------------------------------------------------------------------
def _deep(levels: int) -> str:
    return '{"a":' * levels + "1" + "}" * levels


CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": "nests.demo.gpulab.dev"},
       "spec": {"group": "demo.gpulab.dev", "scope": "Namespaced",
                "names": {"plural": "nests", "singular": "nest", "kind": "Nest", "listKind": "NestList"},
                "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                    "type": "object", "properties": {"spec": {"type": "object",
                                                              "x-kubernetes-preserve-unknown-fields": True}}}}}]}}


def test_deep_nesting_is_stored_up_to_gos_limit(cluster, api):
    cluster.kubectl("apply", "-f", "-", input=json.dumps(CRD))
    path = "/apis/demo.gpulab.dev/v1/namespaces/default/nests"
    deep = '{"apiVersion":"demo.gpulab.dev/v1","kind":"Nest","metadata":{"name":"deep"},"spec":%s}' % _deep(260)
    for _ in range(50):  # the CRD's resource is served once established
        if api.request("GET", path).status == 200:
            break
        time.sleep(0.1)
    reply = _bad(api, "POST", path, deep)
    assert reply.status == 201, reply.body[:300]
    stored = json.loads(cluster.kubectl("get", "nest", "deep", "-o", "json").stdout)["spec"]
    for _ in range(260):
        stored = stored["a"]
    assert stored == 1
    reply = _bad(api, "PATCH", f"{path}/deep", '{"spec":{"b":%s}}' % _deep(270), "application/merge-patch+json")
    assert reply.status == 200, reply.body[:300]
    too_deep = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d"},"data":%s}' % _deep(10000)
    reply = _bad(api, "POST", f"{NS}/configmaps", too_deep)
    assert reply.status == 400
    assert reply.json["message"] == ("the object provided is unrecognized (must be of type ConfigMap): couldn't get "
                                     "version/kind; json parse error: invalid character '{' exceeded max depth "
                                     '({"apiVersion":"v1","kind":"Con ...)')
    reply = _bad(api, "PATCH", f"{path}/deep", '{"spec":%s}' % _deep(10001), "application/merge-patch+json")
    assert reply.status == 400 and reply.json["message"] == "invalid JSON patch"    # json.Valid refuses it first


def test_strategic_merge_patch_of_a_map_with_a_string(cluster, api):
    reply = _bad(api, "PATCH", f"{NS}/configmaps/survivor", '{"data":"x"}', "application/strategic-merge-patch+json")
    assert reply.status == 422
    assert reply.json["message"] == ' "" is invalid: patch: Invalid value: "map[data:x]": cannot restore map from string'
    _survivor_intact(cluster)


@pytest.mark.parametrize("method,path,message", [
    ("GET", f"{NS}/configmaps?limit=abc", 'strconv.ParseInt: parsing "abc": invalid syntax'),
    ("GET", f"{NS}/configmaps?watch=true&timeoutSeconds=1.5", 'strconv.ParseInt: parsing "1.5": invalid syntax'),
    ("DELETE", f"{NS}/configmaps/survivor?gracePeriodSeconds=soon", 'strconv.ParseInt: parsing "soon": invalid syntax'),
    ("GET", f"{NS}/configmaps?resourceVersion=abc", 'invalid resource version: resourceVersion: Invalid value: '
                                                    '"abc": strconv.ParseUint: parsing "abc": invalid syntax'),
])
def test_malformed_numbers_in_the_query(cluster, api, method, path, message):
    reply = _bad(api, method, path)
    assert reply.status == 400 and reply.json["reason"] == "BadRequest" and reply.json["message"] == message
    _survivor_intact(cluster)


def test_watch_with_a_malformed_resource_version(api):
    """cacher.Watch returns the storage layer's InvalidError, which carries no Status: upstream answers 500."""
    reply = _bad(api, "GET", f"{NS}/configmaps?watch=1&resourceVersion=abc")
    assert reply.status == 500 and "reason" not in reply.json
    assert reply.json["message"] == 'resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax'


def test_list_at_a_future_resource_version_times_out_with_upstream_details(api):
    start = time.monotonic()
    reply = _bad(api, "GET", f"{NS}/configmaps?resourceVersion=999999999")
    assert time.monotonic() - start >= 2.9  # the watch cache waits three seconds for the version first
    assert reply.status == 504
    body = reply.json
    assert body["reason"] == "Timeout" and body["message"].startswith("Timeout: Too large resource version: "
                                                                      "999999999, current: ")
    assert body["details"] == {"causes": [{"reason": "ResourceVersionTooLarge",
                                           "message": "Too large resource version"}], "retryAfterSeconds": 1}
    assert list(body) == ["kind", "apiVersion", "metadata", "status", "message", "reason", "details", "code"]
    assert reply.body.endswith(b"}\n")


def test_resource_version_match_needs_a_version(api):
    reply = api.request("GET", f"{NS}/configmaps?resourceVersionMatch=NotOlderThan")
    assert reply.status == 422
    assert reply.json["message"] == ('ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
                                     'resourceVersionMatch is forbidden unless resourceVersion is provided')


def test_field_manager_longer_than_128_bytes(api):
    reply = api.request("POST", f"{NS}/configmaps?fieldManager={'m' * 129}", _configmap("managed"))
    assert reply.status == 422
    assert reply.json["message"] == ('CreateOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be '
                                     'more than 128 bytes')
    assert api.request("POST", f"{NS}/configmaps?fieldManager={'m' * 128}", _configmap("managed")).status == 201


def test_invalid_utf8_becomes_the_replacement_character(cluster, api):
    body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"utf"},"data":{"k":"a\xffb\xe2\x82c"}}'
    reply = _bad(api, "POST", f"{NS}/configmaps", body)
    assert reply.status == 201, reply
    assert cluster.kubectl("get", "cm", "utf", "-o", "jsonpath={.data.k}").stdout == "a\ufffdb\ufffd\ufffdc"
    reply = api.request("POST", f"{NS}/configmaps", b"\xff{}")
    assert reply.json["message"] == ("the object provided is unrecognized (must be of type ConfigMap): couldn't get "
                                     "version/kind; json parse error: invalid character 'ÿ' looking for beginning of "
                                     "value (ff7b7d)")


def test_oversized_bodies_headers_and_wrong_methods(api):
    reply = _bad(api, "POST", f"{NS}/configmaps", b"x" * (3 * 1024 * 1024 + 1))
    assert reply.status == 413
    assert reply.json == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                          "message": "Request entity too large: limit is 3145728",
                          "reason": "RequestEntityTooLarge", "code": 413}
    reply = _bad(api, "GET", "/healthz", headers={"X-Large": "x" * 10000})
    assert (reply.status, reply.body) == (431, b"431 Request Header Fields Too Large")  # Go's net/http, verbatim
    assert api.request("GET", f"{NS}/configmaps?x={'y' * 20000}").status == 200  # within Go's 1 MiB
    reply = api.request("PUT", f"{NS}/configmaps")
    assert reply.status == 405 and reply.json["reason"] == "MethodNotAllowed" and reply.body.endswith(b"\n")


@pytest.mark.parametrize("method", ["FOO", "PROPFIND", "BREW"])
def test_an_unknown_method_gets_the_apiservers_405_status(api, method):
    reply = _bad(api, method, f"{NS}/configmaps/survivor")
    assert (reply.status, reply.headers["Content-Type"]) == (405, "application/json")
    assert reply.json == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                          "message": "the server does not allow this method on the requested resource",
                          "reason": "MethodNotAllowed", "details": {}, "code": 405}
    conn = api.connection()  # the connection stays usable, as net/http keeps it
    try:
        assert api.request(method, "/api/v1/namespaces", conn=conn).status == 405
        assert api.request("GET", f"{NS}/configmaps/survivor", conn=conn).json["data"] == {"keep": "me"}
    finally:
        conn.close()


def test_plain_http_on_the_https_port(api):
    import socket

    with socket.create_connection((api.host, api.port), timeout=5) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        reply = b""
        while chunk := s.recv(4096):
            reply += chunk
    assert reply == b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"


def test_bearer_scheme_in_any_case(api):
    assert api.request("GET", f"{NS}/configmaps", auth="bearer").status == 200
    assert api.request("GET", f"{NS}/configmaps", auth="BEARER").status == 200
    reply = api.request("GET", f"{NS}/configmaps", auth=None, headers={"Authorization": f"Bearer {api.token}x"})
    assert reply.status == 401 and reply.json["message"] == "Unauthorized"


# --- the change history (cacher watch_cache.go) -----------------------------------------------------------
def test_history_is_bounded_and_too_old_watches_get_410(cluster, api):
    from gpulab.cluster.store import HISTORY_MAX_BYTES

    first = api.request("POST", f"{NS}/configmaps", _configmap("big", data={"v": "0"})).json
    start_rv = int(first["metadata"]["resourceVersion"])
    payload = "x" * (1024 * 1024 - 200)
    rvs = []
    for i in range(HISTORY_MAX_BYTES // (1024 * 1024) + 4):
        reply = api.request("PUT", f"{NS}/configmaps/big", _configmap("big", data={"v": f"{i}{payload}"}))
        assert reply.status == 200
        rvs.append(int(reply.json["metadata"]["resourceVersion"]))
    reply = api.request("GET", f"{NS}/configmaps?watch=1&resourceVersion={start_rv}&timeoutSeconds=1")
    event = json.loads(reply.body.splitlines()[0])
    assert event["type"] == "ERROR"
    status = event["object"]
    assert status["code"] == 410 and status["reason"] == "Expired"
    horizon = int(status["message"].rsplit("(", 1)[1].rstrip(")"))
    assert status["message"] == f"too old resource version: {start_rv} ({horizon})"
    assert start_rv < horizon < rvs[-1]
    reply = api.request("GET", f"{NS}/configmaps?watch=1&resourceVersion={rvs[-2]}&timeoutSeconds=1")
    events = [json.loads(line) for line in reply.body.splitlines()]
    assert [e["type"] for e in events] == ["MODIFIED"]
    assert events[0]["object"]["metadata"]["resourceVersion"] == str(rvs[-1])
    api.request("DELETE", f"{NS}/configmaps/big")


@pytest.mark.parametrize("limit", ["-5", "0"])
def test_a_limit_below_one_is_no_limit(cluster, api, limit):
    """etcd3 store.go GetList pages only when Limit > 0 (issue 23, item 5: -5 gave a truncated page whose
    remainingItemCount exceeded the total)."""
    for i in range(3):
        cluster.kubectl("create", "configmap", f"unlimited-{limit}-{i}")
    everything = api.request("GET", f"{NS}/configmaps").json
    page = api.request("GET", f"{NS}/configmaps?limit={limit}").json
    assert [i["metadata"]["name"] for i in page["items"]] == [i["metadata"]["name"] for i in everything["items"]]
    assert "continue" not in page["metadata"] and "remainingItemCount" not in page["metadata"]
