"""DynamicResources against an in-memory API: structured allocation from ResourceSlices (counts, All, selectors,
firstAvailable, shared counters, consumable capacity, taints, adminAccess, constraints) and its messages."""
from __future__ import annotations

import copy

import pytest

from gpulab.cluster.dra.claims import CLAIMS, CLASSES, DELETE_PROTECTION_FINALIZER, SLICES

from test_scheduler import NOT_HELPFUL, Cluster

DRIVER = "driver.example.com"
NODE = "gpulab-worker"


def device(name: str, model: str = "a", memory: str = "40Gi", **extra) -> dict:
    return {"name": name, "attributes": {"model": {"string": model}, "index": {"int": int(name.split("-")[-1])}},
            "capacity": {"memory": {"value": memory}}, **extra}


class DraCluster(Cluster):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.device_class("accel.example.com", f'device.driver == "{DRIVER}"')

    def device_class(self, name: str, *expressions: str, **spec) -> dict:
        return self.api.create(CLASSES, {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                         "metadata": {"name": name},
                                         "spec": {"selectors": [{"cel": {"expression": e}} for e in expressions],
                                                  **spec}})

    def slice_(self, node: str, devices: list[dict], **spec) -> dict:
        return self.api.create(SLICES, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                        "metadata": {"name": f"{node}-{DRIVER}"},
                                        "spec": {"driver": DRIVER, "nodeName": node, "devices": devices,
                                                 "pool": {"name": node, "generation": 1,
                                                          "resourceSliceCount": 1}, **spec}})

    def claim(self, name: str, *requests: dict, **devices) -> dict:
        return self.api.create(CLAIMS, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                        "metadata": {"name": name, "namespace": "default"},
                                        "spec": {"devices": {"requests": list(requests), **devices}}}, "default")

    def claim_pod(self, name: str, *claims: str) -> dict:
        return self.pod(name, resourceClaims=[{"name": c, "resourceClaimName": c} for c in claims])

    def allocation(self, claim: str) -> dict | None:
        return (self.api.get(CLAIMS, claim, "default").get("status") or {}).get("allocation")

    def devices_of(self, claim: str) -> list[str]:
        return [r["device"] for r in (self.allocation(claim) or {}).get("devices", {}).get("results", [])]


def exactly(name: str = "gpu", cls: str = "accel.example.com", *selectors: str, **more) -> dict:
    return {"name": name, "exactly": {"deviceClassName": cls,
                                      "selectors": [{"cel": {"expression": s}} for s in selectors], **more}}


def test_a_claim_is_allocated_from_the_nodes_slice_and_reserved_for_the_pod():
    c = DraCluster()
    c.slice_(NODE, [device("gpu-0"), device("gpu-1")])
    c.claim("one", exactly())
    c.claim_pod("trainer", "one")
    c.run()
    assert c.node_of("trainer") == NODE
    claim = c.api.get(CLAIMS, "one", "default")
    allocation = claim["status"]["allocation"]
    assert allocation["devices"]["results"] == [{"request": "gpu", "driver": DRIVER, "pool": NODE,
                                                 "device": "gpu-0"}]
    assert allocation["nodeSelector"] == {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": [NODE]}]}]}
    assert allocation["allocationTimestamp"]
    uid = c.get("trainer")["metadata"]["uid"]
    assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": "trainer", "uid": uid}]
    assert claim["metadata"]["finalizers"] == [DELETE_PROTECTION_FINALIZER]


def test_the_schedulers_typed_claim_writes_record_what_an_ordinary_update_records():
    # two claims: the scheduler binds one (typed writes); the same two writes by hand go through the request path
    c = DraCluster()
    c.slice_(NODE, [device("gpu-0"), device("gpu-1")])
    for name in ("scheduled", "by-hand"):  # made by a manager, so their fields are tracked
        c.api.create(CLAIMS, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                              "metadata": {"name": name, "namespace": "default"},
                              "spec": {"devices": {"requests": [exactly()]}}}, "default", manager="kubectl-create")
    seen = []
    c.api.subscribe(CLAIMS, lambda kind, obj, old: seen.append((kind, obj["metadata"]["name"])))
    c.claim_pod("trainer", "scheduled")
    c.run()
    done = c.api.get(CLAIMS, "scheduled", "default")
    hand = copy.deepcopy(c.api.get(CLAIMS, "by-hand", "default"))  # get gives the stored object
    hand["metadata"]["finalizers"] = list(done["metadata"]["finalizers"])
    hand = copy.deepcopy(c.api.update(CLAIMS, hand, "default", manager="kube-scheduler"))
    hand["status"] = {**done["status"], "allocation": {**done["status"]["allocation"], "devices": {"results": [
        {**done["status"]["allocation"]["devices"]["results"][0], "device": "gpu-1"}]}}}
    c.api.update(CLAIMS, hand, "default", subresource="status", manager="kube-scheduler")
    hand = c.api.get(CLAIMS, "by-hand", "default")

    def entries(claim):
        return [{k: v for k, v in e.items() if k != "time"} for e in claim["metadata"]["managedFields"]]
    assert entries(done) == entries(hand)
    assert [kind for kind, name in seen if name == "scheduled"] == [kind for kind, name in seen if name == "by-hand"] \
        == ["MODIFIED", "MODIFIED"]


def test_devices_are_not_given_twice_and_the_third_pod_waits_unresolvable():
    c = DraCluster()
    c.slice_(NODE, [device("gpu-0"), device("gpu-1")])
    for i in range(3):
        c.claim(f"c{i}", exactly())
        c.claim_pod(f"p{i}", f"c{i}")
    c.run()
    assert sorted(c.devices_of("c0") + c.devices_of("c1")) == ["gpu-0", "gpu-1"]
    assert c.node_of("p2") is None and c.allocation("c2") is None
    assert c.message("p2") == (
        "0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 cannot allocate all claims. preemption: "
        "0/4 nodes are available: 4 " + NOT_HELPFUL + ".")

def test_selectors_count_and_all():
    c = DraCluster()
    c.slice_(NODE, [device("gpu-0", "a"), device("gpu-1", "b", "80Gi"), device("gpu-2", "b", "80Gi")])
    c.claim("big", exactly("gpu", "accel.example.com",
                           'device.capacity["driver.example.com"].memory.compareTo(quantity("64Gi")) >= 0',
                           count=2))
    c.claim_pod("p", "big")
    c.run()
    assert c.devices_of("big") == ["gpu-1", "gpu-2"]
    c.claim("every-b", exactly("all", "accel.example.com", 'device.attributes["driver.example.com"].model == "b"',
                               allocationMode="All"))
    c.claim_pod("q", "every-b")
    c.claim("every-a", exactly("all", "accel.example.com", 'device.attributes["driver.example.com"].model == "a"',
                               allocationMode="All"))
    c.claim_pod("r", "every-a")
    c.run()
    assert c.allocation("every-b") is None  # All means every matching device, and two are in use
    assert c.devices_of("every-a") == ["gpu-0"]


def test_first_available_tries_alternatives_in_order():
    c = DraCluster()
    c.slice_(NODE, [device("gpu-0", "small")])
    c.claim("pick", {"name": "gpu", "firstAvailable": [
        {"name": "large", "deviceClassName": "accel.example.com",
         "selectors": [{"cel": {"expression": 'device.attributes["driver.example.com"].model == "large"'}}]},
        {"name": "small", "deviceClassName": "accel.example.com"}]})
    c.claim_pod("p", "pick")
    c.run()
    assert c.allocation("pick")["devices"]["results"][0]["request"] == "gpu/small"


def partitions(*names_and_slices: tuple[str, int]) -> list[dict]:
    return [{"name": name, "attributes": {"profile": {"string": name.split("-")[0]}},
             "consumesCounters": [{"counterSet": "accel-0", "counters": {"slices": {"value": str(n)}}}]}
            for name, n in names_and_slices]


def test_partitionable_devices_share_their_parents_counters():
    """Placements of one device consume its counters: 3+4 slices fit in 7, 4+4 do not."""
    c = DraCluster()
    c.slice_(NODE, partitions(("p4-0", 4), ("p4-3", 4), ("p3-4", 3)),
             sharedCounters=[{"name": "accel-0", "counters": {"slices": {"value": "7"}}}])
    by_profile = 'device.attributes["driver.example.com"].profile == "{}"'
    c.claim("four", exactly("part", "accel.example.com", by_profile.format("p4")))
    c.claim("four-again", exactly("part", "accel.example.com", by_profile.format("p4")))
    c.claim("three", exactly("part", "accel.example.com", by_profile.format("p3")))
    c.claim_pod("a", "four")
    c.run()
    c.claim_pod("b", "four-again")
    c.run()
    assert c.devices_of("four") == ["p4-0"] and c.node_of("b") is None
    c.claim_pod("d", "three")
    c.run()
    assert c.devices_of("three") == ["p3-4"]


def test_consumable_capacity_shares_a_device_until_it_is_full():
    c = DraCluster()
    shared = device("gpu-0", memory="40Gi", allowMultipleAllocations=True)
    shared["capacity"]["memory"]["requestPolicy"] = {"default": "10Gi"}
    c.slice_(NODE, [shared])
    for i, amount in enumerate(("30Gi", "10Gi", "1Gi")):
        c.claim(f"c{i}", exactly("gpu", capacity={"requests": {"memory": amount}}))
        c.claim_pod(f"p{i}", f"c{i}")
        c.run()
    first = c.allocation("c0")["devices"]["results"][0]
    assert first["consumedCapacity"] == {"memory": "30Gi"} and first["shareID"]
    assert c.devices_of("c1") == ["gpu-0"] and c.allocation("c2") is None


def test_taints_keep_devices_unless_tolerated_and_admin_access_shares():
    c = DraCluster()
    c.slice_(NODE, [device("gpu-0", taints=[{"key": "example.com/broken", "effect": "NoSchedule"}])])
    c.claim("plain", exactly())
    c.claim_pod("p", "plain")
    c.run()
    assert c.allocation("plain") is None
    c.claim("tolerant", exactly("gpu", tolerations=[{"key": "example.com/broken", "operator": "Exists"}]))
    c.claim_pod("q", "tolerant")
    c.run()
    assert c.devices_of("tolerant") == ["gpu-0"]
    c.claim("admin", exactly("gpu", adminAccess=True,
                             tolerations=[{"key": "example.com/broken", "operator": "Exists"}]))
    c.claim_pod("r", "admin")
    c.run()
    assert c.allocation("admin")["devices"]["results"][0]["adminAccess"] is True


def test_match_attribute_constraint():
    c = DraCluster()
    c.slice_(NODE, [device("gpu-0", "a"), device("gpu-1", "b"), device("gpu-2", "b")])
    c.claim("pair", exactly("gpu", count=2), constraints=[{"matchAttribute": f"{DRIVER}/model"}])
    c.claim_pod("p", "pair")
    c.run()
    assert c.devices_of("pair") == ["gpu-1", "gpu-2"]


def test_a_missing_device_class_and_a_cel_runtime_error_are_upstreams_messages():
    c = DraCluster()
    c.slice_(NODE, [device("gpu-0")])
    c.claim("nowhere", exactly("gpu", "missing.example.com"))
    c.claim_pod("p", "nowhere")
    c.claim("typo", exactly("gpu", "accel.example.com", 'device.attributes["driver.example.com"].modle == "a"'))
    c.claim_pod("q", "typo")
    c.run()
    assert c.message("p") == ("0/4 nodes are available: request gpu: device class missing.example.com does not "
                              "exist. preemption: 0/4 nodes are available: 4 " + NOT_HELPFUL + ".")
    assert c.message("q") == (
        'running "DynamicResources" filter plugin: claim default/typo: selector #0: CEL runtime error: no such key: '
        "modle")
    assert c.condition("q")["reason"] == "SchedulerError"


def test_a_pod_waits_for_its_claim_and_pods_without_claims_get_no_dra_text():
    c = DraCluster()
    c.slice_(NODE, [device("gpu-0")])
    c.claim_pod("early", "later")
    c.run()
    assert c.node_of("early") is None and not c.events("early")
    c.claim("later", exactly())
    c.run()
    assert c.node_of("early") == NODE
    c.pod("huge", cpu="1000")
    c.run()
    assert "claims" not in c.message("huge")


@pytest.mark.parametrize("expression, message", [
    ("device.driver ==", "compilation failed: ERROR: <input>:1:17: Syntax error: mismatched input '<EOF>'"),
    ("undeclared == 1", "compilation failed: ERROR: <input>:1:1: undeclared reference to 'undeclared' "
                        "(in container '')"),
])
def test_selectors_that_do_not_compile_are_refused_at_create(expression, message):
    from gpulab.cluster.errors import ApiError
    c = DraCluster()
    with pytest.raises(ApiError) as err:
        c.device_class("broken.example.com", expression)
    assert err.value.code == 422
    assert f'spec.selectors[0].cel.expression: Invalid value: "{expression}": {message}' in err.value.message
