"""Faults of one emulated GPU, as data: what an instructor or a lab's starting state makes go wrong.

A real GPU reports trouble through its driver: an XID in the kernel log and an NVML event, ECC counters,
clock event reasons. The emulated GPUs have no driver, so a fault is a record on the Node, the
``gpulab.dev/gpu-faults`` annotation (a JSON list of ``{"gpu": INDEX, "xid": N, "since": RFC3339}``, or
``"thermal": true`` instead of an XID), which every model of the stack reads through the API as it reads
the node's hardware annotations: the device plugin's health check (:func:`plugin_marks_unhealthy`),
``nvidia-smi``, dcgm-exporter, the workload model's processes (:func:`process_error`).

The faults (NVIDIA's XID catalog, docs.nvidia.com/deploy/xid-errors):

* XID 79, the GPU has fallen off the bus: NVML cannot reach it (``GPU is lost``); every process on it dies;
  only a node reboot brings it back (a GPU reset cannot reach a device that is off the bus).
* XID 48, a double-bit (uncorrectable) ECC error: the process using the memory dies; the volatile
  uncorrectable ECC count rises; a GPU reset (``nvidia-smi -r``) or a reboot clears the volatile counts.
* XID 31, a GPU memory page fault: an application's own illegal address (an application error the device
  plugin ignores); the faulting process dies, the GPU is fine.
* a thermal slowdown (no XID): the hardware halves the clocks to cool down (NVML's HW slowdown and HW thermal
  slowdown clock event reasons); processes run on, slower; it ends when the GPU has cooled (the fault cleared).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone

FAULTS_ANNOTATION = "gpulab.dev/gpu-faults"

FALLEN_OFF_THE_BUS = 79
DOUBLE_BIT_ECC = 48
MMU_FAULT = 31
# k8s-device-plugin internal/rm/health.go getDisabledHealthCheckXids: application errors, the GPU stays healthy.
APPLICATION_XIDS = frozenset({13, 31, 43, 45, 68, 109})
XIDS = {
    FALLEN_OFF_THE_BUS: "GPU has fallen off the bus",
    DOUBLE_BIT_ECC: "double-bit ECC error",
    MMU_FAULT: "GPU memory page fault",
}
# The CUDA runtime's error strings (cudaGetErrorString) a process on the GPU dies with, in PyTorch's words.
CUDA_ERRORS = {
    FALLEN_OFF_THE_BUS: "unknown error",                        # cudaErrorUnknown
    DOUBLE_BIT_ECC: "uncorrectable ECC error encountered",      # cudaErrorECCUncorrectable
    MMU_FAULT: "an illegal memory access was encountered",      # cudaErrorIllegalAddress
}
# NVML clock event reasons (nvml.h nvmlClocksEventReason*): HW slowdown 0x8, HW thermal slowdown 0x40.
HW_SLOWDOWN = 0x8
HW_THERMAL_SLOWDOWN = 0x40
GPU_IDLE = 0x1
THERMAL_SLOWDOWN_TEMPERATURE_C = 92     # above the H100's/A100's slowdown threshold (nvidia-smi -q: 87-92 C)


class FaultError(ValueError):
    """A fault that cannot be injected or cleared as asked, with what to do instead."""


@dataclass(frozen=True)
class Fault:
    gpu: int
    xid: int | None      # None for a thermal slowdown
    since: str           # RFC 3339, when it struck

    @property
    def thermal(self) -> bool:
        return self.xid is None

    def to_dict(self) -> dict:
        body: dict = {"gpu": self.gpu}
        body.update({"thermal": True} if self.thermal else {"xid": self.xid})
        body["since"] = self.since
        return body

    def since_seconds(self) -> float:
        return datetime.fromisoformat(self.since.replace("Z", "+00:00")).timestamp()


def now_rfc3339(now: float | None = None) -> str:
    moment = datetime.now(timezone.utc) if now is None else datetime.fromtimestamp(now, timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def check_xid(xid: int) -> int:
    if xid not in XIDS:
        known = ", ".join(f"{n} ({text})" for n, text in sorted(XIDS.items()))
        raise FaultError(f"XID {xid} is not one gpulab emulates; choose one of {known}, or --thermal for a "
                         "thermal slowdown")
    return xid


def read(annotations: dict[str, str] | None) -> tuple[Fault, ...]:
    """The faults recorded on a node (its annotations); a record that does not parse counts as none."""
    raw = (annotations or {}).get(FAULTS_ANNOTATION)
    if not raw:
        return ()
    try:
        items = json.loads(raw)
        return tuple(Fault(int(i["gpu"]), None if i.get("thermal") else int(i["xid"]), str(i["since"]))
                     for i in items)
    except (ValueError, TypeError, KeyError):
        return ()


def write(faults: tuple[Fault, ...] | list[Fault]) -> str | None:
    """The annotation's value for ``faults`` (None: remove it)."""
    if not faults:
        return None
    return json.dumps([f.to_dict() for f in faults], separators=(",", ":"))


def on_gpu(faults, index: int) -> tuple[Fault, ...]:
    return tuple(f for f in faults if f.gpu == index)


def off_the_bus(faults, index: int) -> bool:
    return any(f.xid == FALLEN_OFF_THE_BUS for f in on_gpu(faults, index))


def thermal(faults, index: int) -> bool:
    return any(f.thermal for f in on_gpu(faults, index))


def last_xid(faults, index: int) -> int:
    """dcgm-exporter's ``DCGM_FI_DEV_XID_ERRORS``: the value of the last XID on the GPU (0: none)."""
    xids = sorted((f for f in on_gpu(faults, index) if not f.thermal), key=lambda f: f.since)
    return xids[-1].xid if xids else 0


def volatile_dbe(faults, index: int) -> int:
    """NVML's volatile uncorrectable ECC count: one per double-bit error since the last reset or reboot."""
    return sum(1 for f in on_gpu(faults, index) if f.xid == DOUBLE_BIT_ECC)


def clock_event_reasons(faults, index: int, busy: bool) -> int:
    """NVML's clock event reasons bitmask for the GPU: thermal slowdown, else idle when nothing runs."""
    if thermal(faults, index):
        return HW_SLOWDOWN | HW_THERMAL_SLOWDOWN
    return 0 if busy else GPU_IDLE


# --- the device plugin's health check (k8s-device-plugin internal/rm/health.go) ---------------------------------
ALL_XIDS = 0     # the map key upstream uses for "every XID"


def disabled_xids(disable: str | None, enable: str | None) -> dict[int, bool]:
    """``getDisabledHealthCheckXids``: XID -> disabled, from ``DP_DISABLE_HEALTHCHECKS`` (``all``/``xids``: every
    XID, else a list; malformed words ignored), the application XIDs, then ``DP_ENABLE_HEALTHCHECKS``'s XIDs
    enabled again (``all`` there: the every-XID key set to enabled)."""
    def parse(value: str | None) -> dict[int, bool]:
        out: dict[int, bool] = {}
        for word in (value or "").lower().split(","):
            word = word.strip()
            if word in ("all", "xids"):
                return {ALL_XIDS: True}
            if word.isdigit():
                out[int(word)] = True
        return out

    disabled = parse(disable)
    disabled.update({xid: True for xid in APPLICATION_XIDS})
    disabled.update({xid: False for xid in parse(enable)})
    return disabled


def health_checks_run(disabled: dict[int, bool]) -> bool:
    """``IsAllDisabled`` false: with every XID disabled the plugin runs a no-op health provider instead."""
    return not disabled.get(ALL_XIDS, False)


def plugin_marks_unhealthy(fault: Fault, disabled: dict[int, bool]) -> bool:
    """Whether the health check marks the GPU unhealthy on this fault's event: only XID critical errors count
    (a thermal slowdown raises none), minus the XIDs disabled (``IsDisabled``)."""
    if fault.thermal or not health_checks_run(disabled):
        return False
    if disabled.get(ALL_XIDS) is False:
        return True
    if fault.xid in disabled:
        return not disabled[fault.xid]
    return not disabled.get(ALL_XIDS, False)


# --- the workload model's processes ----------------------------------------------------------------------------
def process_error(faults, index: int, started: float) -> int | None:
    """The XID that kills a CUDA process on GPU ``index`` started at ``started`` (None: it runs on). A GPU off the
    bus fails every process; an ECC error or a page fault kills the processes it struck, not later ones."""
    for fault in on_gpu(faults, index):
        if fault.xid == FALLEN_OFF_THE_BUS:
            return fault.xid
    for fault in on_gpu(faults, index):
        if fault.xid is not None and fault.since_seconds() >= int(started):
            return fault.xid
    return None


def cuda_error_text(xid: int) -> str:
    return f"RuntimeError: CUDA error: {CUDA_ERRORS[xid]}\n"
