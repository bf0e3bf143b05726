"""Device allocation and what a GPU container then sees (gpulab.gpustack.allocation; docs/fidelity.md#gpustack).

Answers are read as the node agent reads them: the JSON of the pod annotation."""
import json
from datetime import datetime, timezone

from gpulab.gpustack.allocation import allocate, allocated_ids, latency_figures
from gpulab.gpustack.deviceplugin import listed_devices
from gpulab.gpustack.hardware import gpu_model, gpu_uuid
from gpulab.gpustack.mig import plan, whole_gpus
from gpulab.gpustack.sharing import NO_SHARING, parse_config

H100 = gpu_model("H100")
NOW = datetime(2025, 11, 29, 12, 0, 0, tzinfo=timezone.utc)
SLICED = parse_config("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
                      "      replicas: 4\n")
STRICT = parse_config("version: v1\nsharing:\n  timeSlicing:\n    failRequestsGreaterThanOne: true\n"
                      "    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n")


def pod(name="p", resource="nvidia.com/gpu", count=1, uid="u1"):
    return {"metadata": {"name": name, "namespace": "default", "uid": uid},
            "spec": {"containers": [{"name": "main", "resources": {"limits": {resource: str(count)}}}]}}


SMI = "/usr/bin/nvidia-smi"


def run(p, devices, used=(), config=NO_SHARING, layout=None) -> dict:
    return json.loads(allocate(p, devices, set(used), config, model=H100, node_name="n",
                               layout=layout or whole_gpus(8), driver_version="580.105.08", now=NOW).to_json())


def test_exclusive_gpu_gets_the_first_free_uuid_and_nvidia_smi():
    devices = listed_devices("n", whole_gpus(8), "none", NO_SHARING)
    doc = run(pod(), devices, used={gpu_uuid("n", 0)})
    main = doc["containers"]["main"]
    assert main["devices"] == {"nvidia.com/gpu": [gpu_uuid("n", 1)]}
    response = main["response"]
    assert response["envs"] == {"NVIDIA_VISIBLE_DEVICES": gpu_uuid("n", 1)}
    assert [d["containerPath"] for d in response["devices"]] == [
        "/dev/nvidia0", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"]
    assert {d["permissions"] for d in response["devices"]} == {"rw"}
    assert response["mounts"] == [
        {"containerPath": SMI, "hostPath": "/run/nvidia/driver" + SMI, "readOnly": True},
        {"containerPath": "/proc/driver/nvidia/version", "hostPath": "/proc/driver/nvidia/version", "readOnly": True,
         "content": "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.105.08  Release Build\n"}]
    assert main["programs"][SMI]["-L"] == f"GPU 0: NVIDIA H100 80GB HBM3 (UUID: {gpu_uuid('n', 1)})\n"
    assert main["programs"][SMI][""].startswith("Sat Nov 29 12:00:00 2025       \n+---")
    assert "00000000:64:00.0" in main["programs"][SMI][""]    # the second GPU's bus id


def test_time_slicing_spreads_replicas_over_gpus_and_shows_a_whole_gpu():
    devices = listed_devices("n", whole_gpus(8), "none", SLICED)
    first = run(pod(), devices)["containers"]["main"]["devices"]["nvidia.com/gpu"]
    two = run(pod(count=2), devices, used=first)["containers"]["main"]
    ids = two["devices"]["nvidia.com/gpu"]
    physical = {i.split("::")[0] for i in ids}
    assert len(physical) == 2 and first[0].split("::")[0] not in physical
    expected = list(dict.fromkeys(i.split("::")[0] for i in ids))
    assert two["response"]["envs"]["NVIDIA_VISIBLE_DEVICES"] == ",".join(expected)
    assert two["programs"][SMI]["-L"].count("NVIDIA H100 80GB HBM3") == 2
    assert [d["containerPath"] for d in two["response"]["devices"]][:2] == ["/dev/nvidia0", "/dev/nvidia1"]


def test_fail_requests_greater_than_one_is_the_plugins_error():
    devices = listed_devices("n", whole_gpus(8), "none", STRICT)
    assert run(pod(count=2), devices, config=STRICT) == {"containers": {}, "error": (
        'invalid allocation request for "nvidia.com/gpu": invalid request: maximum request size for shared '
        'resources is 1; found 2')}


def test_not_enough_devices_is_the_kubelets_error():
    devices = listed_devices("n", whole_gpus(1), "none", NO_SHARING)
    assert run(pod(), devices, used={gpu_uuid("n", 0)})["error"] == (
        "requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0")


def test_a_mig_device_shows_only_its_slice():
    layout = plan(H100, 8, "all-1g.10gb")
    devices = listed_devices("n", layout, "mixed", NO_SHARING)
    main = run(pod(resource="nvidia.com/mig-1g.10gb"), devices, layout=layout)["containers"]["main"]
    (device,) = main["devices"]["nvidia.com/mig-1g.10gb"]
    assert device.startswith("MIG-") and main["response"]["envs"]["NVIDIA_VISIBLE_DEVICES"] == device
    listing = main["programs"][SMI]["-L"].splitlines()
    assert listing[1] == f"  MIG 1g.10gb     Device  0: (UUID: {device})"
    assert len(listing) == 2


def test_latency_figures_count_busy_neighbours_on_the_same_gpu():
    devices = listed_devices("n", whole_gpus(1), "none", SLICED)
    pods = []
    used: set[str] = set()
    for i in range(3):
        p = pod(name=f"p{i}", uid=f"u{i}")
        doc = run(p, devices, used=used, layout=whole_gpus(1))
        used |= {d for c in doc["containers"].values() for ids in c["devices"].values() for d in ids}
        p["metadata"]["annotations"] = {"gpulab.dev/device-allocation": json.dumps(doc)}
        pods.append(p)
    assert allocated_ids(pods[0]) and len(used) == 3
    figures = latency_figures(pods[0], devices, pods, H100)
    assert (figures["mode"], figures["busyNeighbours"]) == ("time-slicing", 2)
    alone = latency_figures(pods[0], devices, pods[:1], H100)
    assert figures["p99_ms"] > alone["p99_ms"]


def test_an_mps_client_gets_the_pipe_directory_and_shm():
    mps = parse_config("version: v1\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n")
    devices = listed_devices("n", whole_gpus(1), "none", mps)
    main = run(pod(), devices, config=mps, layout=whole_gpus(1))["containers"]["main"]
    assert main["response"]["envs"] == {"NVIDIA_VISIBLE_DEVICES": gpu_uuid("n", 0),
                                        "CUDA_MPS_PIPE_DIRECTORY": "/mps/nvidia.com/gpu/pipe"}
    assert main["response"]["mounts"][2:] == [
        {"containerPath": "/mps/nvidia.com/gpu/pipe", "hostPath": "/run/nvidia/mps/nvidia.com/gpu/pipe",
         "readOnly": False, "directory": True},
        {"containerPath": "/dev/shm", "hostPath": "/run/nvidia/mps/shm", "readOnly": False, "directory": True}]
    assert "E. Process |" in main["programs"][SMI][""]
    sliced = run(pod(), listed_devices("n", whole_gpus(1), "none", SLICED), config=SLICED, layout=whole_gpus(1))
    assert "CUDA_MPS_PIPE_DIRECTORY" not in sliced["containers"]["main"]["response"]["envs"]   # time-slicing: none
    assert "Default |" in sliced["containers"]["main"]["programs"][SMI][""]
