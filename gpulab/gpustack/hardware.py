"""GPU models as NVML reports them, and the identifiers a node's GPUs carry.

The catalog lives in ``data/gpus.yaml`` so that the figures (memory in MiB as
NVML reports it, SM counts, MIG profiles as ``nvidia-smi mig -lgip``/``-lgipp``
print them) can be read and audited next to their sources in
``docs/fidelity.md#gpustack-core``. No library ships this table: NVML only
answers for hardware that is present, and the emulation has none.

The architecture family rule is GPU Feature Discovery's ``getArchFamily``
(NVIDIA/k8s-device-plugin ``internal/lm/resource.go``), so ``nvidia.com/gpu.family``
comes out the way GFD writes it.

UUIDs are deterministic so that a node keeps its GPUs across restarts of the
emulation: ``GPU-`` UUIDs hash (node name, index) like NVML's opaque 128-bit
values; ``MIG-`` UUIDs are version-5 UUIDs, the form drivers since R470 print
(``MIG-a686709d-6dc2-542a-8851-0d2508448c10``).
"""
from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from functools import cache
from importlib import resources

import yaml

NVIDIA_PCI_VENDOR_ID = 0x10DE


@dataclass(frozen=True)
class Engines:
    """Copy engines and media engines (NVDEC, NVENC, NVJPG, OFA) of a GPU or a MIG slice."""

    copy: int
    decoder: int
    encoder: int
    jpeg: int
    ofa: int


@dataclass(frozen=True)
class MigProfile:
    """One GPU instance profile: a row of ``nvidia-smi mig -lgip`` plus its ``-lgipp`` placements."""

    name: str                    # mig-parted / nvidia-smi short name, e.g. "1g.10gb" or "1g.10gb+me"
    id: int                      # GPU instance profile ID (19, 20, 15, 14, 9, 5, 0)
    memory_mib: int
    multiprocessors: int
    compute_slices: int          # the "g" of the name: GPU (and compute) instance slice count
    memory_slices: int           # size on the 8-slice memory axis (-lgipp ":size")
    instances: int               # maximum instances on one GPU
    placements: tuple[int, ...]  # valid start indices on the memory axis (-lgipp "{...}")
    engines: Engines

    @property
    def resource_suffix(self) -> str:
        """The name with '+' replaced by '.', as the device plugin and GFD spell it (``1g.10gb.me``)."""
        return self.name.replace("+", ".")


@dataclass(frozen=True)
class GpuModel:
    """A GPU product as NVML and nvidia-smi describe it."""

    key: str
    name: str                    # NVML product name (nvmlDeviceGetName)
    aliases: tuple[str, ...]
    memory_mib: int              # nvmlDeviceGetMemoryInfo total, MiB
    compute_capability: tuple[int, int]
    multiprocessors: int
    pci_device_id: int           # PCI device ID (0x2330 for H100 SXM5 80GB)
    pci_class: int               # 0x0302: 3D controller
    memory_bus_width_bits: int
    power_limit_w: int
    max_graphics_clock_mhz: int
    max_memory_clock_mhz: int
    engines: Engines
    idle_temperature_c: int
    idle_power_w: int
    idle_perf: str
    idle_persistence: bool
    mig_capable: bool
    bar1_mib_per_memory_slice: int
    mig_profiles: tuple[MigProfile, ...]
    nvlinks: int = 0             # NVLinks between two GPUs of its board (topo -m: NV18 on HGX H100)
    bar1_mib: int = 0            # BAR1 aperture (nvidia-smi -q -d MEMORY)
    reserved_mib: int = 0        # framebuffer the driver reserves (-q -d MEMORY "Reserved")

    @property
    def family(self) -> str:
        return architecture_family(*self.compute_capability)

    @property
    def pci_device_filter_id(self) -> str:
        """The ID mig-parted matches ``device-filter`` against: ``0x233010DE``."""
        return f"0x{self.pci_device_id:04X}{NVIDIA_PCI_VENDOR_ID:04X}"

    def mig_profile(self, name: str) -> MigProfile:
        for profile in self.mig_profiles:
            if profile.name == name:
                return profile
        raise KeyError(f"{self.name} has no MIG profile {name!r}")


def architecture_family(major: int, minor: int) -> str:
    """``getArchFamily`` from NVIDIA/k8s-device-plugin internal/lm/resource.go (v0.18)."""
    if major == 1:
        return "tesla"
    if major == 2:
        return "fermi"
    if major == 3:
        return "kepler"
    if major == 5:
        return "maxwell"
    if major == 6:
        return "pascal"
    if major == 7:
        return "volta" if minor < 5 else "turing"
    if major == 8:
        return "ampere" if minor < 9 else "ada-lovelace"
    if major == 9:
        return "hopper"
    if major in (10, 12):
        return "blackwell"
    return "undefined"


def _engines(raw: dict) -> Engines:
    return Engines(raw["copy"], raw["decoder"], raw["encoder"], raw["jpeg"], raw["ofa"])


def _model(raw: dict) -> GpuModel:
    profiles = tuple(
        MigProfile(
            name=p["name"], id=p["id"], memory_mib=p["memory_mib"], multiprocessors=p["multiprocessors"],
            compute_slices=p["compute_slices"], memory_slices=p["memory_slices"], instances=p["instances"],
            placements=tuple(p["placements"]), engines=_engines(p["engines"]),
        )
        for p in raw["mig_profiles"]
    )
    return GpuModel(
        key=raw["key"], name=raw["name"], aliases=tuple(raw["aliases"]), memory_mib=raw["memory_mib"],
        compute_capability=tuple(raw["compute_capability"]), multiprocessors=raw["multiprocessors"],
        pci_device_id=raw["pci_device_id"], pci_class=raw["pci_class"],
        memory_bus_width_bits=raw["memory_bus_width_bits"], power_limit_w=raw["power_limit_w"],
        max_graphics_clock_mhz=raw["max_clocks_mhz"]["graphics"],
        max_memory_clock_mhz=raw["max_clocks_mhz"]["memory"], engines=_engines(raw["engines"]),
        idle_temperature_c=raw["idle"]["temperature_c"], idle_power_w=raw["idle"]["power_w"],
        idle_perf=raw["idle"]["perf"], idle_persistence=raw["idle"]["persistence"],
        mig_capable=raw["mig_capable"], bar1_mib_per_memory_slice=raw.get("bar1_mib_per_memory_slice", 0),
        nvlinks=raw.get("nvlinks", 0), bar1_mib=raw.get("bar1_mib", 0), reserved_mib=raw.get("reserved_mib", 0),
        mig_profiles=profiles,
    )


@cache
def catalog() -> tuple[GpuModel, ...]:
    """Every model in ``data/gpus.yaml``, in file order."""
    text = resources.files(__package__).joinpath("data/gpus.yaml").read_text()
    return tuple(_model(raw) for raw in yaml.safe_load(text)["gpus"])


def gpu_model(name_or_alias: str) -> GpuModel:
    """Look a model up by catalog key, NVML name, alias or GFD product label (case-insensitive)."""
    wanted = name_or_alias.strip().lower()
    for model in catalog():
        names = (model.key, model.name, *model.aliases)
        if wanted in (n.lower() for n in names):
            return model
    known = ", ".join(m.key for m in catalog())
    raise KeyError(f"unknown GPU model {name_or_alias!r}; known models: {known}")


def gpu_uuid(node_name: str, index: int) -> str:
    """A stable ``GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`` UUID for GPU ``index`` of ``node_name``."""
    digest = hashlib.sha256(f"gpulab-gpu/{node_name}/{index}".encode()).hexdigest()
    return f"GPU-{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


_MIG_NAMESPACE = uuid.UUID("6a1d9f3e-5b0c-4c1e-9a6f-2f4e8d7c1b03")


def mig_uuid(gpu: str, gpu_instance_id: int, compute_instance_id: int) -> str:
    """A stable ``MIG-<uuid5>`` for compute instance ``compute_instance_id`` of GPU instance ``gpu_instance_id``."""
    return f"MIG-{uuid.uuid5(_MIG_NAMESPACE, f'{gpu}/{gpu_instance_id}/{compute_instance_id}')}"
