"""What a learner sees of the GPUs' use: the dcgm-exporter's metrics and ``nvidia-smi`` inside a pod.

Both read the running GPU stack's caches (its node and pod informers, fed by watches over the API,
:class:`gpulab.gpustack.reconciler.GpuStack`), which :func:`attach` hands over when the stack starts,
and turn them into the workload model's figures (:mod:`.usage`). ``gpulab.embedded`` registers
:func:`dcgm_metrics` as the content provider the exporter's image serves on port 9400 and supplies
:func:`nvidia_smi` as the native program behind the ``nvidia-smi`` the device allocation mounts; the
cluster calls them with what it knows of the container (its node, its environment) and no more.

``nvidia-smi`` shows what the real tool shows in a container (its PID namespace hides every process
from the driver's accounting, so the Processes table reads "No running processes found" while the
memory in use counts every process on the device); options: none, ``-L``, ``--query-gpu=FIELDS
--format=csv[,noheader][,nounits]`` with ``-i``/``--id``, ``topo -m`` and ``-q -d MEMORY``. Without a running stack (no driver on the
node) it fails as nvidia-smi does when it cannot reach the driver; when the stack runs in another process
(``gpulab gpustack run``) it leaves the answer to the outputs the device allocation recorded.
"""
from __future__ import annotations

import threading
from dataclasses import replace
from datetime import datetime, timezone

from ..contract import USE_RECORDED_OUTPUT
from . import dcgm, faults
from .driver import cuda_version
from .hardware import mig_uuid
from .nvidia_smi import (SmiGpu, lost_gpu, render, render_list, render_memory_query, render_topology, under_mps,
                         visible)
from .usage import NodeUsage, node_usage, power_w, temperature_c

HOSTNAME_LABEL = "kubernetes.io/hostname"
# GFD's label of the node's sharing strategy: "mps" where the MPS control daemon runs (it follows the same config).
SHARING_STRATEGY_LABEL = "nvidia.com/gpu.sharing-strategy"
NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
             "Make sure that the latest NVIDIA driver is installed and running.\n\n")
INVALID_ARGS = "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n\n"
GPU_LOST_STATUS = 15     # nvidia-smi(1) RETURN VALUE: a GPU has fallen off the bus or is otherwise inaccessible

_lock = threading.Lock()
_stack = None


def attach(stack) -> None:
    """Read the GPUs' use from ``stack`` (anything with ``nodes.get(name)`` and ``pods_on(name)``)."""
    global _stack
    with _lock:
        _stack = stack


def attached() -> bool:
    with _lock:
        return _stack is not None


def stack_client():
    """The API client of the GPU stack running in this process (for its native programs), or None."""
    with _lock:
        return getattr(_stack, "kube", None)


def usage_of(node_name: str) -> tuple[NodeUsage | None, dict | None]:
    with _lock:
        stack = _stack
    node = stack.nodes.get(node_name) if stack is not None and node_name else None
    if node is None:
        return None, None
    return node_usage(node, stack.pods_on(node_name)), node


# --- dcgm-exporter ------------------------------------------------------------------------------------------
_collectors: dict[str, tuple] = {}     # exporter pod uid -> the counters file it read at start


def _counters_file(ctx) -> tuple | None:
    """The counters of the file ``DCGM_EXPORTER_COLLECTORS`` names (the ClusterPolicy's ``dcgmExporter.config``
    ConfigMap, mounted by the operator), read once per exporter pod as the exporter reads it at start; None: the
    default counters."""
    if not ctx.env.get("DCGM_EXPORTER_COLLECTORS"):
        return None
    uid = (ctx.pod.get("metadata") or {}).get("uid", "")
    if uid not in _collectors:
        volume = next((v for v in (ctx.pod.get("spec") or {}).get("volumes") or []
                       if v.get("name") == "metrics-config" and v.get("configMap")), None)
        with _lock:
            stack = _stack
        cm = stack.configmaps.get(volume["configMap"]["name"], ctx.pod["metadata"].get("namespace")) \
            if stack is not None and volume is not None else None
        text = ((cm or {}).get("data") or {}).get("dcgm-metrics.csv")
        if text is None:
            return None
        try:
            _collectors[uid] = dcgm.parse_counters(text)
        except dcgm.CountersError:
            _collectors[uid] = ()
    return _collectors[uid]


def dcgm_metrics(request, ctx) -> str:
    """The ``/metrics`` body of the exporter pod in ``ctx`` (kubelet/serving.py's content provider)."""
    use, node = usage_of(ctx.node)
    if use is None or not use.driver_version:
        return ""
    return dcgm.render(use, hostname=ctx.env.get("NODE_NAME") or ctx.node, uptime_s=dcgm.uptime_seconds(node),
                       collected=_counters_file(ctx))


# --- nvidia-smi ---------------------------------------------------------------------------------------------
def _seen(use: NodeUsage, device_ids: list[str]) -> tuple[SmiGpu, ...]:
    """The GPUs a container given ``device_ids`` sees, with what they are doing now."""
    live = []
    for index, gpu in enumerate(use.gpus):
        whole = use.device(gpu.uuid)
        live.append(replace(gpu, memory_used_mib=whole.used_mib if whole else 0, util=use.gpu_util(index),
                            power_w=power_w(use, index), temperature_c=temperature_c(use, index)))
    shown = visible(live, device_ids)
    return tuple(replace(g, mig_used_mib=tuple(use.device(mig_uuid(g.uuid, d.gpu_instance_id,
                                                                   d.compute_instance_id)).used_mib
                                               for d in g.mig_devices)) for g in shown)


def _query_fields(gpu: SmiGpu, index: int, driver: str, count: int,
                  reasons: int = faults.GPU_IDLE) -> dict[str, tuple[str, str]]:
    """Field -> (unit, value) for ``--query-gpu``; ``[N/A]`` where the GPU has no such reading; ``reasons``,
    NVML's clock event reasons bitmask."""
    model = gpu.model
    hidden = gpu.mig_enabled and not gpu.whole_gpu_visible
    used = sum(gpu.mig_used_mib) if gpu.mig_enabled else gpu.memory_used_mib
    memory = (lambda v: "[N/A]") if hidden else str
    util = "[N/A]" if gpu.mig_enabled else str(gpu.util)
    power = gpu.power_w if gpu.power_w is not None else float(model.idle_power_w)
    return {
        "index": ("", str(index)), "count": ("", str(count)), "name": ("", model.name), "gpu_name": ("", model.name),
        "uuid": ("", gpu.uuid), "gpu_uuid": ("", gpu.uuid), "pci.bus_id": ("", gpu.bus_id),
        "gpu_bus_id": ("", gpu.bus_id), "driver_version": ("", driver),
        "memory.total": ("MiB", memory(model.memory_mib)), "memory.used": ("MiB", memory(used)),
        "memory.free": ("MiB", memory(model.memory_mib - used)),
        "utilization.gpu": ("%", util),
        "temperature.gpu": ("", str(gpu.temperature_c if gpu.temperature_c is not None
                                    else model.idle_temperature_c)),
        "power.draw": ("W", f"{power:.2f}"), "power.limit": ("W", f"{model.power_limit_w:.2f}"),
        "mig.mode.current": ("", "Enabled" if gpu.mig_enabled else "Disabled" if model.mig_capable else "[N/A]"),
        "persistence_mode": ("", "Enabled" if model.idle_persistence else "Disabled"),
        "pstate": ("", "P0" if gpu.util else model.idle_perf), "compute_mode": ("", "Default"),
        "ecc.errors.uncorrected.volatile.total": ("", str(gpu.uncorrected_ecc)),
        "clocks_event_reasons.active": ("", f"0x{reasons:016X}"),
        "clocks_event_reasons.hw_thermal_slowdown": ("", _active(reasons & faults.HW_THERMAL_SLOWDOWN)),
        "clocks_event_reasons.hw_slowdown": ("", _active(reasons & faults.HW_SLOWDOWN)),
    }


def _active(bit: int) -> str:
    return "Active" if bit else "Not Active"


def _option(argv: list[str], *names: str) -> str | None:
    for i, arg in enumerate(argv):
        for name in names:
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
            if arg == name and i + 1 < len(argv):
                return argv[i + 1]
    return None


def query_gpu(gpus: tuple[SmiGpu, ...], argv: list[str], driver: str,
              reasons: dict[str, int] | None = None) -> tuple[int, str, str]:
    """``--query-gpu``: (exit status, stdout, stderr); ``reasons``: GPU UUID -> its clock event reasons."""
    wanted = [f.strip() for f in (_option(argv, "--query-gpu") or "").split(",") if f.strip()]
    fmt = _option(argv, "--format")
    if fmt is None or "csv" not in fmt.split(","):
        return 2, "", INVALID_ARGS
    only = _option(argv, "-i", "--id")
    rows, header = [], []
    for index, gpu in enumerate(gpus):
        if only is not None and only not in (str(index), gpu.uuid, gpu.bus_id):
            continue
        fields = _query_fields(gpu, index, driver, len(gpus), (reasons or {}).get(gpu.uuid, faults.GPU_IDLE))
        unknown = next((f for f in wanted if f not in fields), None)
        if unknown:
            return 2, f'Field "{unknown}" is not a valid field to query.\n\n', ""
        header = [f"{f} [{fields[f][0]}]" if fields[f][0] else f for f in wanted]
        rows.append(", ".join(_cell(*fields[f], "nounits" in fmt) for f in wanted))
    if only is not None and not rows:
        return 6, "No devices were found\n", ""
    lines = ([] if "noheader" in fmt else [", ".join(header)]) + rows
    return 0, "\n".join(lines) + "\n", ""


def _cell(unit: str, value: str, nounits: bool) -> str:
    return value if nounits or not unit or value == "[N/A]" else f"{value} {unit}"


def _wants(argv: list[str], short: str, long: str, value: str) -> bool:
    """``argv`` is ``-x VALUE`` or ``--long=VALUE`` alone after its subject (``-q -d MEMORY``)."""
    return argv in ([short, value], [f"{long}={value}"], [long, value])


def _node_cpus(node: dict | None) -> int:
    try:
        return int(str(((node or {}).get("status") or {}).get("capacity", {}).get("cpu", "0")))
    except ValueError:
        return 0


def nvidia_smi(process):
    """The native ``nvidia-smi`` a GPU container runs (gpulab.contract.NativeProgram)."""
    return _nvidia_smi(process, host=False)


def image_nvidia_smi(process):
    """An ``nvidia-smi`` the image itself runs, not one the toolkit mounted for a device allocation
    (``data/images.yaml``'s ``nvidia-smi`` behaviour). The driver image ships one and sets
    ``NVIDIA_VISIBLE_DEVICES=void`` so the toolkit injects nothing: its container is privileged and the driver is
    the one it loaded, so it sees every GPU of the node. Anywhere else, a container without a device allocation has
    no device nodes, and nvidia-smi cannot reach the driver."""
    if (process.getenv("NVIDIA_VISIBLE_DEVICES") or "") != "void":
        yield ("stdout", NO_DRIVER)
        return 9
    status = yield from _nvidia_smi(process, host=True)
    if status == USE_RECORDED_OUTPUT:      # no stack in this process to read the GPUs from
        yield ("stdout", NO_DRIVER)
        return 9
    return status


def _nvidia_smi(process, *, host: bool):
    argv = process.argv[1:]
    if not attached():
        return USE_RECORDED_OUTPUT      # the stack runs in another process (gpulab gpustack run)
    use, node = usage_of(process.node_label(HOSTNAME_LABEL) or "")
    if use is None or not use.driver_version:
        yield ("stdout", NO_DRIVER)
        return 9
    visible_ids = ["all"] if host else [i for i in (process.getenv("NVIDIA_VISIBLE_DEVICES") or "").split(",") if i]
    gpus = _seen(use, visible_ids)
    if process.node_label(SHARING_STRATEGY_LABEL) == "mps":
        gpus = under_mps(gpus)
    lost = lost_gpu(gpus)
    if lost is not None:
        yield ("stdout", lost)
        return GPU_LOST_STATUS
    if visible_ids and not gpus:
        # devices the node's usage model does not hold (a DRA driver's dynamic MIG partitions): the outputs the
        # driver recorded when it prepared them are the container's view
        return USE_RECORDED_OUTPUT
    now = datetime.fromtimestamp(process.now(), timezone.utc)
    if not argv:
        yield ("stdout", render(gpus, driver_version=use.driver_version,
                                cuda_version=cuda_version(use.driver_version), now=now))
        return 0
    if argv == ["-L"] or argv == ["--list-gpus"]:
        yield ("stdout", render_list(gpus))
        return 0
    if argv[:1] == ["topo"] and argv[1:] in (["-m"], ["--matrix"]):
        yield ("stdout", render_topology(gpus, _node_cpus(node), use.gpus))
        return 0
    if argv[:1] in (["-q"], ["--query"]) and _wants(argv[1:], "-d", "--display", "MEMORY"):
        yield ("stdout", render_memory_query(gpus, driver_version=use.driver_version,
                                             cuda_version=cuda_version(use.driver_version), now=now))
        return 0
    if any(a.startswith("--query-gpu") for a in argv):
        reasons = {gpu.uuid: faults.clock_event_reasons(use.faults, i, use.gpu_util(i) > 0)
                   for i, gpu in enumerate(use.gpus)}
        status, out, err = query_gpu(gpus, argv, use.driver_version, reasons)
        if out:
            yield ("stdout", out)
        if err:
            yield ("stderr", err)
        return status
    yield ("stdout", INVALID_ARGS)
    return 2
