"""/openapi/v2 as gnostic protobuf: the bytes kubectl's discovery.OpenAPISchema() unmarshals as openapi_v2.Document."""
from __future__ import annotations

import copy
import hashlib
import ssl
import struct
import urllib.error
import urllib.request

import orjson
import pytest
import yaml

from gpulab.cluster import openapi, openapi_v2_proto
from gpulab.cluster.kinds import builtin_registry
from gpulab.cluster.openapi_v2_proto import PROTOBUF_MEDIA_TYPE, encode_document, negotiate

WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Cluster",
             "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object",
                 "properties": {"spec": {"type": "object", "properties": {"driver": {
                     "type": "object", "example": {"enabled": True}, "properties": {"enabled": {
                         "type": "boolean", "default": True,
                         "description": "Enabled turns the widget's driver on."}}}}}}}}}]},
}
KUBECTL_ACCEPT = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"  # client-go discovery openAPIV2mimePb


# --- a tiny protobuf reader ----------------------------------------------------------------------------------------

def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = buf[i]
        i += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return result, i


def fields(buf: bytes) -> list[tuple[int, object]]:
    """(field number, value) in wire order: int for varints, float for fixed64, bytes for length-delimited."""
    out, i = [], 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, i = _varint(buf, i)
        elif wire_type == 1:
            value, i = struct.unpack_from("<d", buf, i)[0], i + 8
        elif wire_type == 2:
            length, i = _varint(buf, i)
            value, i = buf[i:i + length], i + length
        else:
            raise AssertionError(f"unexpected wire type {wire_type}")
        out.append((number, value))
    assert i == len(buf)
    return out


def all_of(buf: bytes, number: int) -> list:
    return [v for n, v in fields(buf) if n == number]


def one(buf: bytes, number: int):
    (value,) = all_of(buf, number)
    return value


def named(buf: bytes, number: int) -> dict[str, bytes]:
    """Repeated Named<T> entries (name = 1, value = 2) as an ordered dict name -> value bytes."""
    return {one(entry, 1).decode(): one(entry, 2) for entry in all_of(buf, number)}


def text(buf: bytes, number: int) -> str:
    return one(buf, number).decode()


def any_yaml(named_any_value: bytes) -> str:
    return text(named_any_value, 2)  # Any.yaml


# --- the document kubectl reads ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def swagger() -> dict:
    registry = builtin_registry()
    registry.add_crd(copy.deepcopy(WIDGET_CRD))
    return openapi.openapi_v2(registry)


@pytest.fixture(scope="module")
def document(swagger) -> bytes:
    return encode_document(swagger)


def test_document_header_and_definitions_round_trip(swagger, document):
    assert text(document, 1) == "2.0"  # Document.swagger
    info = one(document, 2)
    assert (text(info, 1), text(info, 2)) == (swagger["info"]["title"], swagger["info"]["version"])
    definitions = named(one(document, 9), 1)  # Document.definitions -> Definitions.additional_properties
    assert list(definitions) == list(swagger["definitions"])

    toleration = definitions["io.k8s.api.core.v1.Toleration"]
    source = swagger["definitions"]["io.k8s.api.core.v1.Toleration"]
    assert text(toleration, 4) == source["description"]  # Schema.description
    properties = named(one(toleration, 25), 1)  # Schema.properties -> Properties.additional_properties
    assert list(properties) == list(source["properties"])
    seconds = properties["tolerationSeconds"]
    assert text(seconds, 2) == "int64"  # Schema.format
    assert all_of(one(seconds, 22), 1) == [b"integer"]  # Schema.type -> TypeItem.value
    assert text(seconds, 4) == source["properties"]["tolerationSeconds"]["description"]


def test_vendor_extensions_are_named_any_with_yaml_v3_text(document):
    definitions = named(one(document, 9), 1)
    pod = named(definitions["io.k8s.api.core.v1.Pod"], 31)  # Schema.vendor_extension
    assert any_yaml(pod["x-kubernetes-group-version-kind"]) == '-   group: ""\n    kind: Pod\n    version: v1\n'
    spec_props = named(one(definitions["io.k8s.api.core.v1.PodSpec"], 25), 1)
    containers = named(spec_props["containers"], 31)
    assert any_yaml(containers["x-kubernetes-patch-merge-key"]) == "name\n"
    assert any_yaml(containers["x-kubernetes-patch-strategy"]) == "merge\n"
    assert any_yaml(containers["x-kubernetes-list-map-keys"]) == "- name\n"


def test_custom_resource_kind_is_in_the_protobuf(document):
    definitions = named(one(document, 9), 1)
    widget = definitions["com.example.v1.Widget"]
    assert any_yaml(named(widget, 31)["x-kubernetes-group-version-kind"]) == \
        "-   group: example.com\n    kind: Widget\n    version: v1\n"
    driver = named(one(named(one(widget, 25), 1)["spec"], 25), 1)["driver"]
    enabled = named(one(driver, 25), 1)["enabled"]
    assert text(one(enabled, 22), 1) == "boolean"
    assert text(enabled, 4) == "Enabled turns the widget's driver on."


def test_default_example_and_enum_are_any_messages():
    doc = {"definitions": {"D": {"default": {"enabled": True}, "example": 0, "enum": ["Always", "", 1]}}}
    schema = named(one(encode_document(doc), 9), 1)["D"]
    assert any_yaml(one(schema, 5)) == "enabled: true\n"  # Schema.default
    assert any_yaml(one(schema, 30)) == "0\n"  # Schema.example: zero values of an Any are kept
    assert [any_yaml(e) for e in all_of(schema, 20)] == ["Always\n", '""\n', "1\n"]  # Schema.enum


def test_paths_operations_and_parameters(swagger, document):
    paths = one(document, 8)
    items = named(paths, 2)  # Paths.path (Paths.vendor_extension is field 1)
    assert list(items) == list(swagger["paths"])
    pod = items["/api/v1/namespaces/{namespace}/pods/{name}"]
    get = one(pod, 2)  # PathItem.get
    assert text(get, 5) == "readCoreV1NamespacedPod"  # Operation.operation_id
    assert [t.decode() for t in all_of(get, 1)] == ["core_v1"]  # Operation.tags
    assert any_yaml(named(get, 13)["x-kubernetes-action"]) == "get\n"
    responses = named(one(get, 9), 1)  # Operation.responses -> Responses.response_code
    assert list(responses) == ["200", "401"]
    ok = one(responses["200"], 1)  # ResponseValue.response
    assert text(ok, 1) == "OK"
    assert text(one(one(ok, 2), 1), 1) == "#/definitions/io.k8s.api.core.v1.Pod"  # SchemaItem.schema -> Schema._ref

    name_param = one(one(all_of(pod, 9)[0], 1), 2)  # PathItem.parameters -> ParametersItem.parameter -> non_body
    path_sub_schema = one(name_param, 4)  # NonBodyParameter.path_parameter_sub_schema
    assert one(path_sub_schema, 1) == 1  # required
    assert (text(path_sub_schema, 2), text(path_sub_schema, 4), text(path_sub_schema, 5)) == \
        ("path", "name", "string")
    assert one(path_sub_schema, 19) == 1  # unique_items

    parameters = [one(item, 1) for item in all_of(one(pod, 3), 8)]  # PathItem.put -> Operation.parameters
    (body_parameter,) = [one(p, 1) for p in parameters if all_of(p, 1)]  # Parameter.body_parameter
    assert (text(body_parameter, 2), text(body_parameter, 3), one(body_parameter, 4)) == ("body", "body", 1)
    assert text(one(body_parameter, 5), 1) == "#/definitions/io.k8s.api.core.v1.Pod"


def test_security_and_its_definitions(document):
    (requirement,) = all_of(document, 12)  # Document.security
    assert named(requirement, 1) == {"BearerToken": b""}  # an empty StringArray is still written
    scheme = named(one(document, 13), 1)["BearerToken"]  # SecurityDefinitions -> SecurityDefinitionsItem
    api_key = one(scheme, 2)  # SecurityDefinitionsItem.api_key_security
    assert [text(api_key, n) for n in (1, 2, 3, 4)] == ["apiKey", "authorization", "header",
                                                        "Bearer Token authentication"]


def test_exact_bytes_field_order_and_proto3_zero_values():
    doc = {"swagger": "2.0", "definitions": {"A": {
        "x-e": "v", "type": "object", "title": "", "description": "d", "required": ["x"], "uniqueItems": False,
        "additionalProperties": False, "minimum": 0.0, "maximum": -1.5, "maxLength": 3}}}
    schema = (b"\x22\x01d"                                   # 4 description
              + b"\x39" + b"\x00\x00\x00\x00\x00\x00\xf8\xbf"  # 7 maximum (fixed64 -1.5); minimum 0 left out
              + b"\x58\x03"                                  # 11 max_length
              + b"\x9a\x01\x01x"                             # 19 required
              + b"\xaa\x01\x02\x10\x00"                      # 21 additional_properties { boolean: false }
              + b"\xb2\x01\x08\x0a\x06object"                # 22 type { value: "object" }
              + b"\xfa\x01\x0b\x0a\x03x-e\x12\x04\x12\x02v\n")  # 31 vendor_extension { "x-e": Any{yaml: "v\n"} }
    assert len(schema) == 48
    named_schema = b"\x0a\x01A\x12\x30" + schema
    assert encode_document(doc) == b"\x0a\x032.0" + b"\x4a\x37\x0a\x35" + named_schema


def test_negative_integers_and_oneof_members():
    doc = {"paths": {"/p": {"parameters": [
        {"$ref": "#/parameters/x"},
        {"in": "query", "name": "q", "type": "integer", "minimum": -2, "minLength": -1},
        {"in": "header", "name": "h", "type": "string"},
        {"in": "formData", "name": "f", "type": "file"},
    ]}}}
    ref, query, header, form = all_of(named(one(encode_document(doc), 8), 2)["/p"], 9)
    assert text(one(ref, 2), 1) == "#/parameters/x"  # ParametersItem.json_reference
    query_sub_schema = one(one(one(query, 1), 2), 3)
    assert one(query_sub_schema, 13) == -2.0  # double minimum
    assert one(query_sub_schema, 16) == 2**64 - 1  # int64 min_length: two's complement varint
    assert text(one(one(one(header, 1), 2), 1), 4) == "h"  # header_parameter_sub_schema
    assert text(one(one(one(form, 1), 2), 2), 4) == "f"  # form_data_parameter_sub_schema


def test_response_file_schema_and_schema_items():
    doc = {"paths": {"/f": {"get": {"responses": {
        "200": {"description": "file", "schema": {"type": "file"}},
        "default": {"$ref": "#/responses/r"}}}}},
        "definitions": {"L": {"type": "array", "items": {"type": "string"}, "additionalProperties": {"type": "x"}}}}
    pb = encode_document(doc)
    responses = named(one(one(named(one(pb, 8), 2)["/f"], 2), 9), 1)
    assert text(one(one(one(responses["200"], 1), 2), 2), 6) == "file"  # SchemaItem.file_schema.type
    assert text(one(responses["default"], 2), 1) == "#/responses/r"  # ResponseValue.json_reference
    listing = named(one(pb, 9), 1)["L"]
    assert text(one(one(one(listing, 23), 1), 22), 1) == "string"  # ItemsItem.schema[0].type
    assert text(one(one(one(listing, 21), 1), 22), 1) == "x"  # AdditionalPropertiesItem.schema


@pytest.mark.parametrize("value, expected", [
    ("get", "get\n"),
    ("", '""\n'),
    ("true", '"true"\n'),
    ("yes", "yes\n"),          # YAML 1.2 booleans only, as yaml.v3 resolves
    ("1e3", '"1e3"\n'),
    ("2001-12-14", '"2001-12-14"\n'),
    ("a: b", "'a: b'\n"),
    ("line1\nline2", "|-\n    line1\n    line2\n"),
    (3, "3\n"),
    (None, "null\n"),
    ({}, "{}\n"),
    ({"a": {"b": ["c", {"d": 1}]}}, "a:\n    b:\n        - c\n        -   d: 1\n"),
])
def test_any_yaml_is_written_as_yaml_v3_marshals_it(value, expected):
    pb = encode_document({"x-v": value})
    any_message = named(pb, 16)["x-v"]  # Document.vendor_extension
    assert any_yaml(any_message) == expected


# --- content negotiation --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("accept, expected", [
    (KUBECTL_ACCEPT, PROTOBUF_MEDIA_TYPE),
    ("application/com.github.proto-openapi.spec.v2.v1.0+protobuf", PROTOBUF_MEDIA_TYPE),
    (None, "application/json"),
    ("*/*", "application/json"),
    ("application/json, */*", "application/json"),
    ("application/*", "application/json"),
    ("application/json;q=0.5, " + KUBECTL_ACCEPT, PROTOBUF_MEDIA_TYPE),
    ("*/*, " + KUBECTL_ACCEPT, PROTOBUF_MEDIA_TYPE),  # a specific type sorts before */*
    ("text/html", None),
    ("application/vnd.kubernetes.protobuf", None),
])
def test_negotiate_follows_kube_openapi_handler(accept, expected):
    assert negotiate(accept) == expected


# --- the real kubectl and plain HTTPS against the embedded cluster ------------------------------------------------

def test_kubectl_explain_reads_the_v2_protobuf(kubectl):
    out = kubectl("explain", "pod.spec.tolerations", "--output=plaintext-openapiv2").stdout
    assert out.startswith("KIND:     Pod\nVERSION:  v1\n\nRESOURCE: tolerations <[]Object>\n\nDESCRIPTION:\n"
                          "     If specified, the pod's tolerations.\n")
    assert "   tolerationSeconds\t<integer>\n" in out


def test_kubectl_apply_of_an_unknown_kind_reports_the_mapping_not_the_download(kubectl):
    proc = kubectl("apply", "-f", "-", input="apiVersion: v1\nkind: GpuThing\nmetadata: {name: x}\n", check=False)
    assert proc.returncode == 1
    assert proc.stderr == ('error: resource mapping not found for name: "x" namespace: "" from "STDIN": no matches '
                           'for kind "GpuThing" in version "v1"\nensure CRDs are installed first\n')


def test_kubectl_explain_finds_a_custom_resource_in_v2(cluster, kubectl):
    kubectl("apply", "-f", "-", input=orjson.dumps(WIDGET_CRD).decode())
    out = kubectl("explain", "widget.spec.driver.enabled", "--output=plaintext-openapiv2").stdout
    assert out == ("KIND:     Widget\nVERSION:  example.com/v1\n\nFIELD:    enabled <boolean>\n\n"
                   "DESCRIPTION:\n     Enabled turns the widget's driver on.\n")


def _get(cluster, accept: str | None, etag: str | None = None):
    cfg = yaml.safe_load(cluster.kubeconfig.read_text())
    headers = {"Authorization": f"Bearer {cfg['users'][0]['user']['token']}"}
    if accept is not None:
        headers["Accept"] = accept
    if etag is not None:
        headers["If-None-Match"] = etag
    ctx = ssl.create_default_context(cafile=str(cluster.home / "clusters" / cluster.name / "pki" / "ca.crt"))
    req = urllib.request.Request(cfg["clusters"][0]["cluster"]["server"] + "/openapi/v2", headers=headers)
    try:
        with urllib.request.urlopen(req, context=ctx) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read()


def test_http_content_type_etag_and_not_acceptable(cluster):
    status, json_headers, json_body = _get(cluster, "application/json")
    assert status == 200 and json_headers["Content-Type"] == "application/json"
    status, headers, body = _get(cluster, KUBECTL_ACCEPT)
    assert status == 200
    assert headers["Content-Type"] == "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    assert headers["Vary"] == "Accept"
    # kube-openapi reuses the JSON document's ETag for the protobuf form.
    assert headers["ETag"] == json_headers["ETag"] == '"' + hashlib.sha512(json_body).hexdigest().upper() + '"'
    assert body == openapi_v2_proto.encode_document(orjson.loads(json_body))
    assert _get(cluster, KUBECTL_ACCEPT, etag=headers["ETag"])[0] == 304
    assert _get(cluster, "text/html")[0] == 406
