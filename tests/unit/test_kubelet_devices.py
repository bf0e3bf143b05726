"""Kubelet admission (OutOf<resource>, predicates) and the device plugin handshake over the API."""
from __future__ import annotations

import asyncio
import json

from gpulab.contract import ALLOCATION_ANNOTATION, PLUGIN_RESOURCES_ANNOTATION
from test_kubelet_harness import H100, container, run, shell

GPU = "nvidia.com/gpu"
SMI = "/usr/bin/nvidia-smi"


def advertise_gpus(h, count: int = 8, plugin: bool = True, node: str = "worker") -> None:
    """What the device plugin emulation does when it registers: annotation, then capacity and allocatable."""
    if plugin:
        h.api.patch("nodes", node, {"metadata": {"annotations": {PLUGIN_RESOURCES_ANNOTATION: GPU}}}, "merge")
    current = h.api.get("nodes", node)
    status = current["status"]
    status["capacity"][GPU] = status["allocatable"][GPU] = str(count)
    h.api.update("nodes", current, subresource="status", manager="nvidia-device-plugin")


def gpu_container(n: int = 1, **fields) -> dict:
    return container(resources={"requests": {GPU: str(n)}, "limits": {GPU: str(n)}}, **fields)


def answer(device_ids: list[str], *, envs: dict | None = None, nodes: tuple[str, ...] = (),
           programs: dict | None = None) -> dict:
    """One container's share of an allocation answer: the device plugin API's response and mounted programs."""
    response = {"envs": envs or {}, "devices": [{"containerPath": p, "hostPath": p, "permissions": "rw"} for p in nodes]}
    doc = {"devices": {GPU: device_ids}, "response": response}
    if programs:
        response["mounts"] = [{"containerPath": path, "hostPath": path, "readOnly": True} for path in programs]
        doc["programs"] = programs
    return doc


def allocate(h, pod: str, body: dict) -> None:
    h.api.patch("pods", pod, {"metadata": {"annotations": {ALLOCATION_ANNOTATION: json.dumps(body)}}}, "merge",
                "default")


def rejected(h, name: str) -> tuple[str, str, str]:
    status = h.get(name)["status"]
    return status["phase"], status["reason"], status["message"]


def test_a_pod_bypassing_the_scheduler_is_rejected_out_of_gpus():
    async def body(h):
        advertise_gpus(h, 8, plugin=False)
        for i in range(8):
            h.pod(f"train-{i}", [gpu_container(**shell("sleep 3600"))])
        for i in range(8):
            await h.phase(f"train-{i}", "Running")
        h.pod("one-too-many", [gpu_container(**shell("sleep 3600"))])
        await h.phase("one-too-many", "Failed")
        message = "Node didn't have enough resource: nvidia.com/gpu, requested: 1, used: 8, capacity: 8"
        assert rejected(h, "one-too-many") == ("Failed", "OutOfnvidia.com/gpu", f"Pod was rejected: {message}")
        assert h.events("one-too-many") == [("Warning", "OutOfnvidia.com/gpu", message, None)]
        assert "conditions" not in h.get("one-too-many")["status"]
    run(body, nodes=(H100,))


def test_cpu_node_affinity_and_no_execute_taint_rejections():
    async def body(h):
        h.pod("big", [container(resources={"requests": {"cpu": "64"}})])
        h.pod("picky", [container()], nodeSelector={"pool": "h100"})
        h.api.patch("nodes", "tainted", {"spec": {"taints": [{"key": "maintenance", "effect": "NoExecute"}]}}, "merge")
        h.pod("evicted", [container()], node="tainted")
        for name in ("big", "picky", "evicted"):
            await h.phase(name, "Failed")
        assert rejected(h, "big") == ("Failed", "OutOfcpu", "Pod was rejected: Node didn't have enough resource: cpu, "
                                      "requested: 64000, used: 0, capacity: 8000")
        assert rejected(h, "picky") == ("Failed", "NodeAffinity", "Pod was rejected: Predicate NodeAffinity failed: "
                                        "node(s) didn't match Pod's node affinity/selector")
        assert rejected(h, "evicted") == ("Failed", "TaintToleration", "Pod was rejected: Predicate TaintToleration "
                                          "failed: node(s) had taints that the pod didn't tolerate")
    run(body, nodes=({}, {"name": "tainted"}))


def test_a_gpu_pod_waits_for_its_allocation_then_sees_its_device():
    async def body(h):
        advertise_gpus(h)
        h.pod("smi", [gpu_container(image="nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                                    **shell("nvidia-smi -L; printenv NVIDIA_VISIBLE_DEVICES; ls /dev | grep nvidia0"))],
              restartPolicy="Never")
        await asyncio.sleep(0.2)
        pod = h.get("smi")
        assert pod["status"]["phase"] == "Pending" and "podIP" not in pod["status"]
        assert pod["status"]["containerStatuses"][0]["state"] == {"waiting": {"reason": "ContainerCreating"}}
        assert h.event_count("smi", "Pulling") == 0
        allocate(h, "smi", {"containers": {"c": answer(
            ["GPU-3b4c1e7a"], envs={"NVIDIA_VISIBLE_DEVICES": "GPU-3b4c1e7a"}, nodes=("/dev/nvidia0", "/dev/nvidiactl"),
            programs={SMI: {"-L": "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-3b4c1e7a)\n"}})}})
        await h.phase("smi", "Succeeded")
        assert h.api.logs("default", "smi", {}) == \
            "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-3b4c1e7a)\nGPU-3b4c1e7a\nnvidia0\n"
    run(body, nodes=(H100,))


def test_an_allocation_error_fails_the_pod_as_unexpected_admission_error():
    async def body(h):
        advertise_gpus(h)
        h.pod("shared", [gpu_container(2, **shell("sleep 3600"))])
        await asyncio.sleep(0.1)
        error = "request for 'nvidia.com/gpu: 2' too large: maximum request size for shared resources is 1"
        allocate(h, "shared", {"containers": {}, "error": error})
        await h.phase("shared", "Failed")
        message = f"Allocate failed due to rpc error: code = Unknown desc = {error}, which is unexpected"
        assert rejected(h, "shared") == ("Failed", "UnexpectedAdmissionError", f"Pod was rejected: {message}")
        assert ("Warning", "UnexpectedAdmissionError", message, None) in h.events("shared")
    run(body, nodes=(H100,))


def test_vectoradd_needs_its_gpu():
    async def body(h):
        advertise_gpus(h)
        image = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
        h.pod("vectoradd", [gpu_container(image=image)], restartPolicy="OnFailure")
        await asyncio.sleep(0.05)
        allocate(h, "vectoradd", {"containers": {"c": answer(["GPU-1"], envs={"NVIDIA_VISIBLE_DEVICES": "GPU-1"},
                                                             nodes=("/dev/nvidia0", "/dev/nvidiactl"))}})
        await h.phase("vectoradd", "Succeeded")
        assert h.api.logs("default", "vectoradd", {}).splitlines()[-2:] == ["Test PASSED", "Done"]
        h.pod("no-gpu", [container(image=image)], restartPolicy="Never")
        await h.phase("no-gpu", "Failed")
        assert h.api.logs("default", "no-gpu", {}) == ("[Vector addition of 50000 elements]\nFailed to allocate device "
                                                       "vector A (error code no CUDA-capable device is detected)!\n")
    run(body, nodes=(H100,))


def test_any_plugins_device_nodes_and_mounts_are_created_as_given():
    """The node agent knows no vendor: another plugin's resource, device nodes, mounts and program work alike."""
    fpga = "example.com/fpga"

    async def body(h):
        h.api.patch("nodes", "worker", {"metadata": {"annotations": {PLUGIN_RESOURCES_ANNOTATION: fpga}}}, "merge")
        current = h.api.get("nodes", "worker")
        current["status"]["capacity"][fpga] = current["status"]["allocatable"][fpga] = "2"
        h.api.update("nodes", current, subresource="status", manager="fpga-device-plugin")
        tool = "/opt/fpga/bin/fpga-info"
        h.pod("accel", [container(resources={"limits": {fpga: "1"}}, **shell(
            f"ls /dev/xfpga0 /dev/xfpga-ctl /etc/fpga.conf; [ -x {tool} ] && [ ! -x /etc/fpga.conf ] && echo runs; "
            "fpga-info --list; echo $FPGA_SLOT"))],
              restartPolicy="Never")
        await asyncio.sleep(0.1)
        allocate(h, "accel", {"containers": {"c": {"devices": {fpga: ["slot-1"]}, "response": {
            "envs": {"FPGA_SLOT": "1"},
            "devices": [{"containerPath": "/dev/xfpga0", "hostPath": "/dev/xfpga1", "permissions": "rw"},
                        {"containerPath": "/dev/xfpga-ctl", "hostPath": "/dev/xfpga-ctl", "permissions": "r"}],
            "mounts": [{"containerPath": tool, "hostPath": tool, "readOnly": True},
                       {"containerPath": "/etc/fpga.conf", "hostPath": "/etc/fpga.conf", "readOnly": True}],
            "cdiDevices": [{"name": "example.com/fpga=slot-1"}]},
            "programs": {tool: {"--list": "slot 1: ready\n"}}}}})
        await h.phase("accel", "Succeeded")
        assert h.api.logs("default", "accel", {}).splitlines() == [
            "/dev/xfpga0", "/dev/xfpga-ctl", "/etc/fpga.conf", "runs", "slot 1: ready", "1"]
    run(body)
