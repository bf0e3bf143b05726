"""DRA device taints through kubectl and the official client, on both engines (issue 26): the DeviceTaintRule kind
(printer, defaulting, validation, status), taints in ResourceSlices and DeviceTaintRules keeping new claims off a
device unless a request tolerates them (NoSchedule), and the device taint eviction controller evicting the pods of
allocated devices (NoExecute, tolerationSeconds) and reporting on each rule."""
from __future__ import annotations

import json
import re
import time

import pytest
import yaml
from kubernetes import client

from .conftest import start_cluster, stop_cluster, wait_for

DRIVER = "taint.example.com"
NODE = "gpulab-worker"
NS = "default"
DEVICES = 8


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, engine):
    c = start_cluster(tmp_path_factory.mktemp("taints"), engine=engine, gpu_stack=False)
    yield c
    stop_cluster(c)


@pytest.fixture(scope="module")
def kubectl(cluster):
    return cluster.kubectl


@pytest.fixture(scope="module")
def resource(cluster):
    return client.ResourceV1Api(cluster.client())


@pytest.fixture(scope="module")
def core(cluster):
    return client.CoreV1Api(cluster.client())


def slice_body(taints: dict[int, list[dict]]) -> dict:
    """One slice on NODE: devices dev-0..dev-7, each with its ``slot``, some with taints."""
    devices = []
    for i in range(DEVICES):
        device = {"name": f"dev-{i}", "attributes": {"slot": {"int": i}}}
        if taints.get(i):
            device["taints"] = taints[i]
        devices.append(device)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{NODE}-taints"},
            "spec": {"driver": DRIVER, "nodeName": NODE, "pool": {"name": NODE, "generation": 1,
                                                                   "resourceSliceCount": 1},
                     "devices": devices}}


@pytest.fixture(scope="module")
def published(kubectl):
    """The class and the slice; dev-1 is tainted NoSchedule by its driver."""
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all([
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}},
        slice_body({1: [{"key": "example.com/broken", "value": "xid-79", "effect": "NoSchedule"}]})]))


def claim(name: str, slot: int, tolerations: list[dict] | None = None) -> dict:
    exactly = {"deviceClassName": DRIVER, "selectors": [{"cel": {
        "expression": f'device.attributes["{DRIVER}"].slot == {slot}'}}]}
    if tolerations:
        exactly["tolerations"] = tolerations
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": NS},
            "spec": {"devices": {"requests": [{"name": "dev", "exactly": exactly}]}}}


def pod(name: str, claim_name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10.1",
                                     "resources": {"claims": [{"name": "dev"}]}}],
                     "resourceClaims": [{"name": "dev", "resourceClaimName": claim_name}]}}


def run(kubectl, name: str, slot: int, tolerations: list[dict] | None = None) -> None:
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all([claim(name, slot, tolerations), pod(name, name)]))


def rule(name: str, effect: str, **selector) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": name},
            "spec": {"deviceSelector": selector, "taint": {"key": "example.com/maintenance", "effect": effect}}}


def events(core, name: str, reason: str) -> list:
    return [e for e in core.list_namespaced_event(NS, field_selector=f"involvedObject.name={name}").items
            if e.reason == reason]


def node_of(core, name: str) -> str | None:
    return core.read_namespaced_pod(name, NS).spec.node_name


def gone_or_terminating(core, name: str) -> bool:
    try:
        return core.read_namespaced_pod(name, NS).metadata.deletion_timestamp is not None
    except client.ApiException as exc:
        return exc.status == 404


def condition(resource, name: str) -> dict | None:
    status = resource.read_device_taint_rule(name).status
    for c in (status.conditions or []) if status else []:
        if c.type == "EvictionInProgress":
            return {"status": c.status, "reason": c.reason, "message": c.message,
                    "observedGeneration": c.observed_generation}
    return None


def cleanup(kubectl, *names: str) -> None:
    for name in names:
        kubectl("delete", "pod,resourceclaim", name, "--ignore-not-found", "--wait=false")


def test_the_kind_is_served_with_upstreams_columns_and_defaults(kubectl, resource):
    rows = kubectl("api-resources", "--api-group=resource.k8s.io", "--no-headers").stdout.splitlines()
    assert [r.split() for r in rows if r.startswith("devicetaintrules")] == [
        ["devicetaintrules", "resource.k8s.io/v1", "false", "DeviceTaintRule"]]
    kubectl("apply", "-f", "-", input=yaml.safe_dump(rule("idle", "NoSchedule", driver="nothing.example.com")))
    table = kubectl("get", "devicetaintrules").stdout.splitlines()
    assert table[0].split() == ["NAME", "KEY", "VALUE", "EFFECT", "TIMEADDED", "AGE"]
    assert table[1].split()[:3] == ["idle", "example.com/maintenance", "NoSchedule"]
    got = json.loads(kubectl("get", "devicetaintrule", "idle", "-o", "json").stdout)
    assert got["metadata"]["generation"] == 1
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", got["spec"]["taint"]["timeAdded"])
    assert wait_for(lambda: condition(resource, "idle"), timeout=30, what="the rule's status") == {
        "status": "False", "reason": "OtherEffect", "message": "Eviction only happens for the NoExecute effect.",
        "observedGeneration": 1}
    got = json.loads(kubectl("get", "devicetaintrule", "idle", "-o", "json", "--show-managed-fields").stdout)
    assert {(m["manager"], m["operation"], m.get("subresource")) for m in got["metadata"]["managedFields"]} == {
        ("kubectl-client-side-apply", "Update", None), ("device-taint-eviction-controller", "Apply", "status")}
    kubectl("delete", "devicetaintrule", "idle")


def test_changing_the_effect_restarts_the_taints_clock(kubectl, resource):
    kubectl("apply", "-f", "-", input=yaml.safe_dump(rule("flip", "None", driver="nothing.example.com")))
    before = resource.read_device_taint_rule("flip")
    time.sleep(1.1)
    kubectl("patch", "devicetaintrule", "flip", "--type=merge", "-p", '{"spec": {"taint": {"effect": "NoSchedule"}}}')
    after = resource.read_device_taint_rule("flip")
    assert (before.metadata.generation, after.metadata.generation) == (1, 2)
    assert after.spec.taint.time_added > before.spec.taint.time_added
    kubectl("patch", "devicetaintrule", "flip", "--type=merge", "-p", '{"spec": {"taint": {"value": "v2"}}}')
    assert resource.read_device_taint_rule("flip").spec.taint.time_added == after.spec.taint.time_added
    kubectl("delete", "devicetaintrule", "flip")


def test_bad_rules_are_refused_with_upstreams_words(kubectl):
    bad = rule("bad", "PreferNoSchedule", driver="Not_A_Driver")
    out = kubectl("apply", "-f", "-", input=yaml.safe_dump(bad), check=False)
    assert (out.returncode, out.stderr) == (1, """The DeviceTaintRule "bad" is invalid: \n\
* spec.deviceSelector.driver: Invalid value: "Not_A_Driver": a lowercase RFC 1123 subdomain must consist of lower \
case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', \
regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')
* spec.taint.effect: Unsupported value: "PreferNoSchedule": supported values: "NoExecute", "NoSchedule", "None"
""")


def test_a_claims_tolerations_are_validated(kubectl):
    bad = claim("bad-toleration", 0, [{"key": "example.com/broken", "operator": "Equal", "value": "not valid!"},
                                      {"key": "example.com/broken", "operator": "Exists", "value": "x"}])
    out = kubectl("apply", "-f", "-", input=yaml.safe_dump(bad), check=False)
    path = "spec.devices.requests[0].exactly.tolerations"
    assert (out.returncode, out.stderr) == (1, f"""The ResourceClaim "bad-toleration" is invalid: \n\
* {path}[0].value: Invalid value: "not valid!": a valid label must be an empty string or consist of alphanumeric \
characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  \
or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')
* {path}[1].value: Invalid value: "x": must be empty for operator `Exists`
""")


def test_a_no_schedule_taint_keeps_new_claims_off_the_device_unless_tolerated(kubectl, core, resource, published):
    run(kubectl, "untolerated", 1)
    message = wait_for(lambda: events(core, "untolerated", "FailedScheduling"), what="FailedScheduling")[0].message
    assert message == ("0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 cannot allocate all claims. "
                       "preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.")
    run(kubectl, "tolerated", 1, [{"key": "example.com/broken", "operator": "Exists", "effect": "NoSchedule"}])
    assert wait_for(lambda: node_of(core, "tolerated"), what="the tolerating pod's node") == NODE
    result = resource.read_namespaced_resource_claim("tolerated", NS).status.allocation.devices.results[0]
    assert (result.device, [(t.key, t.operator, t.effect) for t in result.tolerations]) == (
        "dev-1", [("example.com/broken", "Exists", "NoSchedule")])
    assert node_of(core, "untolerated") is None
    cleanup(kubectl, "untolerated", "tolerated")


def test_a_rule_taints_the_devices_it_selects_until_it_goes(kubectl, core, published):
    kubectl("apply", "-f", "-", input=yaml.safe_dump(rule("hold-dev-2", "NoSchedule", driver=DRIVER, device="dev-2")))
    run(kubectl, "held", 2)
    wait_for(lambda: events(core, "held", "FailedScheduling"), what="FailedScheduling")
    assert node_of(core, "held") is None
    kubectl("delete", "devicetaintrule", "hold-dev-2")
    assert wait_for(lambda: node_of(core, "held"), what="the pod scheduled once the rule is gone") == NODE
    cleanup(kubectl, "held")


def test_no_execute_evicts_the_pods_of_the_device_and_the_rule_reports_it(kubectl, core, resource, published):
    run(kubectl, "victim", 3)
    run(kubectl, "patient", 4, [{"key": "example.com/maintenance", "operator": "Exists", "effect": "NoExecute"}])
    assert wait_for(lambda: node_of(core, "victim") and node_of(core, "patient"), what="both pods bound")
    kubectl("apply", "-f", "-", input=yaml.safe_dump(rule("drain-3-4", "NoExecute", driver=DRIVER, pool=NODE)))
    wait_for(lambda: gone_or_terminating(core, "victim"), timeout=30, what="the victim evicted")
    marked = wait_for(lambda: events(core, "victim", "DeviceTaintManagerEviction"), what="the eviction event")[0]
    assert (marked.type, marked.message, marked.source.component) == (
        "Normal", "Marking for deletion", "device-taint-eviction-controller")
    assert wait_for(lambda: (condition(resource, "drain-3-4") or {}).get("reason") == "Completed" and
                    condition(resource, "drain-3-4"), timeout=40, what="the rule's Completed status") == {
        "status": "False", "reason": "Completed", "message": "1 pod evicted since starting the controller.",
        "observedGeneration": 1}
    assert not gone_or_terminating(core, "patient")
    kubectl("delete", "devicetaintrule", "drain-3-4")
    cleanup(kubectl, "victim", "patient")


def test_toleration_seconds_delay_the_eviction(kubectl, core, published):
    run(kubectl, "grace", 5, [{"key": "example.com/maintenance", "operator": "Exists", "effect": "NoExecute",
                               "tolerationSeconds": 6}])
    wait_for(lambda: node_of(core, "grace"), what="the pod bound")
    kubectl("apply", "-f", "-", input=yaml.safe_dump(rule("drain-5", "NoExecute", driver=DRIVER, device="dev-5")))
    added = time.monotonic()
    time.sleep(3)
    assert not gone_or_terminating(core, "grace")
    wait_for(lambda: gone_or_terminating(core, "grace"), timeout=30, what="the pod evicted after its toleration")
    assert time.monotonic() - added >= 5
    kubectl("delete", "devicetaintrule", "drain-5")
    cleanup(kubectl, "grace")


def test_an_eviction_cancelled_by_removing_the_taint_says_so(kubectl, core, published):
    run(kubectl, "reprieved", 0, [{"key": "example.com/maintenance", "operator": "Exists", "effect": "NoExecute",
                                   "tolerationSeconds": 60}])
    wait_for(lambda: node_of(core, "reprieved"), what="the pod bound")
    kubectl("apply", "-f", "-", input=yaml.safe_dump(rule("drain-0", "NoExecute", driver=DRIVER, device="dev-0")))
    time.sleep(2)
    kubectl("delete", "devicetaintrule", "drain-0")
    cancelled = wait_for(lambda: events(core, "reprieved", "DeviceTaintManagerEviction"), what="the cancel event")
    assert [(e.message, e.involved_object.uid) for e in cancelled] == [
        ("Cancelling deletion", core.read_namespaced_pod("reprieved", NS).metadata.uid)]
    assert not gone_or_terminating(core, "reprieved")
    cleanup(kubectl, "reprieved")


def test_a_driver_that_taints_its_device_no_execute_evicts_its_pods(kubectl, core, resource, published):
    run(kubectl, "on-dev-7", 7)
    wait_for(lambda: node_of(core, "on-dev-7"), what="the pod bound")
    body = slice_body({1: [{"key": "example.com/broken", "value": "xid-79", "effect": "NoSchedule"}],
                       7: [{"key": "example.com/broken", "value": "xid-48", "effect": "NoExecute"}]})
    current = resource.read_resource_slice(body["metadata"]["name"])
    body["metadata"]["resourceVersion"] = current.metadata.resource_version
    body["spec"]["devices"][1]["taints"][0]["timeAdded"] = current.spec.devices[1].taints[0].time_added.strftime(
        "%Y-%m-%dT%H:%M:%SZ")
    resource.replace_resource_slice(body["metadata"]["name"], body)
    stamped = resource.read_resource_slice(body["metadata"]["name"]).spec.devices[7].taints[0]
    assert stamped.time_added is not None and stamped.effect == "NoExecute"
    wait_for(lambda: gone_or_terminating(core, "on-dev-7"), timeout=30, what="the pod evicted")
    assert [e.message for e in events(core, "on-dev-7", "DeviceTaintManagerEviction")] == ["Marking for deletion"]
    kubectl("apply", "-f", "-", input=yaml.safe_dump(
        slice_body({1: [{"key": "example.com/broken", "value": "xid-79", "effect": "NoSchedule"}]})))
    cleanup(kubectl, "on-dev-7")


def test_an_effect_none_rule_says_what_no_execute_would_do(kubectl, core, resource, published):
    run(kubectl, "bystander", 6)
    wait_for(lambda: node_of(core, "bystander"), what="the pod bound")
    kubectl("apply", "-f", "-", input=yaml.safe_dump(rule("dry-run", "None", driver=DRIVER, device="dev-6")))
    assert wait_for(lambda: condition(resource, "dry-run"), timeout=30, what="the rule's status") == {
        "status": "False", "reason": "NoEffect", "observedGeneration": 1,
        "message": "1 published device selected. 1 allocated device selected. 1 pod would be evicted in 1 "
                   "namespace if the effect was NoExecute. This information will not be updated again. Recreate "
                   "the DeviceTaintRule to trigger an update."}
    assert not gone_or_terminating(core, "bystander")
    kubectl("delete", "devicetaintrule", "dry-run")
    cleanup(kubectl, "bystander")


def test_with_the_gates_off_rules_are_still_served_but_taints_and_tolerations_are_dropped(tmp_path, engine):
    gated = start_cluster(tmp_path, name="gated", engine=engine, gpu_stack=False,
                          feature_gates="DRADeviceTaints=false,DRADeviceTaintRules=false")
    try:
        res = client.ResourceV1Api(gated.client())
        rows = gated.kubectl("api-resources", "--api-group=resource.k8s.io", "-o", "name").stdout.split()
        assert "devicetaintrules.resource.k8s.io" in rows
        res.create_resource_slice(slice_body({0: [{"key": "example.com/broken", "effect": "NoSchedule"}]}))
        assert res.read_resource_slice(f"{NODE}-taints").spec.devices[0].taints is None
        res.create_namespaced_resource_claim(NS, claim("tolerant", 0, [{"key": "example.com/broken",
                                                                         "operator": "Exists"}]))
        assert res.read_namespaced_resource_claim("tolerant", NS).spec.devices.requests[0].exactly.tolerations is None
    finally:
        stop_cluster(gated)
