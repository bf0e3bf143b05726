"""NVIDIA's DRA driver for GPUs, what it publishes and answers: DeviceClasses, ResourceSlices, prepared devices.

The kubelet plugin of kubernetes-sigs/dra-driver-nvidia-gpu (driver name
``gpu.nvidia.com``; NVIDIA ships it as the ``nvidia-dra-driver-gpu`` chart)
publishes the GPUs of its node as the devices of one pool named after the node:

* a whole GPU is ``gpu-<minor>`` (``GpuInfo.CanonicalName``) with the attributes
  of ``GpuInfo.GetDevice`` (cmd/gpu-kubelet-plugin/deviceinfo.go): ``type``
  ``gpu``, ``uuid``, ``productName``, ``brand``, ``architecture``,
  ``cudaComputeCapability``, ``driverVersion``, ``cudaDriverVersion`` (the last
  three as semantic versions) and the standard ``resource.kubernetes.io/pciBusID`` (v25.12.0, partitions.go
  ``PartDevAttributes``; v25.8 named it ``pcieBusID``), and the capacity ``memory``;
* with the ``DynamicMIG`` feature gate (``featureGates.DynamicMIG=true``, alpha,
  newer than the 25.8 chart) every MIG profile placement the GPU allows is a
  partitionable device ``gpu-<minor>-mig-<profile>-<profile id>-<start>``
  (mig.go ``ToCanonicalName``) of ``type`` ``mig`` with the MIG capacities
  (``CommonCapacitiesMig``); each consumes the parent GPU's counter set
  ``gpu-<minor>-counter-set`` (partitions.go): its capacities as counters plus
  one ``memory-slice-<i>`` per memory slice of its placement, and the whole GPU
  consumes all of them, so overlapping placements exclude each other exactly as
  NVML's placements do. On Kubernetes >= 1.35 (this cluster serves v1.37) the
  counters go in a slice of their own and each GPU's devices in another
  (driver.go ``generateSplitResourceSlices``).

Preparing a claim (``NodePrepareResources``, device_state.go ``prepareDevices``)
yields the CDI device ``k8s.gpu.nvidia.com/device=<device name>`` for each
allocated device (cdi.go ``GetStandardDevice``); the answer here also carries
what that CDI spec puts in the container (the device nodes, the driver's
``nvidia-smi``) and ``NVIDIA_VISIBLE_DEVICES`` with the devices' UUIDs, which the
container-side programs read to know their devices (a deviation: the real CDI
spec injects device nodes, not the variable). ``nvidia-smi`` output comes from
:mod:`.nvidia_smi`, the same renderer the device plugin's answer uses.
"""
from __future__ import annotations

import re
from datetime import datetime, timezone

from ..contract import ContainerAllocation, container_doc
from .allocation import container_answer
from .driver import cuda_version
from .hardware import GpuModel, MigProfile, gpu_uuid, mig_uuid
from .mig import GpuState, MigDevice, gpu_instance_id, whole_gpus
from .nvidia_smi import node_gpus, pci_bus_id, render, render_list, visible

DRIVER = "gpu.nvidia.com"
CDI_VENDOR = "k8s." + DRIVER
CDI_DEVICE_CLASS = "device"
API_VERSION = "resource.k8s.io/v1"
DYNAMIC_MIG_GATE = "DynamicMIG"
NVIDIA_SMI = "/usr/bin/nvidia-smi"

# go-nvlib GetArchitectureAsString, by compute capability major (minor where one major has two architectures).
_ARCHITECTURES = {7: "Volta", 8: "Ampere", 9: "Hopper", 10: "Blackwell", 12: "Blackwell"}
# GetBrandAsString: NVML reports BRAND_NVIDIA ("Nvidia") for the data-centre GPUs in the catalog.
BRAND = "Nvidia"
_MIG_NAME = re.compile(r"^gpu-(\d+)-mig-(.+)-(\d+)-(\d+)$")
_GPU_NAME = re.compile(r"^gpu-(\d+)$")


# k8s.io/dynamic-resource-allocation/deviceattribute StandardDeviceAttributePrefix + "pciBusID".
PCI_BUS_ID_ATTRIBUTE = "resource.kubernetes.io/pciBusID"


def device_classes(*, gpus: bool = True, compute_domains: bool = True,
                   extended_resource_name: bool = True) -> list[dict]:
    """The chart's DeviceClasses (templates/deviceclass-*.yaml), with the selectors it ships. The GPU Operator's
    copies (manifests/state-dra-driver/04*_deviceclass-*.yaml) have the same selectors and no
    ``extendedResourceName``."""
    def cls(name: str, expression: str, **spec) -> dict:
        return {"apiVersion": API_VERSION, "kind": "DeviceClass", "metadata": {"name": name},
                "spec": {"selectors": [{"cel": {"expression": expression}}], **spec}}

    out = []
    if gpus:
        out.append(cls("gpu.nvidia.com", "device.driver == 'gpu.nvidia.com' && "
                                         "device.attributes['gpu.nvidia.com'].type == 'gpu'",
                       **({"extendedResourceName": "nvidia.com/gpu"} if extended_resource_name else {})))
        out.append(cls("mig.nvidia.com", "device.driver == 'gpu.nvidia.com' && "
                                         "device.attributes['gpu.nvidia.com'].type == 'mig'"))
        out.append(cls("vfio.gpu.nvidia.com", "device.driver == 'gpu.nvidia.com' && "
                                              "device.attributes['gpu.nvidia.com'].type == 'vfio'"))
    if compute_domains:
        out.append(cls("compute-domain-daemon.nvidia.com",
                       "device.driver == 'compute-domain.nvidia.com' && "
                       "device.attributes['compute-domain.nvidia.com'].type == 'daemon'"))
        out.append(cls("compute-domain-default-channel.nvidia.com",
                       "device.driver == 'compute-domain.nvidia.com' && "
                       "device.attributes['compute-domain.nvidia.com'].type == 'channel' && "
                       "device.attributes['compute-domain.nvidia.com'].id == 0"))
    return out


# --- what the kubelet plugin publishes ----------------------------------------------------------

def binary_quantity(value: int) -> str:
    """``resource.NewQuantity(value, BinarySI).String()`` for whole numbers: the largest exact binary suffix."""
    for suffix, factor in (("Ei", 1 << 60), ("Pi", 1 << 50), ("Ti", 1 << 40), ("Gi", 1 << 30), ("Mi", 1 << 20),
                           ("Ki", 1 << 10)):
        if value and value % factor == 0:
            return f"{value // factor}{suffix}"
    return str(value)


def semver(version: str) -> str:
    """Masterminds ``semver.MustParse(v).String()``: missing parts are 0, leading zeros dropped."""
    parts = [int(p) for p in version.split(".")[:3]]
    return ".".join(str(p) for p in parts + [0] * (3 - len(parts)))


def _architecture(model: GpuModel) -> str:
    major, minor = model.compute_capability
    if major == 7 and minor >= 5:
        return "Turing"
    if major == 8 and minor >= 9:
        return "Ada Lovelace"
    return _ARCHITECTURES.get(major, "Unknown")


def _common_attributes(model: GpuModel, index: int, driver_version: str) -> dict[str, dict]:
    major, minor = model.compute_capability
    return {
        "productName": {"string": model.name},
        "brand": {"string": BRAND},
        "architecture": {"string": _architecture(model)},
        "cudaComputeCapability": {"version": semver(f"{major}.{minor}")},
        "driverVersion": {"version": semver(driver_version)},
        "cudaDriverVersion": {"version": semver(cuda_version(driver_version))},
        PCI_BUS_ID_ATTRIBUTE: {"string": pci_bus_id(index).lower()[4:]},
    }


def _mig_capacities(profile: MigProfile) -> dict[str, int]:
    e = profile.engines
    return {"multiprocessors": profile.multiprocessors, "copyEngines": e.copy, "decoders": e.decoder,
            "encoders": e.encoder, "jpegEngines": e.jpeg, "ofaEngines": e.ofa, "memory": profile.memory_mib << 20}


def _counter_name(capacity: str) -> str:
    """``camelToDNSName``: ``copyEngines`` -> ``copy-engines``."""
    return re.sub(r"([a-z0-9])([A-Z])", r"\1-\2", capacity).lower()


def counter_set_name(index: int) -> str:
    return f"gpu-{index}-counter-set"


def mig_device_name(index: int, profile: MigProfile, start: int) -> str:
    pname = re.sub(r"[^a-z0-9-.]", "-", profile.name.replace(".", "").lower()).strip("-")
    return f"gpu-{index}-mig-{pname}-{profile.id}-{start}"


def _max_capacities(model: GpuModel) -> dict[str, int]:
    caps: dict[str, int] = {}
    for profile in model.mig_profiles:
        for name, value in _mig_capacities(profile).items():
            caps[name] = max(caps.get(name, 0), value)
    return caps


def _memory_slice_count(model: GpuModel) -> int:
    return max((p.memory_slices for p in model.mig_profiles), default=0)


def _counters(capacities: dict[str, int], start: int, size: int) -> dict[str, dict]:
    counters = {_counter_name(name): {"value": binary_quantity(v) if name == "memory" else str(v)}
                for name, v in capacities.items()}
    counters.update({f"memory-slice-{i}": {"value": "1"} for i in range(start, start + size)})
    return counters


def _capacity(capacities: dict[str, int]) -> dict[str, dict]:
    return {name: {"value": binary_quantity(v) if name == "memory" else str(v)} for name, v in capacities.items()}


def gpu_device(model: GpuModel, node_name: str, index: int, driver_version: str, *, partitionable: bool) -> dict:
    attributes = {"type": {"string": "gpu"}, "uuid": {"string": gpu_uuid(node_name, index)},
                  **_common_attributes(model, index, driver_version)}
    if not partitionable:
        return {"name": f"gpu-{index}", "attributes": attributes,
                "capacity": {"memory": {"value": binary_quantity(model.memory_mib << 20)}}}
    caps = _max_capacities(model)
    return {"name": f"gpu-{index}", "attributes": attributes, "capacity": _capacity(caps),
            "consumesCounters": [{"counterSet": counter_set_name(index),
                                  "counters": _counters(caps, 0, _memory_slice_count(model))}]}


def mig_devices(model: GpuModel, node_name: str, index: int, driver_version: str) -> list[dict]:
    """Every profile placement of GPU ``index`` as a partitionable device (``inspectMigProfilesAndPlacements``)."""
    out = []
    for profile in model.mig_profiles:
        for start in profile.placements:
            caps = _mig_capacities(profile)
            attributes = {"type": {"string": "mig"}, "parentUUID": {"string": gpu_uuid(node_name, index)},
                          "profile": {"string": profile.name}, **_common_attributes(model, index, driver_version)}
            out.append({"name": mig_device_name(index, profile, start), "attributes": attributes,
                        "capacity": _capacity(caps),
                        "consumesCounters": [{"counterSet": counter_set_name(index),
                                              "counters": _counters(caps, start, profile.memory_slices)}]})
    return sorted(out, key=lambda d: d["name"])


def slice_specs(model: GpuModel, count: int, node_name: str, driver_version: str, *,
                dynamic_mig: bool) -> list[dict]:
    """The ``spec`` of each ResourceSlice of the node's pool, without ``pool.generation`` (set on publishing)."""
    def spec(**fields) -> dict:
        return {"driver": DRIVER, "nodeName": node_name,
                "pool": {"name": node_name, "resourceSliceCount": 0}, **fields}

    if not (dynamic_mig and model.mig_capable and model.mig_profiles):
        specs = [spec(devices=[gpu_device(model, node_name, i, driver_version, partitionable=False)
                               for i in range(count)])]
    else:
        caps = _max_capacities(model)
        specs = [spec(sharedCounters=[{"name": counter_set_name(i),
                                       "counters": _counters(caps, 0, _memory_slice_count(model))}
                                      for i in range(count)])]
        specs += [spec(devices=sorted([gpu_device(model, node_name, i, driver_version, partitionable=True),
                                       *mig_devices(model, node_name, i, driver_version)],
                                      key=lambda d: d["name"]))
                  for i in range(count)]
    for s in specs:
        s["pool"]["resourceSliceCount"] = len(specs)
    return specs


# --- what NodePrepareResources answers ----------------------------------------------------------

def _device_state(model: GpuModel, node_name: str, device: str) -> tuple[int, MigDevice | None] | None:
    """GPU index and (for a MIG partition) the MIG device NVML creates for it; None for a name not ours."""
    if m := _GPU_NAME.match(device):
        return int(m.group(1)), None
    if m := _MIG_NAME.match(device):
        index, profile_id, start = int(m.group(1)), int(m.group(3)), int(m.group(4))
        profile = next((p for p in model.mig_profiles if p.id == profile_id
                        and mig_device_name(index, p, start) == device), None)
        if profile is None:
            return None
        return index, MigDevice(profile, gpu_instance_id(profile, start), start)
    return None


def prepare(results: list[dict], model: GpuModel, count: int, node_name: str, driver_version: str,
            now: datetime | None = None) -> dict:
    """The answer for the results of one claim this driver allocated on ``node_name``: every device with its CDI
    ID and what a container using the claim gets (all the claim's GPUs visible, as one CDI spec per claim)."""
    states = list(whole_gpus(count))
    visible_ids: list[str] = []
    for r in results:
        found = _device_state(model, node_name, r.get("device", ""))
        if found is None or found[0] >= count:
            return {"error": f"error preparing devices for claim: allocatable device {r.get('device')!r} "
                             f"not found"}
        index, mig = found
        if mig is None:
            visible_ids.append(gpu_uuid(node_name, index))
        else:
            states[index] = GpuState(True, states[index].devices + (mig,))
            visible_ids.append(mig_uuid(gpu_uuid(node_name, index), mig.gpu_instance_id, mig.compute_instance_id))
    seen = visible(node_gpus(model, node_name, tuple(states)), visible_ids)
    programs = {"": render(seen, driver_version=driver_version, cuda_version=cuda_version(driver_version),
                           now=now or datetime.now(timezone.utc)),
                "-L": render_list(seen)}
    given: ContainerAllocation = container_answer({DRIVER: visible_ids}, ",".join(visible_ids), programs,
                                                  driver_version=driver_version)
    doc = container_doc(given)
    return {"devices": [{"request": r.get("request", ""), "pool": r.get("pool", ""), "device": r.get("device", ""),
                         "cdiDeviceIDs": [f"{CDI_VENDOR}/{CDI_DEVICE_CLASS}={r.get('device', '')}"], **doc}
                        for r in results]}
