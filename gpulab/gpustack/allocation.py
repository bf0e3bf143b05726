"""Device allocation for one pod: which devices each container gets, and what the container then sees.

On a real node the kubelet's device manager picks device IDs for each
container (asking the plugin's ``GetPreferredAllocation`` first), then calls
``Allocate``; the NVIDIA plugin answers with ``NVIDIA_VISIBLE_DEVICES`` (the
GPU or MIG UUIDs behind the IDs, ``DEVICE_LIST_STRATEGY=envvar``) and the
container toolkit, seeing that variable, adds the device nodes (``/dev/nvidiaN``,
``/dev/nvidiactl``, ``/dev/nvidia-uvm``, ``/dev/nvidia-uvm-tools``) and mounts
the driver's ``nvidia-smi``. Here the answer is the pod annotation of the node
agent's handshake (docs/architecture.md, :class:`gpulab.contract.Allocation`),
plugin and toolkit in one: the environment, the device nodes (one
``/dev/nvidiaN`` per device, numbered from 0 as before), the ``nvidia-smi``
mount and its output, rendered for exactly the visible devices (``nvidia-smi``,
``nvidia-smi -L``).

Choice of devices follows NVIDIA/k8s-device-plugin ``internal/rm/allocate.go``:
replicated (time-sliced) devices are spread over the GPUs with the fewest
replicas in use (``distributedAlloc``); whole GPUs and MIG devices go lowest
index first (the kubelet takes the plugin's preferred, topology-aligned list).
A request the plugin refuses (``failRequestsGreaterThanOne``) or that cannot be
met is answered with ``error``, which the node agent turns into the kubelet's
``UnexpectedAdmissionError``.
"""
from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone

from ..contract import (ALLOCATION_ANNOTATION, Allocation, ContainerAllocateResponse, ContainerAllocation, DeviceNode,
                        Mount, parse_allocation)
from .deviceplugin import Device
from .driver import cuda_version
from .hardware import GpuModel
from .latency import expected_latency
from .mig import Layout
from .mpsdaemon import HOST_ROOT, pipe_dir
from .nvidia_smi import node_gpus, render, render_list, under_mps, visible
from .sharing import DevicePluginConfig, admission_error

LATENCY_ANNOTATION = "gpulab.dev/expected-latency"
NVIDIA_SMI = "/usr/bin/nvidia-smi"
# The native program (gpulab.gpustack.observe.nvidia_smi) a node agent that has it runs for the mounted nvidia-smi,
# so that its output follows the GPUs' use; the recorded outputs stand in elsewhere.
NVIDIA_SMI_PROGRAM = "nvidia-smi"
# Where the GPU Operator's driver container keeps the driver's files on the host (its driver root).
_DRIVER_ROOT = "/run/nvidia/driver"
# The control device nodes the toolkit adds for any GPU (nvidia-container-toolkit pkg/nvcdi/common-nvml.go).
_CONTROL_DEVICES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")
# The driver's version file, which a GPU container reads in its /proc (libnvidia-container mounts the driver's
# procfs files, nvc_mount.c mount_procfs: params, version, registry).
DRIVER_VERSION_FILE = "/proc/driver/nvidia/version"
_KUBELET_PREFIX = "Allocate failed due to rpc error: code = Unknown desc = "
_KUBELET_SUFFIX = ", which is unexpected"


def _quantity(value) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


def container_requests(container: dict, resources: set[str]) -> dict[str, int]:
    """Device counts a container asks for among ``resources`` (limits, as extended resources require)."""
    res = container.get("resources") or {}
    wanted = {**(res.get("requests") or {}), **(res.get("limits") or {})}
    return {name: _quantity(v) for name, v in wanted.items() if name in resources and _quantity(v) > 0}


def pod_containers(pod: dict) -> list[dict]:
    spec = pod.get("spec") or {}
    return list(spec.get("initContainers") or []) + list(spec.get("containers") or [])


def pod_requests_any(pod: dict, resources: set[str]) -> bool:
    return any(container_requests(c, resources) for c in pod_containers(pod))


def allocated_ids(pod: dict) -> set[str]:
    """Device IDs recorded in a pod's allocation annotation."""
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(ALLOCATION_ANNOTATION)
    return parse_allocation(raw).device_ids() if raw else set()


def mps_client(resource: str) -> tuple[dict[str, str], tuple[Mount, ...]]:
    """``mpsOptions.updateReponse`` (internal/plugin/mps.go): an MPS client is told the control daemon's pipe
    directory and gets it and the daemon's ``/dev/shm`` mounted from the MPS root on the host."""
    pipe = pipe_dir(resource)
    return ({"CUDA_MPS_PIPE_DIRECTORY": pipe},
            (Mount(pipe, pipe_dir(resource, HOST_ROOT), directory=True),
             Mount("/dev/shm", HOST_ROOT + "/shm", directory=True)))


def driver_version_file(driver_version: str) -> str:
    """``/proc/driver/nvidia/version`` of a driver release: the kernel module's NVRM line. The modules the driver
    container loads are the open ones (gpu-driver-container's ``_resolve_kernel_type`` picks ``kernel-open`` for
    GPUs that support them and for branches from 560 on). The build host and date that NVIDIA's builds append to
    it, and the ``GCC version:`` line that follows, are not known here and left out."""
    return f"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {driver_version}  Release Build\n"


def container_answer(devices: dict[str, list[str]], visible_devices: str, programs: dict[str, str],
                     mps_resource: str = "", driver_version: str = "") -> ContainerAllocation:
    """What a container holding ``devices`` is given: ``NVIDIA_VISIBLE_DEVICES``, a device node per device and the
    control nodes, ``nvidia-smi`` mounted with ``programs`` (its output by argument line) when there are any, the
    driver's version file when its ``driver_version`` is known, and for a replica of ``mps_resource`` what an MPS
    client needs (:func:`mps_client`)."""
    count = sum(len(ids) for ids in devices.values())
    nodes = [f"/dev/nvidia{i}" for i in range(count)] + list(_CONTROL_DEVICES)
    mounts = (Mount(NVIDIA_SMI, _DRIVER_ROOT + NVIDIA_SMI, read_only=True),) if programs else ()
    if driver_version:
        mounts += (Mount(DRIVER_VERSION_FILE, DRIVER_VERSION_FILE, read_only=True,
                         content=driver_version_file(driver_version)),)
    envs = {"NVIDIA_VISIBLE_DEVICES": visible_devices}
    if mps_resource:
        mps_envs, mps_mounts = mps_client(mps_resource)
        envs.update(mps_envs)
        mounts += mps_mounts
    response = ContainerAllocateResponse(envs=envs, mounts=mounts,
                                         devices=tuple(DeviceNode(path, path, "rw") for path in nodes))
    return ContainerAllocation(devices=devices, response=response,
                               programs={NVIDIA_SMI: programs} if programs else {},
                               native_programs={NVIDIA_SMI: NVIDIA_SMI_PROGRAM} if programs else {})


def _pick(devices: list[Device], free: list[Device], count: int, used: set[str]) -> list[Device] | None:
    if len(free) < count:
        return None
    if not any("::" in d.id for d in devices):
        return free[:count]
    load = Counter(d.physical for d in devices if d.id in used)
    chosen: list[Device] = []
    pool = list(free)
    for _ in range(count):
        best = min(pool, key=lambda d: (load[d.physical], d.gpu_index, d.id))
        chosen.append(best)
        pool.remove(best)
        load[best.physical] += 1
    return chosen


def allocate(pod: dict, devices: dict[str, list[Device]], used: set[str], config: DevicePluginConfig, *,
             model: GpuModel, node_name: str, layout: Layout, driver_version: str,
             now: datetime | None = None) -> Allocation:
    """The ``gpulab.dev/device-allocation`` answer for ``pod`` on this node."""
    used = set(used)
    containers: dict[str, ContainerAllocation] = {}
    gpus = node_gpus(model, node_name, layout)
    cuda = cuda_version(driver_version)
    when = now or datetime.now(timezone.utc)
    for container in pod_containers(pod):
        wanted = container_requests(container, set(devices))
        if not wanted:
            continue
        given: dict[str, list[str]] = {}
        physical: list[str] = []
        for resource, count in sorted(wanted.items()):
            refusal = admission_error(config, resource, count)
            if refusal:
                return Allocation(error=refusal.removeprefix(_KUBELET_PREFIX).removesuffix(_KUBELET_SUFFIX))
            pool = devices[resource]
            chosen = _pick(pool, [d for d in pool if d.id not in used], count, used)
            if chosen is None:
                available = sum(1 for d in pool if d.id not in used)
                return Allocation(error=f"requested number of devices unavailable for {resource}. "
                                        f"Requested: {count}, Available: {available}")
            used.update(d.id for d in chosen)
            given[resource] = [d.id for d in chosen]
            physical += [d.physical for d in chosen if d.physical not in physical]
        mps_resource = next((r for r in sorted(given) if r in config.shared_resource_names()), "") \
            if config.strategy == "mps" else ""
        seen = under_mps(visible(gpus, physical)) if mps_resource else visible(gpus, physical)
        containers[container["name"]] = container_answer(given, ",".join(physical), {
            "": render(seen, driver_version=driver_version, cuda_version=cuda, now=when), "-L": render_list(seen)},
            mps_resource, driver_version)
    return Allocation(containers)


def latency_figures(pod: dict, devices: dict[str, list[Device]], active_pods: list[dict], model: GpuModel) -> dict:
    """The latency model's expectation for this pod (:func:`gpulab.gpustack.latency.expected_latency`).

    ``mode`` is ``time-slicing`` when the pod holds a replica, ``mig`` for a MIG
    device, else ``exclusive``; busy neighbours are the other running pods holding
    a replica of the same physical device (the model's worst case: all busy).
    """
    by_id = {d.id: d for devs in devices.values() for d in devs}
    mine = [by_id[i] for i in sorted(allocated_ids(pod)) if i in by_id]
    if not mine:
        return {}
    physical = {d.physical for d in mine}
    profile = next((d.mig_profile for d in mine if d.mig_profile), "")
    if any("::" in d.id for d in mine):
        mode = "time-slicing"
    elif profile:
        mode = "mig"
    else:
        mode = "exclusive"
    neighbours = 0
    if mode == "time-slicing":
        for other in active_pods:
            if other["metadata"]["uid"] != pod["metadata"]["uid"] and \
                    {by_id[i].physical for i in allocated_ids(other) if i in by_id} & physical:
                neighbours += 1
    figures = expected_latency(mode, neighbours=neighbours, mig_profile=profile or None, model=model.key)
    out = {"model": "gpulab.gpustack.latency", "mode": mode, "gpu": model.name, "busyNeighbours": neighbours}
    if profile:
        out["migProfile"] = profile
    return {**out, **figures}
