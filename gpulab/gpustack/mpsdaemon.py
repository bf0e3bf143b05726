"""k8s-device-plugin's ``mps-control-daemon`` as it runs in a container on the embedded cluster's nodes.

NVIDIA/k8s-device-plugin (v0.17+) ``cmd/mps-control-daemon``: ``main.go`` loads the node's device plugin
config; when its sharing strategy is MPS, ``mps/manager.go`` makes one daemon per shared resource
(refusing more replicas than an MPS server takes clients: 48 from Volta on, 16 before) and
``mps/daemon.go`` starts ``nvidia-cuda-mps-control -d`` with its pipe and log directories under ``/mps``
(``mps/root.go``: ``/mps/<resource>/pipe``, ``/mps/<resource>/log``), then tells it each device's share:
``set_default_device_pinned_mem_limit <index> <memory / replicas>M`` and
``set_default_active_thread_percentage <100 / replicas>``, and tails the control daemon's
``control.log`` into its own output. So ``kubectl logs`` shows klog lines (``main.go``, ``daemon.go``,
with those files' line numbers) followed by the control daemon's (``[date time Control  pid] Cmd:...``).
The ``mount-shm`` subcommand (the pod's ``mps-control-daemon-mounts`` init container) mounts the shared
``/mps/shm`` and says nothing.

What the daemon reads of its node: upstream reads the config file and NVML; here it reads the same facts
from the node's GFD labels, which GFD derives from the same config (:mod:`.gfd`: ``gpu.sharing-strategy``,
``gpu.replicas``, ``gpu.count``, ``gpu.memory``, ``gpu.compute.*``, and ``gpu.product``'s ``-SHARED``
suffix, absent when ``renameByDefault`` advertises ``nvidia.com/gpu.shared``). When they change (the
config-manager sidecar signals the daemon, which restarts), it logs ``Received SIGHUP, restarting.`` and
starts again. The limits themselves are computed by :func:`device_limits`, which the allocation's view of
a client's share also uses.

A native program of the node agent (:data:`gpulab.contract.NativeProgram`), named by the
``mps-control-daemon`` behaviour of ``data/images.yaml``.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Generator

from ..contract import ContainerProcess
from .configmanager import klog, klog_time
from .latency import device_plugin_thread_percentage

CONTAINER_ROOT = "/mps"
# The MPS root on the host (the operator's MPS_ROOT, object_controls.go DefaultMPSRoot), mounted at /mps in the
# daemon's pod: each resource's pipe and log directories, and the shared shm.
HOST_ROOT = "/run/nvidia/mps"
MAX_CLIENTS_VOLTA = 48        # mps/device.go maxClients
MAX_CLIENTS_PRE_VOLTA = 16
POLL_SECONDS = 5
_LABEL = "nvidia.com/gpu."


@dataclass(frozen=True)
class MpsShare:
    """What the control daemon sets for one resource: each device's pinned-memory limit and the thread share."""

    resource: str
    memory_limits: dict[int, str]       # device index -> ``<MiB>M``
    active_thread_percentage: str

    @property
    def pipe_dir(self) -> str:
        return pipe_dir(self.resource)

    @property
    def log_dir(self) -> str:
        return f"{CONTAINER_ROOT}/{self.resource}/log"


def pipe_dir(resource: str, root: str = CONTAINER_ROOT) -> str:
    """``Root.PipeDir``: the per-resource pipe directory under an MPS root."""
    return f"{root}/{resource}/pipe"


def device_limits(resource: str, memory_mib: dict[int, int], replicas: int) -> MpsShare:
    """``perDevicePinnedDeviceMemoryLimits`` and ``activeThreadPercentage``: every device's memory divided by its
    replicas (whole MiB), and 100 / replicas per cent of the threads (integer division, as Go's)."""
    limits = {index: f"{memory * 1024 * 1024 // replicas // 1024 // 1024}M"
              for index, memory in sorted(memory_mib.items()) if memory}
    return MpsShare(resource, limits, str(device_plugin_thread_percentage(replicas)))


@dataclass(frozen=True)
class _NodeFacts:
    strategy: str
    resource: str
    replicas: int
    count: int
    memory_mib: int
    volta_or_newer: bool


def _facts(process: ContainerProcess) -> _NodeFacts:
    def label(key: str) -> str:
        return process.node_label(_LABEL + key) or ""

    def number(key: str) -> int:
        value = label(key)
        return int(value) if value.isdigit() else 0

    renamed = label("sharing-strategy") == "mps" and not label("product").endswith("-SHARED")
    return _NodeFacts(label("sharing-strategy") or "none", "nvidia.com/gpu.shared" if renamed else "nvidia.com/gpu",
                      number("replicas"), number("count"), number("memory"),
                      (number("compute.major"), number("compute.minor")) >= (7, 5))


def _pid(process: ContainerProcess) -> int:
    """A stable host PID for the daemon (its pod shares the host's PID namespace)."""
    digest = hashlib.sha256((process.getenv("NODE_NAME") or "").encode()).digest()
    return 40 + digest[0] % 200


def _control_line(now: float, pid: int, message: str) -> tuple[str, str]:
    """A line of ``nvidia-cuda-mps-control``'s ``control.log``: ``[2026-12-02 07:10:00.123 Control    55] ...``."""
    stamp = datetime.fromtimestamp(now, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S.") + f"{int(now % 1 * 1000):03d}"
    return ("stdout", f"[{stamp} Control {pid:5d}] {message}\n")


def _start(process: ContainerProcess, facts: _NodeFacts, pid: int) -> Generator[tuple[str, object], None, int | None]:
    """``startDaemons``: None once every daemon runs, else the exit status."""
    at = klog_time(process.now())
    yield klog("I", at, pid, "main.go:166", "Loading configuration.")
    yield klog("I", at, pid, "main.go:181", "Updating config with default resource matching patterns.")
    yield klog("I", at, pid, "main.go:196", "Retrieving MPS daemons.")
    if facts.strategy != "mps":
        yield klog("I", at, pid, "manager.go:66",
                   f'"Sharing strategy is not MPS; skipping MPS manager creation" strategy="{facts.strategy}"')
        yield klog("I", at, pid, "main.go:205", "No devices are configured for MPS sharing; Waiting indefinitely.")
        return None
    most = MAX_CLIENTS_VOLTA if facts.volta_or_newer else MAX_CLIENTS_PRE_VOLTA
    if facts.replicas > most:
        yield klog("E", at, pid, "main.go:83", "error starting plugins: error getting daemons: invalid MPS "
                   f"configuration: invalid device maximum allowed replicas exceeded: {facts.replicas} > {most}")
        return 1
    share = device_limits(facts.resource, {i: facts.memory_mib for i in range(facts.count)}, facts.replicas)
    yield klog("I", at, pid, "daemon.go:97", f'"Staring MPS daemon" resource="{facts.resource}"')
    yield klog("I", at, pid, "daemon.go:150", f'"SELinux disabled, not updating context" path="{share.pipe_dir}"')
    yield klog("I", at, pid, "daemon.go:139", f'"Starting log tailer" resource="{facts.resource}"')
    now = process.now()
    control = pid + 14
    yield _control_line(now, control, f"Starting control daemon using socket {share.pipe_dir}/control")
    yield _control_line(now, control, "To connect CUDA applications to this daemon, set env "
                                      f"CUDA_MPS_PIPE_DIRECTORY={share.pipe_dir}")
    commands = [f"set_default_device_pinned_mem_limit {i} {limit}" for i, limit in share.memory_limits.items()]
    commands += [f"set_default_active_thread_percentage {share.active_thread_percentage}",
                 "get_default_active_thread_percentage"]     # the device plugin's health check (waitForDaemon)
    for command in commands:
        yield _control_line(now, control, "Accepting connection...")
        yield _control_line(now, control, "NEW UI")
        yield _control_line(now, control, f"Cmd:{command}")
    return None


def main(process: ContainerProcess) -> Generator[tuple[str, object], None, int]:
    if process.argv[1:2] == ["mount-shm"]:
        return 0
    pid = _pid(process)
    at = klog_time(process.now())
    yield klog("I", at, pid, "main.go:109", "Starting OS watcher.")
    facts = _facts(process)
    while True:
        yield klog("I", klog_time(process.now()), pid, "main.go:123", "Starting Daemons.")
        failed = yield from _start(process, facts, pid)
        if failed is not None:
            return failed
        current = facts
        while current == facts:
            yield ("sleep", POLL_SECONDS)
            current = _facts(process)
        at = klog_time(process.now())
        yield klog("I", at, pid, "main.go:149", "Received SIGHUP, restarting.")
        yield klog("I", at, pid, "main.go:229", "Stopping MPS daemons.")
        if facts.strategy == "mps":
            yield klog("I", at, pid, "daemon.go:166", f'"Stopped MPS control daemon" resource="{facts.resource}"')
        facts = current
