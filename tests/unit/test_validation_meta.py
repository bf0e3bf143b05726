"""ObjectMeta, name formats, labels and the rendering of field errors (apimachinery validation)."""
import pytest

from gpulab.cluster import errors
from gpulab.cluster.kinds import builtin_registry, validate_create, validate_update
from gpulab.cluster.validation.formats import is_dns1123_label, is_qualified_name, is_valid_label_value

REGISTRY = builtin_registry()
SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
             "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
         "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
         "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
DNS1035 = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
           "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
           "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
NAME_PART = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
             "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
             "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
LABEL_VALUE = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
               "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex "
               "used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def kubectl_says(err: errors.ApiError) -> str:
    """kubectl's StandardErrorMessage for a 422: 'The <Kind> "<name>" is invalid: ' + the causes."""
    details = err.details
    msgs = list(dict.fromkeys(f"{c['field']}: {c['message']}" for c in details["causes"]))
    agg = msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"
    return f'The {details["kind"]} "{details["name"]}" is invalid: {agg}'


def create_errors(key: str, obj: dict) -> list[str]:
    return [str(e) for e in validate_create(REGISTRY.by_key(key), obj)]


def config_map(**meta) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "default", **meta}}


def test_name_is_required():
    assert create_errors("configmaps", config_map()) == [
        "metadata.name: Required value: name or generateName is required"]


@pytest.mark.parametrize("key, obj, message", [
    ("configmaps", config_map(name="Bad_Name"), f'metadata.name: Invalid value: "Bad_Name": {SUBDOMAIN}'),
    ("namespaces", {"metadata": {"name": "a.b"}}, 'metadata.name: Invalid value: "a.b": must not contain dots'),
    ("namespaces", {"metadata": {"name": "UP"}}, f'metadata.name: Invalid value: "UP": {LABEL}'),
    ("services", {"metadata": {"name": "1svc", "namespace": "default"},
                  "spec": {"type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
                           "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}]}},
     f'metadata.name: Invalid value: "1svc": {DNS1035}'),
])
def test_name_formats_per_kind(key, obj, message):
    assert create_errors(key, obj) == [message]


def test_long_label_name_reports_bytes():
    assert is_dns1123_label("a" * 64) == ["must be no more than 63 bytes"]
    assert is_qualified_name("a" * 64) == ["name part must be no more than 63 bytes"]


def test_namespace_on_cluster_scoped_kind_is_forbidden():
    obj = {"metadata": {"name": "n1", "namespace": "default"}}
    assert create_errors("nodes", obj) == ["metadata.namespace: Forbidden: not allowed on this type"]


def test_labels_and_annotations():
    obj = config_map(name="cm", labels={"bad key!": "ok", "app": "-x"}, annotations={"a/b/c": "v"})
    assert create_errors("configmaps", obj) == [
        f'metadata.labels: Invalid value: "-x": {LABEL_VALUE}',
        f'metadata.labels: Invalid value: "bad key!": {NAME_PART}',
        'metadata.annotations: Invalid value: "a/b/c": a valid label key must consist of alphanumeric characters, '
        "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
        "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS "
        "subdomain prefix and '/' (e.g. 'example.com/MyName')",
    ]
    assert is_valid_label_value("x" * 64)[0] == "must be no more than 63 bytes"


def test_annotations_limited_to_256_kib():
    obj = config_map(name="cm", annotations={"big": "x" * (256 * 1024)})
    assert create_errors("configmaps", obj) == ["metadata.annotations: Too long: may not be more than 262144 bytes"]


def test_finalizer_names():
    obj = config_map(name="cm", finalizers=["my-finalizer", "example.com/ok", "kubernetes"])
    assert create_errors("configmaps", obj) == [
        'metadata.finalizers[0]: Invalid value: "my-finalizer": name is neither a standard finalizer name nor is it '
        "fully qualified"]


def test_owner_references():
    refs = [{"apiVersion": "", "kind": "ReplicaSet", "name": "rs", "uid": "1", "controller": True},
            {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "2", "controller": True}]
    assert create_errors("configmaps", config_map(name="cm", ownerReferences=refs)) == [
        'metadata.ownerReferences.apiVersion: Invalid value: "": version must not be empty',
        'metadata.ownerReferences: Invalid value: {"apiVersion":"v1","kind":"Event","name":"e","uid":"2",'
        '"controller":true}: /v1, Kind=Event is disallowed from being an owner',
        'metadata.ownerReferences: Invalid value: [{"apiVersion":"","kind":"ReplicaSet","name":"rs","uid":"1",'
        '"controller":true},{"apiVersion":"v1","kind":"Event","name":"e","uid":"2","controller":true}]: Only one '
        'reference can have Controller set to true. Found "true" in references for ReplicaSet/rs and Event/e',
    ]


def test_update_keeps_identity_fields():
    old = config_map(name="cm", uid="u1", creationTimestamp="2026-01-01T00:00:00Z", resourceVersion="5")
    new = config_map(name="cm", uid="u2", creationTimestamp="2026-01-02T00:00:00Z", resourceVersion="5")
    errs = validate_update(REGISTRY.by_key("configmaps"), new, old)
    err = errors.invalid_object("ConfigMap", "", "cm", errs)
    # validateCommonFields and the strategy both report these; the message lists each once.
    assert len(errs) == 4
    assert err.message == ('ConfigMap "cm" is invalid: [metadata.uid: Invalid value: "u2": field is immutable, '
                           'metadata.creationTimestamp: Invalid value: "2026-01-02T00:00:00Z": field is immutable]')


def test_no_new_finalizers_while_deleting():
    old = config_map(name="cm", deletionTimestamp="2026-01-01T00:00:00Z", finalizers=["a.io/x"])
    new = config_map(name="cm", deletionTimestamp="2026-01-01T00:00:00Z", finalizers=["a.io/x", "b.io/y"])
    assert [str(e) for e in validate_update(REGISTRY.by_key("configmaps"), new, old)][0] == (
        'metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new '
        'finalizers []string{"b.io/y"}')


def test_field_error_rendering_follows_field_errors_go():
    assert str(errors.too_long("", 10)) == ": Too long: may not be more than 10 bytes"
    assert str(errors.invalid("x", {"k": "<a&b>"}, "d")) == 'x: Invalid value: {"k":"\\u003ca\\u0026b\\u003e"}: d'
    assert str(errors.invalid("x", 5, "d")) == "x: Invalid value: 5: d"
    assert str(errors.invalid("x", None, "d")) == "x: Invalid value: null: d"
    assert str(errors.not_supported("x", "Bad", ["A", "B"])) == (
        'x: Unsupported value: "Bad": supported values: "A", "B"')
    assert errors.invalid_object("Pod", "", "p", []).message == 'Pod "p" is invalid'


def test_kubectl_rendering_of_a_422():
    err = errors.invalid_object("Deployment", "apps", "web", [errors.required("spec.selector")])
    assert err.message == 'Deployment.apps "web" is invalid: spec.selector: Required value'
    assert kubectl_says(err) == 'The Deployment "web" is invalid: spec.selector: Required value'
