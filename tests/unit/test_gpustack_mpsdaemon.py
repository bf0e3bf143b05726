"""The device plugin image's ``mps-control-daemon`` (gpulab/gpustack/mpsdaemon.py, a native program of the node
agent): k8s-device-plugin ``cmd/mps-control-daemon``'s limits per device and replica, its klog and control.log
lines, the replica ceiling, and the restart when the node's config changes (docs/fidelity.md#mps)."""
from __future__ import annotations

from gpulab.cluster.kubelet.images import parse_reference
from gpulab.cluster.kubelet.process import Process
from gpulab.cluster.kubelet.shell import FileSystem, World
from gpulab.gpustack.mpsdaemon import device_limits
from test_kubelet_harness import CATALOG

START = 1_767_225_600.0   # 2026-01-01T00:00:00Z
IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.18.1"
A100_MPS = {"nvidia.com/gpu.sharing-strategy": "mps", "nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.count": "2",
            "nvidia.com/gpu.memory": "40960", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-SHARED",
            "nvidia.com/gpu.compute.major": "8", "nvidia.com/gpu.compute.minor": "0"}


def daemon(labels: dict[str, str], *args: str) -> Process:
    img = CATALOG.resolve(parse_reference(IMAGE))
    world = World(image=img, catalog=CATALOG, env=[("NODE_NAME", "gpu-1")], files=FileSystem(), hostname="mps",
                  nproc=4, kernel="6.8.0-gpulab", node_labels=lambda: labels)
    return Process(world, ["mps-control-daemon", *args], START)


def messages(proc: Process) -> list[str]:
    """Each line less its klog header or control.log stamp."""
    return [line.split("] ", 1)[1] for _, line in proc.log]


def test_limits_divide_memory_and_threads_by_the_replicas():
    share = device_limits("nvidia.com/gpu", {0: 40960, 1: 40960}, 4)
    assert (share.memory_limits, share.active_thread_percentage) == ({0: "10240M", 1: "10240M"}, "25")
    assert device_limits("nvidia.com/gpu", {0: 81559}, 3).memory_limits == {0: "27186M"}   # whole MiB, rounded down
    assert device_limits("nvidia.com/gpu", {0: 81559}, 3).active_thread_percentage == "33"
    assert share.pipe_dir == "/mps/nvidia.com/gpu/pipe"


def test_the_daemon_logs_its_start_and_each_devices_limits():
    proc = daemon(A100_MPS)
    proc.advance(START + 1)
    assert proc.exit_code is None          # it runs until stopped
    assert messages(proc) == [
        "Starting OS watcher.", "Starting Daemons.", "Loading configuration.",
        "Updating config with default resource matching patterns.", "Retrieving MPS daemons.",
        '"Staring MPS daemon" resource="nvidia.com/gpu"',
        '"SELinux disabled, not updating context" path="/mps/nvidia.com/gpu/pipe"',
        '"Starting log tailer" resource="nvidia.com/gpu"',
        "Starting control daemon using socket /mps/nvidia.com/gpu/pipe/control",
        "To connect CUDA applications to this daemon, set env CUDA_MPS_PIPE_DIRECTORY=/mps/nvidia.com/gpu/pipe",
        "Accepting connection...", "NEW UI", "Cmd:set_default_device_pinned_mem_limit 0 10240M",
        "Accepting connection...", "NEW UI", "Cmd:set_default_device_pinned_mem_limit 1 10240M",
        "Accepting connection...", "NEW UI", "Cmd:set_default_active_thread_percentage 25",
        "Accepting connection...", "NEW UI", "Cmd:get_default_active_thread_percentage"]
    klog = proc.log[0][1]
    assert klog.startswith("I0101 00:00:00.000000 ") and " main.go:109] " in klog
    assert proc.log[8][1].startswith("[2026-01-01 00:00:00.000 Control ")


def test_renamed_resources_get_their_own_pipe_directory():
    proc = daemon({**A100_MPS, "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"})   # renameByDefault: no -SHARED
    proc.advance(START + 1)
    assert '"Staring MPS daemon" resource="nvidia.com/gpu.shared"' in messages(proc)
    assert "Starting control daemon using socket /mps/nvidia.com/gpu.shared/pipe/control" in messages(proc)


def test_without_mps_it_waits_and_with_too_many_replicas_it_exits_1():
    idle = daemon({"nvidia.com/gpu.sharing-strategy": "time-slicing"})
    idle.advance(START + 1)
    assert messages(idle)[-2:] == ['"Sharing strategy is not MPS; skipping MPS manager creation" '
                                   'strategy="time-slicing"',
                                   "No devices are configured for MPS sharing; Waiting indefinitely."]
    assert idle.exit_code is None
    greedy = daemon({**A100_MPS, "nvidia.com/gpu.replicas": "64"})
    greedy.advance(START + 1)
    assert greedy.exit_code == 1
    assert greedy.log[-1][1].startswith("E0101 ")
    assert messages(greedy)[-1] == ("error starting plugins: error getting daemons: invalid MPS configuration: "
                                    "invalid device maximum allowed replicas exceeded: 64 > 48")


def test_a_config_change_restarts_the_daemons_and_mount_shm_says_nothing():
    labels = dict(A100_MPS)
    proc = daemon(labels)
    proc.advance(START + 1)
    labels["nvidia.com/gpu.replicas"] = "2"
    proc.advance(START + 10)
    after = messages(proc)[messages(proc).index("Received SIGHUP, restarting."):]
    assert after[:3] == ["Received SIGHUP, restarting.", "Stopping MPS daemons.",
                         '"Stopped MPS control daemon" resource="nvidia.com/gpu"']
    assert "Cmd:set_default_device_pinned_mem_limit 0 20480M" in after
    assert "Cmd:set_default_active_thread_percentage 50" in after
    shm = daemon(A100_MPS, "mount-shm")
    shm.advance(START + 1)
    assert (proc.exit_code, shm.exit_code, list(shm.log)) == (None, 0, [])
