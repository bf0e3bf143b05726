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
