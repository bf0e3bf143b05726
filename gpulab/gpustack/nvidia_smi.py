"""``nvidia-smi`` and ``nvidia-smi -L`` output, character for character as a 580-series driver prints them.

nvidia-smi is closed source, so the layout is copied from real 580.105.08 output
(H100 80GB HBM3 in a pod, H100 with a MIG slice in a container, L4) and from
570-series output for the MIG devices table rows, which 580 kept: a 91-column
frame, the GPU table (``Persistence-M``, ``Bus-Id``, ``Memory-Usage``, ``MIG M.``),
the ``MIG devices`` table (``Shared Memory-Usage`` since 580) and the ``Processes``
table. A container sees only the devices the device plugin gave it
(``NVIDIA_VISIBLE_DEVICES``), renumbered from 0: a MIG slice shows its parent
GPU with ``N/A`` memory and the one MIG device; a time-sliced replica shows the
whole GPU, exactly like an exclusive one; an MPS client shows the whole GPU too (NVML
does not apply the control daemon's pinned-memory limit), in ``E. Process`` compute
mode, which the MPS control daemon sets (:func:`under_mps`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Sequence

from .hardware import GpuModel, gpu_uuid, mig_uuid
from .mig import Layout, MigDevice, whole_gpus

WIDTH = 89  # characters between the outer '|'
RULE = "+" + "-" * WIDTH + "+"
GPU_RULE = "+" + "-" * 41 + "+" + "-" * 24 + "+" + "-" * 22 + "+"
MIG_RULE = "+" + "-" * 18 + "+" + "-" * 34 + "+" + "-" * 11 + "+" + "-" * 23 + "+"
BLANK = " " * WIDTH  # the separator line nvidia-smi prints before the Processes table


@dataclass(frozen=True)
class SmiGpu:
    """One GPU as nvidia-smi lists it."""

    model: GpuModel
    uuid: str
    bus_id: str
    mig_enabled: bool = False
    mig_devices: tuple[MigDevice, ...] = ()   # the MIG devices visible, in GPU instance order
    whole_gpu_visible: bool = True            # False in a container given only MIG devices
    # What the GPU is doing now (gpulab/gpustack/usage.py); idle by default.
    memory_used_mib: int = 0
    util: int = 0
    power_w: float | None = None
    temperature_c: int | None = None
    mig_used_mib: tuple[int, ...] = ()        # per MIG device shown, when known
    # "E. Process" once an MPS control daemon has set the GPU EXCLUSIVE_PROCESS (mps/daemon.go setComputeMode).
    compute_mode: str = "Default"
    # Faults (gpulab/gpustack/faults.py): NVML's volatile uncorrectable ECC count; a GPU off the bus NVML cannot reach.
    uncorrected_ecc: int = 0
    lost: bool = False


@dataclass(frozen=True)
class SmiProcess:
    gpu: int
    pid: int
    name: str
    memory_mib: int
    type: str = "C"
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None


def under_mps(gpus: Sequence[SmiGpu]) -> list[SmiGpu]:
    """The GPUs as an MPS control daemon leaves them: whole GPUs in ``EXCLUSIVE_PROCESS`` compute mode."""
    return [gpu if gpu.mig_enabled else replace(gpu, compute_mode="E. Process") for gpu in gpus]


def pci_bus_id(index: int) -> str:
    """Bus IDs of an 8-GPU HGX H100 board (53, 64, ... CA, as on AWS p5), continued for more GPUs."""
    return f"00000000:{0x53 + 0x11 * index:02X}:00.0"


def node_gpus(model: GpuModel, node_name: str, layout: Layout | int) -> tuple[SmiGpu, ...]:
    """The GPUs of a node as its driver sees them (``layout`` or a GPU count for whole GPUs)."""
    states = whole_gpus(layout) if isinstance(layout, int) else layout
    return tuple(
        SmiGpu(model, gpu_uuid(node_name, i), pci_bus_id(i), state.mig_enabled,
               state.devices if state.mig_enabled else ())
        for i, state in enumerate(states)
    )


def visible(gpus: Sequence[SmiGpu], device_ids: Sequence[str]) -> tuple[SmiGpu, ...]:
    """What a container sees given ``NVIDIA_VISIBLE_DEVICES`` (GPU UUIDs, MIG UUIDs, indices or ``all``)."""
    if list(device_ids) == ["all"]:
        return tuple(gpus)
    wanted = set(device_ids)
    result = []
    for index, gpu in enumerate(gpus):
        if gpu.uuid in wanted or str(index) in wanted:
            result.append(gpu)
            continue
        migs = tuple(d for j, d in enumerate(gpu.mig_devices)
                     if mig_uuid(gpu.uuid, d.gpu_instance_id, d.compute_instance_id) in wanted
                     or f"{index}:{j}" in wanted)
        if migs:
            result.append(replace(gpu, mig_devices=migs, whole_gpu_visible=False))
    return tuple(result)


def idle_mig_used_mib(device: MigDevice) -> int:
    """Idle memory a MIG device shows (15 MiB for a 1g, 29 MiB for a 2g slice on H200/H100)."""
    return 14 * device.profile.compute_slices + 1


def _bar1_mib(gpu: SmiGpu, device: MigDevice) -> int:
    return device.profile.memory_slices * gpu.model.bar1_mib_per_memory_slice - 1


def lost_gpu(gpus: Sequence[SmiGpu]) -> str | None:
    """What nvidia-smi prints, and nothing else, when a GPU it should show is off the bus (NVML's
    ``NVML_ERROR_GPU_IS_LOST`` getting the device's handle; exit status 15); None when every GPU answers."""
    lost = next((gpu for gpu in gpus if gpu.lost), None)
    if lost is None:
        return None
    return (f"Unable to determine the device handle for GPU {lost.bus_id[4:]}: GPU is lost.  "
            "Reboot the system to recover this GPU\n")


def render_list(gpus: Sequence[SmiGpu]) -> str:
    """``nvidia-smi -L``."""
    lines = []
    for index, gpu in enumerate(gpus):
        lines.append(f"GPU {index}: {gpu.model.name} (UUID: {gpu.uuid})")
        for j, device in enumerate(gpu.mig_devices):
            uuid = mig_uuid(gpu.uuid, device.gpu_instance_id, device.compute_instance_id)
            lines.append(f"  MIG {device.profile.name:<12}Device {j:>2}: (UUID: {uuid})")
    return "\n".join(lines) + "\n"


def render(gpus: Sequence[SmiGpu], *, driver_version: str, cuda_version: str,
           processes: Sequence[SmiProcess] = (), now: datetime | None = None) -> str:
    """The default ``nvidia-smi`` output for ``gpus`` (the timestamp line only when ``now`` is given)."""
    lines = []
    if now is not None:
        lines.append(now.strftime("%a %b %e %H:%M:%S %Y") + "       ")
    lines += [
        RULE,
        f"| NVIDIA-SMI {driver_version:<23}Driver Version: {driver_version:<15}CUDA Version: {cuda_version:<9}|",
        GPU_RULE,
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
        "|                                         |                        |               MIG M. |",
        "|" + "=" * 41 + "+" + "=" * 24 + "+" + "=" * 22 + "|",
    ]
    for index, gpu in enumerate(gpus):
        lines += _gpu_rows(index, gpu)
        lines.append(GPU_RULE)
    if any(gpu.mig_enabled for gpu in gpus):
        lines.append("")
        lines += _mig_table(gpus)
    lines.append(BLANK)
    lines += _process_table(processes)
    return "\n".join(lines) + "\n"


def _gpu_rows(index: int, gpu: SmiGpu) -> list[str]:
    model = gpu.model
    name = model.name if len(model.name) <= 27 else model.name[:24] + "..."
    persistence = "On" if model.idle_persistence else "Off"
    if gpu.mig_enabled:
        ecc, util, mig_mode = "On", "N/A", "Enabled"
        used = sum(_mig_used(gpu))
        memory = f"{'N/A':>21}   " if not gpu.whole_gpu_visible else _memory_cell(used, model.memory_mib)
    else:
        ecc, util = str(gpu.uncorrected_ecc), f"{gpu.util}%"
        mig_mode = "Disabled" if model.mig_capable else "N/A"
        memory = _memory_cell(gpu.memory_used_mib, model.memory_mib)
    power = f"{round(gpu.power_w if gpu.power_w is not None else model.idle_power_w)}W"
    cap = f"{model.power_limit_w}W"
    temperature = gpu.temperature_c if gpu.temperature_c is not None else model.idle_temperature_c
    perf = "P0" if gpu.util else model.idle_perf
    return [
        f"|{index:>4}  {name:<31}{persistence:<4}|   {gpu.bus_id} {'Off':>3} |{ecc:>21} |",
        f"| N/A   {temperature}C    {perf}{power:>16} / {cap:>5} |{memory}|{util:>8}{gpu.compute_mode:>13} |",
        f"|{'':41}|{'':24}|{mig_mode:>21} |",
    ]


def _mig_used(gpu: SmiGpu) -> tuple[int, ...]:
    """Memory in use of each MIG device shown: as measured, else what an empty GPU instance uses."""
    return gpu.mig_used_mib or tuple(idle_mig_used_mib(d) for d in gpu.mig_devices)


def _memory_cell(used: int, total: int) -> str:
    return f"{f'{used}MiB':>11} / {f'{total}MiB':>9} "


def _mig_table(gpus: Sequence[SmiGpu]) -> list[str]:
    lines = [
        RULE,
        f"|{' MIG devices:':<{WIDTH}}|",
        MIG_RULE,
        "| GPU  GI  CI  MIG |              Shared Memory-Usage |        Vol|        Shared         |",
        "|      ID  ID  Dev |                Shared BAR1-Usage | SM     Unc| CE ENC  DEC  OFA  JPG |",
        "|                  |                                  |        ECC|                       |",
        "|" + "=" * 18 + "+" + "=" * 34 + "+" + "=" * 11 + "+" + "=" * 23 + "|",
    ]
    for index, gpu in enumerate(gpus):
        for j, (device, used) in enumerate(zip(gpu.mig_devices, _mig_used(gpu))):
            profile = device.profile
            engines = profile.engines
            lines += [
                f"|{index:>3}{device.gpu_instance_id:>5}{device.compute_instance_id:>4}{j:>4}  |"
                f"{used:>16}MiB / {profile.memory_mib:>5}MiB    |"
                f" {profile.multiprocessors:<4}{0:>5} |"
                f"{engines.copy:>3}{engines.encoder:>4}{engines.decoder:>5}{engines.ofa:>5}{engines.jpeg:>5} |",
                f"|{'':18}|{0:>16}MiB / {_bar1_mib(gpu, device):>5}MiB    |{'':11}|{'':23}|",
                MIG_RULE,
            ]
    return lines


def _process_table(processes: Sequence[SmiProcess]) -> list[str]:
    lines = [
        RULE,
        f"|{' Processes:':<{WIDTH}}|",
        "|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |",
        "|        ID   ID                                                               Usage      |",
        "|" + "=" * WIDTH + "|",
    ]
    if not processes:
        lines.append(f"|{'  No running processes found':<{WIDTH}}|")
    for p in processes:
        gi = "N/A" if p.gpu_instance_id is None else p.gpu_instance_id
        ci = "N/A" if p.compute_instance_id is None else p.compute_instance_id
        lines.append(f"|{p.gpu:>5}{gi:>5}{ci:>5}{p.pid:>17}{p.type:>7}   {p.name:<36}{p.memory_mib:>7}MiB |")
    lines.append(RULE)
    return lines


# --- nvidia-smi topo -m ---------------------------------------------------------------------------------------
TOPO_LEGEND = (
    "Legend:",
    "",
    "  X    = Self",
    "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)",
    "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node",
    "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)",
    "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)",
    "  PIX  = Connection traversing at most a single PCIe bridge",
    "  NV#  = Connection traversing a bonded set of # NVLinks",
)


def numa_layout(gpu_count: int, cpus: int) -> list[tuple[int, str]]:
    """(NUMA node, CPU affinity list) per GPU of a two-socket host with SMT: GPUs split evenly over the
    sockets, each socket's cores then their hyperthread siblings (``0-47,96-143`` on a 192-CPU node)."""
    sockets = 2 if gpu_count > 1 and cpus >= 4 else 1
    cores = max(cpus // 2, 1) if cpus >= 2 else 1
    per = max(cores // sockets, 1)
    out = []
    for index in range(gpu_count):
        numa = min(index * sockets // max(gpu_count, 1), sockets - 1)
        first = numa * per
        affinity = f"{first}-{first + per - 1}" if per > 1 else str(first)
        if cpus >= 2:
            sibling = cores + first
            affinity += f",{sibling}-{sibling + per - 1}" if per > 1 else f",{sibling}"
        out.append((numa, affinity))
    return out


def render_topology(gpus: Sequence[SmiGpu], cpus: int, node_gpus: Sequence[SmiGpu] = ()) -> str:
    """``nvidia-smi topo -m``: the GPU connection matrix, each GPU's CPU and NUMA affinity, and the legend.
    Board GPUs (SXM) link each pair by the model's NVLinks through NVSwitch; PCIe cards go through the host
    bridges of their socket (NODE) or across sockets (SYS). A GPU's socket is its place among ``node_gpus`` (all
    the node's, where ``gpus`` are a container's few). The header is underlined (ANSI ``ESC[4m``)."""
    every = list(node_gpus) or list(gpus)
    placed = numa_layout(len(every), cpus)
    where = {g.bus_id: placed[i] for i, g in enumerate(every)}
    layout = [where.get(g.bus_id, placed[0]) for g in gpus]
    header = "\t".join([f"GPU{i}" for i in range(len(gpus))] + ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"])
    lines = [f"\t\x1b[4m{header}\x1b[0m"]
    for i, gpu in enumerate(gpus):
        cells = []
        for j, other in enumerate(gpus):
            if i == j:
                cells.append(" X ")
            elif gpu.model.nvlinks and other.model.nvlinks:
                cells.append(f"NV{min(gpu.model.nvlinks, other.model.nvlinks)}")
            else:
                cells.append("NODE" if layout[i][0] == layout[j][0] else "SYS")
        numa, affinity = layout[i]
        lines.append("\t".join([f"GPU{i}", *cells, affinity, f"{numa}\t", "N/A"]))
    return "\n".join(lines) + "\n\n" + "\n".join(TOPO_LEGEND) + "\n\n"


# --- nvidia-smi -q -d MEMORY --------------------------------------------------------------------------------
def _field(indent: int, name: str, value: str) -> str:
    """A line of ``nvidia-smi -q``: the name padded to column 42, then ``: value``."""
    return f"{' ' * indent}{name:<{42 - indent}}: {value}"


def render_memory_query(gpus: Sequence[SmiGpu], *, driver_version: str, cuda_version: str, now: datetime) -> str:
    """``nvidia-smi -q -d MEMORY``: the log header, then each GPU's framebuffer, BAR1 and confidential-compute
    protected memory (a GPU with MIG on shows its MIG devices' memory in the framebuffer figures)."""
    lines = ["", "==============NVSMI LOG==============", "",
             _field(0, "Timestamp", now.strftime("%a %b %e %H:%M:%S %Y")),
             _field(0, "Driver Version", driver_version),
             _field(0, "CUDA Version", cuda_version), "",
             _field(0, "Attached GPUs", str(len(gpus)))]
    for gpu in gpus:
        model = gpu.model
        used = sum(_mig_used(gpu)) if gpu.mig_enabled else gpu.memory_used_mib
        reserved = model.reserved_mib
        lines += [f"GPU {gpu.bus_id}", "    FB Memory Usage",
                  _field(8, "Total", f"{model.memory_mib} MiB"),
                  _field(8, "Reserved", f"{reserved} MiB"),
                  _field(8, "Used", f"{used} MiB"),
                  _field(8, "Free", f"{model.memory_mib - reserved - used} MiB"),
                  "    BAR1 Memory Usage",
                  _field(8, "Total", f"{model.bar1_mib} MiB"),
                  _field(8, "Used", "1 MiB"),
                  _field(8, "Free", f"{model.bar1_mib - 1} MiB"),
                  "    Conf Compute Protected Memory Usage",
                  _field(8, "Total", "0 MiB"), _field(8, "Used", "0 MiB"), _field(8, "Free", "0 MiB"), ""]
    return "\n".join(lines) + "\n"
