"""What the GPUs of one node are doing: the emulation's workload model, read from the node and its pods.

No program really runs on an emulated GPU, so its use is modelled from what the API shows:

* which devices a container holds: its ``NVIDIA_VISIBLE_DEVICES`` in the device plugin's answer
  (the pod's ``gpulab.dev/device-allocation`` annotation), GPU or MIG UUIDs;
* what the container does with them (``data/workloads.yaml``): a running container whose command runs
  a training program (``python``, ``torchrun``, ...), or a training image (``nvcr.io/nvidia/pytorch``)
  whose command is not an idle one (``sleep``), is *busy*: it holds a CUDA context with a share of the
  device's memory and keeps the device's engines active; any other holder (a CUDA base image that
  sleeps) leaves the device idle and uses none of its memory; so does a container that is not running (an MPS
  client whose modelled memory is over its share fails: :mod:`.cudaworkload`).

A device is as busy as its busiest process (time-sliced replicas take turns on one GPU, so their GPU
reads busy as a whole while each gets a turn); its memory in use is the sum over every holder, so a
time-sliced pod sees its neighbours' memory. A MIG device is its own device: its memory and activity
are those of the processes in it alone, on top of the few MiB a GPU instance uses when empty.
Power and temperature rise from the model's idle figures towards its limits with the activity.
A fault recorded on the node (:mod:`.faults`) shows in the GPUs' readings: the volatile ECC count, a GPU off
the bus, a thermal slowdown's heat and halved clocks (:mod:`.dcgm`).
"""
from __future__ import annotations

import posixpath
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources

import yaml

from ..contract import ALLOCATION_ANNOTATION, parse_allocation
from . import faults as gpu_faults
from .hardware import mig_uuid
from .mig import MigDevice
from .nodestate import node_gpus, read_layout
from .nvidia_smi import SmiGpu, idle_mig_used_mib
from .nvidia_smi import node_gpus as smi_gpus
from .pods import meta, running

GFD_DRIVER_PREFIX = "nvidia.com/cuda.driver-version."


@dataclass(frozen=True)
class WorkloadModel:
    training_programs: frozenset[str]
    training_images: tuple[str, ...]
    idle_programs: frozenset[str]
    busy_util: int
    memory_fraction: float


@lru_cache(maxsize=1)
def workload_model() -> WorkloadModel:
    doc = yaml.safe_load(resources.files(__package__).joinpath("data/workloads.yaml").read_text())
    busy = doc["busy"]
    return WorkloadModel(frozenset(busy["programs"]), tuple(busy["images"]), frozenset(doc["idlePrograms"]),
                         int(busy["gpuUtil"]), float(busy["memoryFraction"]))


def _repository(image: str) -> str:
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    return name.rsplit(":", 1)[0] if ":" in last else name


def container_busy(container: dict) -> bool:
    """Whether a container running ``container``'s command computes on the GPUs it holds."""
    model = workload_model()
    words = [posixpath.basename(w) for part in (container.get("command") or []) + (container.get("args") or [])
             for w in str(part).replace(";", " ").split()]
    if any(w in model.training_programs for w in words):
        return True
    repository = _repository(container.get("image", ""))
    training_image = any(repository == r or repository.endswith("/" + r) for r in model.training_images)
    return training_image and bool(words) and not any(w in model.idle_programs for w in words)


@dataclass(frozen=True)
class Holder:
    """One container holding a device."""

    namespace: str
    pod: str
    container: str
    busy: bool
    memory_mib: int     # what its process uses of the device (0 when it runs nothing on it)


@dataclass(frozen=True)
class DeviceUse:
    """One GPU (``mig`` None) or one MIG device, and who holds it."""

    gpu_index: int
    gpu: SmiGpu
    mig: MigDevice | None
    uuid: str
    holders: tuple[Holder, ...]

    @property
    def total_mib(self) -> int:
        return self.mig.profile.memory_mib if self.mig else self.gpu.model.memory_mib

    @property
    def used_mib(self) -> int:
        base = idle_mig_used_mib(self.mig) if self.mig else 0
        return min(self.total_mib, base + sum(h.memory_mib for h in self.holders))

    @property
    def util(self) -> int:
        return max((workload_model().busy_util for h in self.holders if h.busy), default=0)

    @property
    def pod_holder(self) -> Holder | None:
        """The holder dcgm-exporter labels the device's metrics with: with time-slicing every replica maps
        to one GPU and the last one listed wins (kubernetes.go ``deviceToPodMap``)."""
        return self.holders[-1] if self.holders else None


@dataclass(frozen=True)
class NodeUsage:
    node: str
    gpus: tuple[SmiGpu, ...]
    devices: tuple[DeviceUse, ...]      # per GPU: the GPU, then its MIG devices
    driver_version: str
    faults: tuple[gpu_faults.Fault, ...] = ()   # the node's injected faults (faults.py)

    def gpu_util(self, index: int) -> int:
        return max((d.util for d in self.devices if d.gpu_index == index), default=0)

    def device(self, uuid: str) -> DeviceUse | None:
        return next((d for d in self.devices if d.uuid == uuid), None)


def driver_version(node: dict) -> str:
    labels = meta(node).get("labels") or {}
    parts = [labels.get(GFD_DRIVER_PREFIX + p) for p in ("major", "minor", "revision")]
    return ".".join(p for p in parts if p) if all(parts[:2]) else ""


def visible_uuids(container_allocation) -> list[str]:
    value = container_allocation.response.envs.get("NVIDIA_VISIBLE_DEVICES", "")
    return [u for u in value.split(",") if u]


def node_usage(node: dict, pods: list[dict]) -> NodeUsage | None:
    """The use of ``node``'s GPUs by ``pods`` (those bound to it); None for a node without GPUs."""
    hardware = node_gpus(node)
    if hardware is None:
        return None
    name = meta(node).get("name", "")
    faults = gpu_faults.read(meta(node).get("annotations"))
    gpus = tuple(replace(gpu, uncorrected_ecc=gpu_faults.volatile_dbe(faults, i),
                         lost=gpu_faults.off_the_bus(faults, i))
                 for i, gpu in enumerate(smi_gpus(hardware.model, name, read_layout(node, hardware))))
    holders: dict[str, list[Holder]] = {}
    ordered = sorted(pods, key=lambda p: (meta(p).get("creationTimestamp") or "", meta(p).get("name", "")))
    for pod in ordered:
        raw = (meta(pod).get("annotations") or {}).get(ALLOCATION_ANNOTATION)
        if not raw or not running(pod):
            continue
        specs = {c.get("name"): c for c in (pod.get("spec") or {}).get("containers") or []}
        states = {s.get("name"): s.get("state") for s in (pod.get("status") or {}).get("containerStatuses") or []}
        for cname, given in parse_allocation(raw).containers.items():
            if cname not in specs:
                continue    # init containers have finished by the time the pod runs
            if states.get(cname) is not None and "running" not in states[cname]:
                continue    # a container that ended (an MPS client over its share, crash-looping) holds nothing
            busy = container_busy(specs[cname])
            for uuid in visible_uuids(given):
                holders.setdefault(uuid, []).append(Holder(meta(pod).get("namespace", ""), meta(pod).get("name", ""),
                                                           cname, busy, 0))
    devices = []
    fraction = workload_model().memory_fraction
    for index, gpu in enumerate(gpus):
        entries = [(None, gpu.uuid)] + [(d, _mig_uuid(gpu, d)) for d in gpu.mig_devices]
        for mig, uuid in entries:
            total = mig.profile.memory_mib if mig else gpu.model.memory_mib
            here = tuple(Holder(h.namespace, h.pod, h.container, h.busy, int(total * fraction) if h.busy else 0)
                         for h in holders.get(uuid, ()))
            devices.append(DeviceUse(index, gpu, mig, uuid, here))
    return NodeUsage(name, gpus, tuple(devices), driver_version(node), faults)


def _mig_uuid(gpu: SmiGpu, device: MigDevice) -> str:
    return mig_uuid(gpu.uuid, device.gpu_instance_id, device.compute_instance_id)


def power_w(use: NodeUsage, index: int) -> float:
    model = use.gpus[index].model
    return model.idle_power_w + (model.power_limit_w - model.idle_power_w) * 0.8 * use.gpu_util(index) / 100


def temperature_c(use: NodeUsage, index: int) -> int:
    """Idle plus the activity's heat; a GPU in thermal slowdown is as hot as the slowdown's threshold."""
    if gpu_faults.thermal(use.faults, index):
        return gpu_faults.THERMAL_SLOWDOWN_TEMPERATURE_C
    return use.gpus[index].model.idle_temperature_c + round(35 * use.gpu_util(index) / 100)
