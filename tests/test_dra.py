"""DRA end to end through the real kubectl and the official client: the resource.k8s.io/v1 kinds and their errors,
claims from templates, allocation by the scheduler (partitionable devices included), the node handshake with a DRA
driver that runs outside the cluster (this module's ``ExampleDriver``, a neutral driver over the client), and a claim
deleted while in use."""
from __future__ import annotations

import json
import threading

import pytest
import yaml
from kubernetes import client

from .conftest import wait_for

DRIVER = "driver.example.com"
NODE = "gpulab-worker2"
NS = "default"
DRIVERS_ANNOTATION = "gpulab.dev/dra-drivers"
PREPARE = "gpulab.dev/dra-prepare"
PREPARED = f"prepared.dra.gpulab.dev/{DRIVER}"


class ExampleDriver:
    """A DRA driver's node side over the API: registers on a node, answers prepare requests with CDI device IDs
    and an environment, withdraws answers when the request goes. ``fail`` makes NodePrepareResources fail."""

    def __init__(self, api_client, node: str):
        self.core, self.resource, self.node = client.CoreV1Api(api_client), client.ResourceV1Api(api_client), node
        self.fail = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def register(self) -> None:
        self.core.patch_node(self.node, {"metadata": {"annotations": {DRIVERS_ANNOTATION: DRIVER}}})
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)

    def _loop(self) -> None:
        while not self._stop.wait(0.2):
            for claim in self.resource.list_resource_claim_for_all_namespaces().items:
                self._sync(claim)

    def _sync(self, claim) -> None:
        annotations = claim.metadata.annotations or {}
        meta = claim.metadata
        if annotations.get(PREPARE) == self.node and PREPARED not in annotations:
            results = [r for r in claim.status.allocation.devices.results if r.driver == DRIVER]
            answer = {"error": self.fail} if self.fail else {"devices": [
                {"request": r.request, "pool": r.pool, "device": r.device,
                 "cdiDeviceIDs": [f"{DRIVER}/accel={r.device}"],
                 "response": {"envs": {"EXAMPLE_VISIBLE_DEVICES": ",".join(x.device for x in results)}}} for r in results]}
            self.resource.patch_namespaced_resource_claim(meta.name, meta.namespace, {"metadata": {"annotations": {
                PREPARED: json.dumps(answer)}}})
        elif PREPARE not in annotations and PREPARED in annotations:
            self.resource.patch_namespaced_resource_claim(meta.name, meta.namespace, {"metadata": {"annotations": {
                PREPARED: None}}})


@pytest.fixture(scope="module")
def resource(cluster):
    return client.ResourceV1Api(cluster.client())


@pytest.fixture(scope="module")
def core(cluster):
    return client.CoreV1Api(cluster.client())


@pytest.fixture(scope="module")
def driver(cluster, resource):
    """Publishes a slice on NODE: two whole devices and one partitionable device with three placements."""
    resource.create_device_class({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                  "metadata": {"name": "accel.example.com"},
                                  "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    devices = [{"name": f"accel-{i}", "attributes": {"model": {"string": "whole"}, "index": {"int": i}},
                "capacity": {"memory": {"value": "80Gi"}}} for i in range(2)]
    for name, slices in (("part-4s-0", 4), ("part-4s-3", 4), ("part-3s-4", 3)):
        devices.append({"name": name, "attributes": {"model": {"string": "part"},
                                                      "slices": {"int": slices}},
                        "capacity": {"memory": {"value": f"{slices * 10}Gi"}},
                        "consumesCounters": [{"counterSet": "accel-2", "counters": {"slices": {"value": str(slices)}}}]})
    resource.create_resource_slice({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{NODE}-{DRIVER}"},
        "spec": {"driver": DRIVER, "nodeName": NODE, "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1},
                 "sharedCounters": [{"name": "accel-2", "counters": {"slices": {"value": "7"}}}],
                 "devices": devices}})
    d = ExampleDriver(cluster.client(), NODE)
    yield d
    d.stop()


def template(name: str, *selectors: str, cls: str = "accel.example.com") -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"spec": {"devices": {"requests": [{"name": "accel", "exactly": {
                "deviceClassName": cls, "selectors": [{"cel": {"expression": s}} for s in selectors]}}]}}}}


def pod(name: str, claim: dict) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"containers": [{"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"],
                                     "resources": {"claims": [{"name": "accel"}]}}],
                     "resourceClaims": [{"name": "accel", **claim}]}}


def events(core, name: str, reason: str) -> list[str]:
    return [e.message for e in core.list_namespaced_event(NS, field_selector=f"involvedObject.name={name}").items
            if e.reason == reason]


def test_the_kinds_are_served_with_upstreams_columns(kubectl, driver):
    out = kubectl("api-resources", "--api-group=resource.k8s.io", "--no-headers").stdout.split("\n")
    assert [line.split()[0] for line in out if line] == ["deviceclasses", "devicetaintrules", "resourceclaims",
                                                         "resourceclaimtemplates", "resourceslices"]
    assert kubectl("get", "resourceslices").stdout.split("\n")[0].split() == ["NAME", "NODE", "DRIVER", "POOL",
                                                                              "AGE"]
    row = kubectl("get", "resourceslices", "--field-selector", f"spec.nodeName={NODE}", "--no-headers").stdout
    assert row.split()[:4] == [f"{NODE}-{DRIVER}", NODE, DRIVER, NODE]
    assert kubectl("get", "deviceclasses").stdout.split()[:3] == ["NAME", "AGE", "accel.example.com"]


def test_a_selector_that_does_not_compile_is_refused_with_the_compilers_text(kubectl):
    bad = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "broken.example.com"},
           "spec": {"selectors": [{"cel": {"expression": "device.driver =="}}]}}
    proc = kubectl("apply", "-f", "-", input=yaml.safe_dump(bad), check=False)
    assert proc.returncode == 1
    assert proc.stderr.startswith(
        'The DeviceClass "broken.example.com" is invalid: spec.selectors[0].cel.expression: Invalid value: '
        '"device.driver ==": compilation failed: ERROR: <input>:1:17: Syntax error: mismatched input \'<EOF>\'')
    assert kubectl("get", "deviceclass", "broken.example.com", check=False).returncode == 1


def test_a_claim_from_a_template_is_allocated_prepared_and_goes_with_its_pod(kubectl, core, resource, driver):
    resource.create_namespaced_resource_claim_template(NS, template("whole", 'device.attributes["driver.example.com"]'
                                                                            '.model == "whole"'))
    core.create_namespaced_pod(NS, pod("trainer", {"resourceClaimTemplateName": "whole"}))
    claim_name = wait_for(lambda: next((s.resource_claim_name for s in core.read_namespaced_pod_status(
        "trainer", NS).status.resource_claim_statuses or ()), None), what="the pod's claim")
    assert claim_name.startswith("trainer-accel-") and len(claim_name) == len("trainer-accel-") + 5
    claim = resource.read_namespaced_resource_claim(claim_name, NS)
    assert claim.metadata.annotations["resource.kubernetes.io/pod-claim-name"] == "accel"
    assert claim.metadata.owner_references[0].kind == "Pod" and claim.metadata.owner_references[0].controller
    wait_for(lambda: core.read_namespaced_pod("trainer", NS).spec.node_name == NODE, what="scheduling")
    # Scheduled and allocated, but not started before the driver answers.
    statuses = wait_for(lambda: core.read_namespaced_pod("trainer", NS).status.container_statuses,
                        what="container statuses")
    assert statuses[0].state.waiting.reason == "ContainerCreating"
    assert kubectl("get", "resourceclaim", claim_name, "--no-headers").stdout.split()[1] == "allocated,reserved"
    driver.register()
    wait_for(lambda: core.read_namespaced_pod("trainer", NS).status.phase == "Running", what="the pod running")
    env = kubectl("exec", "trainer", "--", "printenv", "EXAMPLE_VISIBLE_DEVICES").stdout.strip()
    assert env == resource.read_namespaced_resource_claim(claim_name, NS).status.allocation.devices.results[0].device
    core.delete_namespaced_pod("trainer", NS, grace_period_seconds=0)
    wait_for(lambda: not [c for c in resource.list_namespaced_resource_claim(NS).items
                          if c.metadata.name == claim_name], what="the claim deleted with its pod")


def test_partitionable_devices_fit_by_shared_counters(core, resource, driver):
    """A 4-slice and a 3-slice placement fit in the 7 slices of one device, two 4-slice placements do not."""
    # whole devices have no "slices" attribute: the guard keeps the selector from failing on them
    by_slices = ('device.attributes["driver.example.com"].model == "part" && '
                 'device.attributes["driver.example.com"].slices == {}')
    resource.create_namespaced_resource_claim_template(NS, template("four", by_slices.format(4)))
    resource.create_namespaced_resource_claim_template(NS, template("three", by_slices.format(3)))
    core.create_namespaced_pod(NS, pod("four-a", {"resourceClaimTemplateName": "four"}))
    wait_for(lambda: core.read_namespaced_pod("four-a", NS).spec.node_name, what="the first 4-slice pod")
    core.create_namespaced_pod(NS, pod("four-b", {"resourceClaimTemplateName": "four"}))
    message = wait_for(lambda: events(core, "four-b", "FailedScheduling"), what="four-b unschedulable")[0]
    assert message.startswith("0/4 nodes are available: ") and "cannot allocate all claims" in message
    core.create_namespaced_pod(NS, pod("three", {"resourceClaimTemplateName": "three"}))
    wait_for(lambda: core.read_namespaced_pod("three", NS).status.phase == "Running", what="the 3-slice pod")
    for name in ("four-a", "four-b", "three"):
        core.delete_namespaced_pod(name, NS, grace_period_seconds=0)


def test_scheduling_errors_read_as_upstreams(core, resource, driver):
    resource.create_namespaced_resource_claim_template(NS, template("typo", 'device.attributes["driver.example.com"]'
                                                                           '.modle == "whole"'))
    resource.create_namespaced_resource_claim_template(NS, template("classless", "true", cls="missing.example.com"))
    core.create_namespaced_pod(NS, pod("typo", {"resourceClaimTemplateName": "typo"}))
    core.create_namespaced_pod(NS, pod("classless", {"resourceClaimTemplateName": "classless"}))
    typo = wait_for(lambda: events(core, "typo", "FailedScheduling"), what="typo's event")[0]
    assert typo.startswith('running "DynamicResources" filter plugin: claim default/typo-accel-')
    assert typo.endswith(": selector #0: CEL runtime error: no such key: modle")
    classless = wait_for(lambda: events(core, "classless", "FailedScheduling"), what="classless's event")[0]
    assert classless == ("0/4 nodes are available: request accel: device class missing.example.com does not exist. "
                         "preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.")
    for name in ("typo", "classless"):
        core.delete_namespaced_pod(name, NS, grace_period_seconds=0)


def test_a_failed_prepare_is_the_kubelets_event_and_a_claim_deleted_in_use_stays_until_its_pod_goes(
        kubectl, core, resource, driver):
    resource.create_namespaced_resource_claim(NS, {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "shared", "namespace": NS},
        "spec": template("x", 'device.attributes["driver.example.com"].model == "whole"')["spec"]["spec"]})
    driver.fail = "example failure"
    core.create_namespaced_pod(NS, pod("user", {"resourceClaimName": "shared"}))
    failed = wait_for(lambda: events(core, "user", "FailedPrepareDynamicResources"), what="the prepare failure")
    assert failed[0] == ("Failed to prepare dynamic resources: prepare dynamic resources: NodePrepareResources "
                         "failed for ResourceClaim shared: example failure")
    driver.fail = ""   # before the answer goes, or the driver's loop may answer with the failure again
    resource.patch_namespaced_resource_claim("shared", NS, {"metadata": {"annotations": {PREPARED: None}}})
    wait_for(lambda: core.read_namespaced_pod("user", NS).status.phase == "Running", what="user running")
    kubectl("delete", "resourceclaim", "shared", "--wait=false")
    assert kubectl("get", "resourceclaim", "shared", "--no-headers").stdout.split()[1] == \
        "deleted,allocated,reserved"
    assert core.read_namespaced_pod("user", NS).status.phase == "Running"
    core.delete_namespaced_pod("user", NS, grace_period_seconds=0)
    wait_for(lambda: kubectl("get", "resourceclaim", "shared", check=False).returncode == 1,
             what="the claim gone once unused")
