"""NVIDIA's DRA driver for GPUs, emulated, through the real kubectl and the official client.

One embedded cluster: the GPU operator with its device plugin off, then ``gpulab install nvidia-dra-driver-gpu``
as its chart installs (the chart's refusal first), the DeviceClasses and ResourceSlices it publishes, MIG
partitions placed by the parent GPU's shared counters, a pod's claim prepared with the real driver's CDI
device and ``nvidia-smi`` showing the claimed device. Upstream sources: docs/fidelity.md#dra-driver.
"""
from __future__ import annotations

import json

import pytest
from kubernetes import client

from .conftest import start_cluster, stop_cluster, wait_for

H100_NODE = "gpulab-worker2"
A100_NODE = "gpulab-worker3"
NS = "default"
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("gpustack-dra")]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = start_cluster(tmp_path_factory.mktemp("gpustack-dra"))
    c.gpulab("install", "gpu-operator", "--set", "devicePlugin.enabled=false", timeout=180)
    yield c
    stop_cluster(c)


@pytest.fixture(scope="module")
def installed(cluster):
    refused = cluster.gpulab("install", "nvidia-dra-driver-gpu", check=False)
    assert refused.returncode == 1
    assert refused.stderr.startswith(
        "Error: INSTALLATION FAILED: execution error at (nvidia-dra-driver-gpu/templates/validation.yaml:42:4): \n\n"
        "The default value of 'resources.gpus.enabled == true'. However, when 'resources.gpus.enabled=true' this "
        "DRA driver cannot be deployed alongside the standard GPU device plugin on the same node.")
    assert "\n    --set 'gpuResourcesEnabledOverride=true'\n" in refused.stderr
    assert cluster.kubectl("get", "deviceclasses", "-o", "name").stdout == ""   # nothing half-installed
    out = cluster.gpulab("install", "nvidia-dra-driver-gpu", "--create-namespace", "--set",
                         "gpuResourcesEnabledOverride=true", "--set", "featureGates.DynamicMIG=true", timeout=180)
    assert out.stdout.startswith("NAME: nvidia-dra-driver-gpu\n")
    assert "NAMESPACE: nvidia-dra-driver-gpu\n" in out.stdout
    return cluster


@pytest.fixture(scope="module")
def resource(cluster):
    return client.ResourceV1Api(cluster.client())


@pytest.fixture(scope="module")
def core(cluster):
    return client.CoreV1Api(cluster.client())


def slices(resource, node: str) -> list:
    return [s for s in resource.list_resource_slice(field_selector=f"spec.nodeName={node}").items
            if s.spec.driver == "gpu.nvidia.com"]


def test_the_chart_installs_its_device_classes_with_their_selectors(installed):
    out = installed.kubectl("get", "deviceclasses", "-o", "json").stdout
    classes = {c["metadata"]["name"]: c["spec"] for c in json.loads(out)["items"]}
    assert classes["gpu.nvidia.com"]["selectors"][0]["cel"]["expression"] == (
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'")
    assert classes["gpu.nvidia.com"]["extendedResourceName"] == "nvidia.com/gpu"
    assert classes["mig.nvidia.com"]["selectors"][0]["cel"]["expression"] == (
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'")
    assert classes["vfio.gpu.nvidia.com"]["selectors"][0]["cel"]["expression"] == (
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'vfio'")
    ds = installed.kubectl("get", "daemonset", "-n", "nvidia-dra-driver-gpu", "--no-headers").stdout.split()
    assert ds[0] == "nvidia-dra-driver-gpu-kubelet-plugin" and ds[1] == "2"      # the two GPU nodes


def test_each_gpu_node_publishes_its_gpus_and_mig_partitions(installed, resource):
    published = wait_for(lambda: len(slices(resource, H100_NODE)) == 9 and slices(resource, H100_NODE),
                         what="the H100 node's slices")
    counters = [s for s in published if s.spec.shared_counters]
    assert len(counters) == 1 and len(counters[0].spec.shared_counters) == 8
    assert {s.spec.pool.name for s in published} == {H100_NODE}
    assert {s.spec.pool.resource_slice_count for s in published} == {9}
    devices = {d.name: d for s in published for d in s.spec.devices or ()}
    gpu = devices["gpu-0"]
    assert gpu.attributes["type"].string == "gpu"
    assert gpu.attributes["productName"].string == "NVIDIA H100 80GB HBM3"
    assert gpu.attributes["architecture"].string == "Hopper"
    assert gpu.attributes["cudaComputeCapability"].version == "9.0.0"
    assert gpu.attributes["uuid"].string.startswith("GPU-")
    assert set(gpu.attributes) >= {"resource.kubernetes.io/pciBusID"} and "pcieBusID" not in gpu.attributes
    assert {"gpu-0-mig-3g40gb-9-0", "gpu-0-mig-3g40gb-9-4", "gpu-0-mig-4g40gb-5-0", "gpu-0-mig-7g80gb-0-0",
            "gpu-7-mig-1g10gb-19-6"} <= set(devices)
    assert devices["gpu-0-mig-3g40gb-9-4"].attributes["profile"].string == "3g.40gb"
    a100 = wait_for(lambda: slices(resource, A100_NODE), what="the A100 node's slices")
    names = {d.name for s in a100 for d in s.spec.devices or ()}
    assert "gpu-3" in names and "gpu-4" not in names
    row = installed.kubectl("get", "resourceslices", "--no-headers").stdout
    assert f"{H100_NODE}-gpu.nvidia.com-" in row


def claim_template(name: str, device_class: str, *selectors: str) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": device_class, "selectors": [{"cel": {"expression": s}} for s in selectors]}}]}}}}


def pod(name: str, template: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"containers": [{"name": "main", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                                     "command": ["sleep", "3600"], "resources": {"claims": [{"name": "gpu"}]}}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}]}}


def events(core, name: str, reason: str) -> list[str]:
    return [e.message for e in core.list_namespaced_event(NS, field_selector=f"involvedObject.name={name}").items
            if e.reason == reason]


def test_a_claimed_gpu_is_prepared_with_its_cdi_device_and_nvidia_smi_shows_it(installed, core, resource):
    resource.create_namespaced_resource_claim_template(NS, claim_template(
        "big-gpu", "gpu.nvidia.com", "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0",
        "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'"))
    core.create_namespaced_pod(NS, pod("trainer", "big-gpu"))
    wait_for(lambda: core.read_namespaced_pod("trainer", NS).status.phase == "Running", what="the pod running")
    claim_name = core.read_namespaced_pod_status("trainer", NS).status.resource_claim_statuses[0].resource_claim_name
    claim = resource.read_namespaced_resource_claim(claim_name, NS)
    result = claim.status.allocation.devices.results[0]
    assert (result.driver, result.pool) == ("gpu.nvidia.com", H100_NODE)
    answer = json.loads(claim.metadata.annotations["prepared.dra.gpulab.dev/gpu.nvidia.com"])
    assert answer["devices"][0]["cdiDeviceIDs"] == [f"k8s.gpu.nvidia.com/device={result.device}"]
    smi = installed.kubectl("exec", "trainer", "--", "nvidia-smi", "-L").stdout
    assert smi.startswith("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-") and smi.count("\n") == 1
    uuid = installed.kubectl("exec", "trainer", "--", "printenv", "NVIDIA_VISIBLE_DEVICES").stdout.strip()
    assert uuid in smi
    core.delete_namespaced_pod("trainer", NS, grace_period_seconds=0)
    wait_for(lambda: not resource.list_namespaced_resource_claim(NS).items, what="the claim gone with its pod")


def test_mig_partitions_share_their_gpus_counters(installed, core, resource):
    """On one GPU, a 3g.40gb and a 4g.40gb fit together; two 4g.40gb do not (both need memory slices 0-3)."""
    on_gpu0 = "device.attributes['gpu.nvidia.com'].parentUUID == '{}' && " \
              "device.attributes['gpu.nvidia.com'].profile == '{}'"
    gpu0 = next(d for s in slices(resource, H100_NODE) for d in s.spec.devices or () if d.name == "gpu-0")
    uuid = gpu0.attributes["uuid"].string
    resource.create_namespaced_resource_claim_template(NS, claim_template(
        "four", "mig.nvidia.com", on_gpu0.format(uuid, "4g.40gb")))
    resource.create_namespaced_resource_claim_template(NS, claim_template(
        "three", "mig.nvidia.com", on_gpu0.format(uuid, "3g.40gb")))
    core.create_namespaced_pod(NS, pod("four-a", "four"))
    wait_for(lambda: core.read_namespaced_pod("four-a", NS).status.phase == "Running", what="the first 4g pod")
    core.create_namespaced_pod(NS, pod("four-b", "four"))
    message = wait_for(lambda: events(core, "four-b", "FailedScheduling"), what="four-b unschedulable")[0]
    assert "cannot allocate all claims" in message
    core.create_namespaced_pod(NS, pod("three", "three"))
    wait_for(lambda: core.read_namespaced_pod("three", NS).status.phase == "Running", what="the 3g pod")
    smi = installed.kubectl("exec", "three", "--", "nvidia-smi", "-L").stdout
    assert "MIG 3g.40gb" in smi
    for name in ("four-a", "four-b", "three"):
        core.delete_namespaced_pod(name, NS, grace_period_seconds=0)


def test_bad_claims_get_upstreams_errors_and_lose_nothing(installed, core, resource):
    bad = claim_template("typo", "gpu.nvidia.com", "device.attributes['gpu.nvidia.com'].productName ==")
    proc = installed.kubectl("apply", "-f", "-", input=json.dumps(bad), check=False)
    assert proc.returncode == 1
    assert proc.stderr.startswith(
        'The ResourceClaimTemplate "typo" is invalid: spec.spec.devices.requests[0].exactly.selectors[0].cel.'
        'expression: Invalid value: "device.attributes[\'gpu.nvidia.com\'].productName ==": compilation failed: '
        "ERROR: <input>:1:") and "Syntax error" in proc.stderr
    # memory is a capacity, not an attribute: the scheduler reports the CEL runtime error
    resource.create_namespaced_resource_claim_template(NS, claim_template(
        "by-attribute", "gpu.nvidia.com", "device.attributes['gpu.nvidia.com'].memory >= 40"))
    resource.create_namespaced_resource_claim_template(NS, claim_template("no-class", "gpu.nvidia.con"))
    core.create_namespaced_pod(NS, pod("by-attribute", "by-attribute"))
    core.create_namespaced_pod(NS, pod("no-class", "no-class"))
    message = wait_for(lambda: events(core, "by-attribute", "FailedScheduling"), what="the runtime error")[0]
    assert message.startswith('running "DynamicResources" filter plugin: claim default/by-attribute-gpu-')
    assert message.endswith(": selector #0: CEL runtime error: no such key: memory")
    message = wait_for(lambda: events(core, "no-class", "FailedScheduling"), what="the missing class")[0]
    assert message.startswith("0/4 nodes are available: request gpu: device class gpu.nvidia.con does not exist.")
    for name in ("by-attribute", "no-class"):
        core.delete_namespaced_pod(name, NS, grace_period_seconds=0)
    # nothing lost: the chart's classes and the node's pool are all still there
    assert {"gpu.nvidia.com", "mig.nvidia.com"} <= {c.metadata.name for c in resource.list_device_class().items}
    assert len(slices(resource, H100_NODE)) == 9


def test_a_claim_deleted_in_use_stays_prepared_until_its_pod_goes(installed, core, resource):
    spec = claim_template("x", "gpu.nvidia.com", "device.attributes['gpu.nvidia.com'].productName == "
                                                 "'NVIDIA A100-SXM4-40GB'")["spec"]["spec"]
    resource.create_namespaced_resource_claim(NS, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                                   "metadata": {"name": "shared-a100", "namespace": NS},
                                                   "spec": spec})
    user = pod("user", "x")
    user["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "shared-a100"}]
    core.create_namespaced_pod(NS, user)
    wait_for(lambda: core.read_namespaced_pod("user", NS).status.phase == "Running", what="the pod running")
    installed.kubectl("delete", "resourceclaim", "shared-a100", "--wait=false")
    row = installed.kubectl("get", "resourceclaim", "shared-a100", "--no-headers").stdout.split()
    assert row[1] == "deleted,allocated,reserved"
    assert installed.kubectl("exec", "user", "--", "nvidia-smi", "-L").stdout.startswith(
        "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-")
    claim = resource.read_namespaced_resource_claim("shared-a100", NS)
    assert "prepared.dra.gpulab.dev/gpu.nvidia.com" in claim.metadata.annotations
    core.delete_namespaced_pod("user", NS, grace_period_seconds=0)
    wait_for(lambda: installed.kubectl("get", "resourceclaim", "shared-a100", check=False).returncode == 1,
             what="the claim gone once unused")
