"""Custom resources' printer columns (apiextensions-apiserver tableconvertor) and the default table."""
from __future__ import annotations

from gpulab.cluster import printers
from gpulab.cluster.kinds import table
from gpulab.cluster.printers.cells import parse_rfc3339
from gpulab.cluster.registry import Registry, ResourceType

NOW = parse_rfc3339("2026-03-01T12:00:00Z") / 1e6
NAME_DOC = ("Name must be unique within a namespace. Is required when creating resources, although some resources "
            "may allow a client to request the generation of an appropriate name automatically. Name is primarily "
            "intended for creation idempotence and configuration definition. Cannot be updated. More info: "
            "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names")


def crd(columns=None):
    version = {"name": "v1alpha1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object"}}}
    if columns is not None:
        version["additionalPrinterColumns"] = columns
    return {"metadata": {"name": "podgroups.scheduling.x-k8s.io"},
            "spec": {"group": "scheduling.x-k8s.io", "scope": "Namespaced",
                     "names": {"plural": "podgroups", "singular": "podgroup", "kind": "PodGroup"},
                     "versions": [version]}}


def resource_type(columns=None) -> ResourceType:
    return Registry(()).add_crd(crd(columns))[0]


PODGROUP = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "train-gang", "namespace": "default", "creationTimestamp": "2026-03-01T11:58:00Z"},
            "spec": {"minMember": 4, "scheduleTimeoutSeconds": 60.0},
            "status": {"phase": "Running", "running": 4, "scheduleStartTime": "2026-03-01T11:58:30Z",
                       "conditions": [{"type": "Scheduled", "status": "True"}, {"type": "Ready", "status": "False"}],
                       "labels": {"team": "ml"}, "occupiedBy": None}}


def test_no_printer_columns_gives_name_and_age():
    out = table(resource_type(), [PODGROUP], now=NOW)
    assert out["columnDefinitions"] == [
        {"name": "Name", "type": "string", "format": "name", "description": NAME_DOC, "priority": 0},
        {"name": "Age", "type": "date", "format": "",
         "description": "CreationTimestamp is a timestamp representing the server time when this object was created. "
                        "It is not guaranteed to be set in happens-before order across separate operations. Clients "
                        "may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the "
                        "system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/"
                        "sig-architecture/api-conventions.md#metadata", "priority": 0}]
    assert out["rows"][0]["cells"] == ["train-gang", "2m"]
    assert out["rows"][0]["object"]["kind"] == "PartialObjectMetadata"


def test_printer_columns_of_every_type():
    rt = resource_type([
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
        {"name": "MinMember", "type": "integer", "jsonPath": ".spec.minMember", "description": "Gang size"},
        {"name": "Running", "type": "number", "jsonPath": ".status.running"},
        {"name": "Timeout", "type": "integer", "jsonPath": ".spec.scheduleTimeoutSeconds", "priority": 1},
        {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
        {"name": "Scheduled", "type": "boolean", "jsonPath": ".status.scheduled"},
        {"name": "Started", "type": "date", "jsonPath": ".status.scheduleStartTime", "format": "date-time"},
        {"name": "Labels", "type": "string", "jsonPath": ".status.labels"},
        {"name": "Occupied", "type": "string", "jsonPath": ".status.occupiedBy"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ])
    out = table(rt, [PODGROUP], now=NOW)
    assert [(c["name"], c["type"], c["format"], c["priority"]) for c in out["columnDefinitions"]] == [
        ("Name", "string", "name", 0), ("Phase", "string", "", 0), ("MinMember", "integer", "", 0),
        ("Running", "number", "", 0), ("Timeout", "integer", "", 1), ("Ready", "string", "", 0),
        ("Scheduled", "boolean", "", 0), ("Started", "date", "date-time", 0), ("Labels", "string", "", 0),
        ("Occupied", "string", "", 0), ("Age", "date", "", 0)]
    assert out["columnDefinitions"][1]["description"] == \
        "Custom resource definition column (in JSONPath format): .status.phase"
    assert out["columnDefinitions"][2]["description"] == "Gang size"
    assert out["rows"][0]["cells"] == ["train-gang", "Running", 4, 4.0, 60, "False", None, "90s", '{"team":"ml"}',
                                       "<no value>", "2m"]


def test_wrong_typed_values_are_null_and_bad_dates_invalid():
    rt = resource_type([
        {"name": "Min", "type": "boolean", "jsonPath": ".spec.minMember"},
        {"name": "Phase", "type": "integer", "jsonPath": ".status.phase"},
        {"name": "When", "type": "date", "jsonPath": ".status.phase"},
        {"name": "Empty", "type": "date", "jsonPath": ".status.never"},
        {"name": "Num", "type": "string", "jsonPath": ".spec.scheduleTimeoutSeconds"},
    ])
    obj = {**PODGROUP, "status": {**PODGROUP["status"], "never": ""}}
    assert table(rt, [obj], now=NOW)["rows"][0]["cells"] == ["train-gang", None, None, "<invalid>", "<unknown>", "60"]


def test_an_unparsable_column_ends_the_column_list():
    rt = resource_type([
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
        {"name": "Broken", "type": "string", "jsonPath": ".status[?(@.x"},
        {"name": "After", "type": "string", "jsonPath": ".status.running"},
    ])
    out = table(rt, [PODGROUP], now=NOW)
    assert [c["name"] for c in out["columnDefinitions"]] == ["Name", "Phase"]
    assert out["rows"][0]["cells"] == ["train-gang", "Running"]


def test_kinds_without_a_printer_get_name_and_created_at():
    role = {"metadata": {"name": "reader", "creationTimestamp": "2026-02-01T10:00:00Z"}}
    out = printers.table(printers.DEFAULT_PRINTER, [role, {"metadata": {"name": "no-time"}}], now=NOW)
    assert [(c["name"], c["type"], c["format"]) for c in out["columnDefinitions"]] == [
        ("Name", "string", "name"), ("Created At", "date", "")]
    assert [r["cells"] for r in out["rows"]] == [["reader", "2026-02-01T10:00:00Z"],
                                                 ["no-time", "0001-01-01T00:00:00Z"]]
