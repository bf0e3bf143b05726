"""The workload model (usage.py) and the dcgm-exporter rendering (dcgm.py), without a cluster."""
from __future__ import annotations

import json

from gpulab.contract import (ALLOCATION_ANNOTATION, Allocation, ContainerAllocation, ContainerAllocateResponse,
                             parse_allocation)
from gpulab.gpustack import dcgm
from gpulab.gpustack.hardware import gpu_uuid, mig_uuid
from gpulab.gpustack.nodestate import MIG_LAYOUT_ANNOTATION
from gpulab.gpustack.usage import container_busy, node_usage

NODE = "n1"


def node(count=2, model="NVIDIA H100 80GB HBM3", layout=None) -> dict:
    notes = {"gpulab.dev/gpu-model": model, "gpulab.dev/gpu-count": str(count)}
    if layout:
        notes[MIG_LAYOUT_ANNOTATION] = json.dumps(layout)
    labels = {"nvidia.com/cuda.driver-version.major": "580", "nvidia.com/cuda.driver-version.minor": "105",
              "nvidia.com/cuda.driver-version.revision": "08"}
    return {"metadata": {"name": NODE, "annotations": notes, "labels": labels,
                         "creationTimestamp": "2026-01-01T00:00:00Z"}}


def pod(name, uuid, command, image="nvcr.io/nvidia/pytorch:24.05-py3", created="2026-01-01T00:00:01Z") -> dict:
    answer = Allocation({"main": ContainerAllocation({"nvidia.com/gpu": [uuid]}, ContainerAllocateResponse(
        envs={"NVIDIA_VISIBLE_DEVICES": uuid}))})
    return {"metadata": {"name": name, "namespace": "ml", "creationTimestamp": created,
                         "annotations": {ALLOCATION_ANNOTATION: answer.to_json()}},
            "spec": {"containers": [{"name": "main", "image": image, "command": command}]},
            "status": {"phase": "Running"}}


def test_what_counts_as_busy():
    assert container_busy({"image": "busybox", "command": ["python", "train.py"]})
    assert container_busy({"image": "nvcr.io/nvidia/pytorch:24.05-py3", "command": ["bash", "-c", "./run.sh"]})
    assert not container_busy({"image": "nvcr.io/nvidia/pytorch:24.05-py3", "command": ["sleep", "infinity"]})
    assert not container_busy({"image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["sh"]})


def test_time_sliced_neighbours_add_up_and_the_last_pod_is_named():
    gpu0 = gpu_uuid(NODE, 0)
    use = node_usage(node(), [pod("a", gpu0, ["python", "t.py"]),
                              pod("b", gpu0, ["sleep", "9"], created="2026-01-01T00:00:02Z")])
    device = use.device(gpu0)
    assert device.util == 100 and device.used_mib == int(81559 * 0.3)
    assert device.pod_holder.pod == "b"
    assert use.device(gpu_uuid(NODE, 1)).used_mib == 0


def test_metrics_lines_as_the_exporter_prints_them():
    gpu0 = gpu_uuid(NODE, 0)
    text = dcgm.render(node_usage(node(count=1), [pod("a", gpu0, ["python"])]), hostname=NODE, uptime_s=10)
    line = next(l for l in text.splitlines() if l.startswith("DCGM_FI_DEV_GPU_UTIL{"))
    assert line == (f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",UUID="{gpu0}",pci_bus_id="00000000:53:00.0",device="nvidia0",'
                    f'modelName="NVIDIA H100 80GB HBM3",Hostname="{NODE}",DCGM_FI_DRIVER_VERSION="580.105.08",'
                    f'container="main",namespace="ml",pod="a"}} 100')
    assert "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n" in text
    assert 'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0"' in text and text.count(" 1.000000\n") == 1


def test_a_mig_instance_has_its_own_memory():
    layout = [[["1g.10gb", 0], ["1g.10gb", 1]]]
    n = node(count=1, layout=layout)
    bare = node_usage(n, [])
    slice_uuid = bare.devices[1].uuid
    assert slice_uuid == mig_uuid(gpu_uuid(NODE, 0), bare.devices[1].mig.gpu_instance_id, 0)
    use = node_usage(n, [pod("s", slice_uuid, ["python"])])
    text = dcgm.render(use, hostname=NODE, uptime_s=1)
    used = [l for l in text.splitlines() if l.startswith("DCGM_FI_DEV_FB_USED{")]
    assert len(used) == 2 and all('GPU_I_PROFILE="1g.10gb"' in l for l in used)
    mine = next(l for l in used if 'pod="s"' in l)
    assert mine.endswith(f" {15 + int(9984 * 0.3)}")
    assert "DCGM_FI_DEV_GPU_UTIL{" not in text


def test_native_programs_survive_the_annotation():
    answer = Allocation({"c": ContainerAllocation(native_programs={"/usr/bin/nvidia-smi": "nvidia-smi"})})
    assert parse_allocation(answer.to_json()).for_container("c").native_programs == {
        "/usr/bin/nvidia-smi": "nvidia-smi"}
