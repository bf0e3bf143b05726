"""The emulated ``nvidia-dcgm-exporter``'s ``/metrics``: Prometheus text as dcgm-exporter 4.5.3-4.8.2 prints it.

The counters, their types and HELP lines are the exporter's defaults (``etc/default-counters.csv``,
``data/dcgm-counters.yaml``); each sample's labels follow ``internal/pkg/rendermetrics/render_metrics.go``:
``gpu``, ``UUID``, ``pci_bus_id``, ``device``, ``modelName``, then ``GPU_I_PROFILE``/``GPU_I_ID`` for a MIG
GPU instance, ``Hostname`` (the ``NODE_NAME`` the operator gives the exporter), then the attributes in
Go's sorted map order: the ``DCGM_FI_DRIVER_VERSION`` label field and, for a device a container holds,
``container``/``namespace``/``pod`` (``internal/pkg/transformation/kubernetes.go``; with time-slicing
every replica maps to the one GPU, and on a MIG GPU the parent GPU's samples carry its last MIG pod, as
that code's ``deviceToPodMap`` ends up). The values are the workload model's (:mod:`.usage`), with the
node's faults (:mod:`.faults`): ``DCGM_FI_DEV_XID_ERRORS`` is the GPU's last XID, a thermal slowdown halves the
SM clock, and a GPU off the bus reports nothing but its XID (DCGM reads blanks from it, which the exporter skips).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from importlib import resources

import yaml

from . import faults
from .pods import meta
from .usage import DeviceUse, NodeUsage, power_w, temperature_c

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(frozen=True)
class Counter:
    field: str
    type: str
    help: str
    entity: str      # gpu | instance | nomig
    value: str
    double: bool


@lru_cache(maxsize=1)
def counters() -> tuple[Counter, ...]:
    doc = yaml.safe_load(resources.files(__package__).joinpath("data/dcgm-counters.yaml").read_text())
    return tuple(Counter(c["field"], c["type"], c["help"], c["entity"], c["value"], c.get("format") == "double")
                 for c in doc)


# Fields beyond the default counters that a custom counters file (dcgmExporter.config.name) may name, with the
# figure each reads: the faults' ECC counts and NVML's clock event reasons (DCGM_FI_DEV_CLOCK_THROTTLE_REASONS is
# the field's name before DCGM renamed it).
EXTRA_FIELDS = {
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": "ecc_dbe", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": "zero",
    "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": "ecc_dbe", "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL": "zero",
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": "clock_reasons", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": "clock_reasons",
}


class CountersError(ValueError):
    """A counters file the exporter refuses."""


def parse_counters(text: str) -> tuple[Counter, ...]:
    """A counters CSV (``FIELD, type, help``; ``#`` comments), as ``internal/pkg/counters`` reads it: the default
    file's fields keep their entity and figure, the fields of :data:`EXTRA_FIELDS` are per GPU; fields the
    emulation has no figure for are left out."""
    known = {c.field: c for c in counters()}
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split(",", 2)]
        if len(parts) != 3:
            raise CountersError(f"malformed CSV line: {line}")
        field, kind, help_text = parts
        if kind not in ("gauge", "counter", "label"):
            raise CountersError(f"could not find Prometheus metric type {kind}")
        if field in known:
            out.append(Counter(field, kind, help_text, known[field].entity, known[field].value, known[field].double))
        elif field in EXTRA_FIELDS:
            out.append(Counter(field, kind, help_text, "gpu", EXTRA_FIELDS[field], False))
    return tuple(out)


@lru_cache(maxsize=1)
def _activity() -> tuple[dict, int]:
    doc = yaml.safe_load(resources.files(__package__).joinpath("data/workloads.yaml").read_text())
    return doc["activity"], int(doc["idleSmClockMhz"])


def _value(name: str, use: NodeUsage, device: DeviceUse, uptime_s: float) -> float:
    index = device.gpu_index
    busy = device.util > 0                   # this GPU or MIG instance
    gpu_busy = use.gpu_util(index) > 0       # any of the GPU's instances
    activity, idle_clock = _activity()
    model = device.gpu.model
    slowdown = 2 if faults.thermal(use.faults, index) else 1     # HW slowdown: clocks cut by half or more
    figures = {
        "zero": lambda: 0,
        "util": lambda: device.util,
        "sm_clock": lambda: (model.max_graphics_clock_mhz if gpu_busy else idle_clock) // slowdown,
        "xid": lambda: faults.last_xid(use.faults, index),
        "ecc_dbe": lambda: faults.volatile_dbe(use.faults, index),
        "clock_reasons": lambda: faults.clock_event_reasons(use.faults, index, gpu_busy),
        "mem_clock": lambda: model.max_memory_clock_mhz,
        "gpu_temp": lambda: temperature_c(use, index),
        "memory_temp": lambda: temperature_c(use, index) + 4,
        "power": lambda: power_w(use, index),
        "energy": lambda: int(power_w(use, index) * uptime_s * 1000),
        "fb_used": lambda: device.used_mib,
        "fb_free": lambda: device.total_mib - device.used_mib,
        "mem_copy_util": lambda: activity["memCopyUtil"] if busy else 0,
        "engine_active": lambda: device.util / 100,
        "tensor_active": lambda: activity["tensorActive"] if busy else 0.0,
        "dram_active": lambda: activity["dramActive"] if busy else 0.0,
        "pcie_tx": lambda: activity["pcieTxBytes"] if busy else 0,
        "pcie_rx": lambda: activity["pcieRxBytes"] if busy else 0,
    }
    return figures[name]()


def _entities(counter: Counter, use: NodeUsage) -> list[DeviceUse]:
    out = []
    for device in use.devices:
        mig_gpu = device.gpu.mig_enabled
        if counter.entity == "gpu" and device.mig is None:
            out.append(device)
        elif counter.entity == "nomig" and device.mig is None and not mig_gpu:
            out.append(device)
        elif counter.entity == "instance" and (device.mig is not None or not mig_gpu):
            out.append(device)
    return out


def _labels(use: NodeUsage, device: DeviceUse, hostname: str) -> str:
    gpu = device.gpu
    parts = [f'gpu="{device.gpu_index}"', f'UUID="{gpu.uuid}"', f'pci_bus_id="{gpu.bus_id}"',
             f'device="nvidia{device.gpu_index}"', f'modelName="{gpu.model.name}"']
    if device.mig is not None:
        parts += [f'GPU_I_PROFILE="{device.mig.profile.name}"', f'GPU_I_ID="{device.mig.gpu_instance_id}"']
    if hostname:
        parts.append(f'Hostname="{hostname}"')
    attributes = {}
    if use.driver_version:
        attributes["DCGM_FI_DRIVER_VERSION"] = use.driver_version
    holder = device.pod_holder
    if device.mig is None and gpu.mig_enabled:
        holder = next((d.pod_holder for d in reversed(use.devices)
                       if d.gpu_index == device.gpu_index and d.pod_holder), None)
    if holder is not None:
        attributes.update(container=holder.container, namespace=holder.namespace, pod=holder.pod)
    parts += [f'{k}="{v}"' for k, v in sorted(attributes.items())]
    return ",".join(parts)


def render(use: NodeUsage, *, hostname: str, uptime_s: float, collected: tuple[Counter, ...] | None = None) -> str:
    """The exporter's ``/metrics`` body for one node (``collected``: a custom counters file's, else the default)."""
    lines = []
    for counter in counters() if collected is None else collected:
        entities = [d for d in _entities(counter, use) if not d.gpu.lost or counter.value == "xid"]
        if not entities:
            continue
        lines += [f"# HELP {counter.field} {counter.help}", f"# TYPE {counter.field} {counter.type}"]
        for device in entities:
            value = _value(counter.value, use, device, uptime_s)
            text = f"{float(value):f}" if counter.double else f"{int(value)}"
            lines.append(f"{counter.field}{{{_labels(use, device, hostname)}}} {text}")
    return "\n".join(lines) + "\n" if lines else ""


def uptime_seconds(node: dict, now: float | None = None) -> float:
    """Seconds since the node registered (its boot, as far as the emulation knows)."""
    created = meta(node).get("creationTimestamp")
    if not created:
        return 0.0
    start = datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp()
    return max(0.0, (now or time.time()) - start)
