"""k8s-device-plugin's ``nvidia-device-plugin`` as it starts in a container on a node without NVIDIA's driver.

NVIDIA/k8s-device-plugin v0.18.1, ``cmd/nvidia-device-plugin/main.go``: ``start`` logs its version and starts
its watchers; ``startPlugins`` builds its config from its flags (set here, as the static manifest
``deployments/static/nvidia-device-plugin.yml`` and the operator set them, by environment variables) and logs it
as JSON; ``GetPlugins`` makes the resource managers (``internal/plugin/factory.go``). A node without the driver
gives the container no ``libnvidia-ml.so.1``, so with ``DEVICE_DISCOVERY_STRATEGY=auto`` (the default) go-nvlib
resolves no platform and the factory logs ``Incompatible strategy detected auto`` and its advice; with ``nvml``
loading the library fails (``Failed to initialize NVML: ERROR_LIBRARY_NOT_FOUND.``, other advice). Then
``FAIL_ON_INIT_ERROR`` decides: true (the flag's default, and v0.18's static manifest sets no variable) sends the
error up to ``main``, which logs it and exits 1, so the pod crash-loops; false (what the v0.15-v0.17 static
manifests set) leaves no plugin to start: ``No devices found. Waiting indefinitely.``, and it waits until stopped.

On a node with GPUs (the emulated hosts come with a driver) the program runs silently: what a plugin does there
is the device plugin emulation's (:mod:`.deviceplugin`). The log is v0.18.1's whatever the image's tag: its line
numbers and the version it reports are that release's. A native program of the node agent
(:data:`gpulab.contract.NativeProgram`), named by the ``nvidia-device-plugin`` behaviour of ``data/images.yaml``.
"""
from __future__ import annotations

import json
import math
from typing import Generator

from ..contract import GPU_COUNT_ANNOTATION, ContainerProcess
from .configmanager import klog, klog_time

# internal/info: the version and commit the release's image was built with (its tag's commit).
VERSION = "dfcf7283"
COMMIT = "dfcf72838b8839c7a0fd9bc9d21fe8d46bed2111"
KUBELET_SOCKET_DIR = "/var/lib/kubelet/device-plugins"
ADVICE = ("You can check the prerequisites at: https://github.com/NVIDIA/k8s-device-plugin#prerequisites",
               "You can learn how to set the runtime at: https://github.com/NVIDIA/k8s-device-plugin#quick-start",
               "If this is not a GPU node, you should set up a toleration or nodeSelector to only deploy this plugin "
               "on GPU nodes")
_TRUE = ("1", "t", "T", "TRUE", "true", "True")     # Go's strconv.ParseBool, as urfave/cli reads a flag's variable
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def _flag(process: ContainerProcess, default, *names: str):
    """A flag's value from the first of its variables that is set (urfave/cli ``EnvVars``), else its default."""
    for name in names:
        value = process.getenv(name)
        if value is None:
            continue
        if isinstance(default, bool):
            return True if value in _TRUE else False if value in _FALSE else default
        if isinstance(default, list):
            return [v.strip() for v in value.split(",")]
        return value
    return default


def config(process: ContainerProcess) -> dict:
    """``spec.NewConfig`` from the plugin's flags, after ``AddDefaultResourcesToConfig``: what it logs as JSON."""
    driver_root = _flag(process, "/", "NVIDIA_DRIVER_ROOT")
    mig_strategy = _flag(process, "none", "MIG_STRATEGY")
    resources = {"gpus": [{"pattern": "*", "name": "nvidia.com/gpu"}]}
    if mig_strategy == "single":
        resources["mig"] = [{"pattern": "*", "name": "nvidia.com/gpu"}]
    return {
        "version": "v1",
        "flags": {
            "migStrategy": mig_strategy,
            "failOnInitError": _flag(process, True, "FAIL_ON_INIT_ERROR"),
            "mpsRoot": _flag(process, "", "MPS_ROOT"),
            "nvidiaDriverRoot": driver_root,
            "nvidiaDevRoot": _flag(process, "", "NVIDIA_DEV_ROOT") or driver_root,
            "gdrcopyEnabled": _flag(process, False, "GDRCOPY_ENABLED"),
            "gdsEnabled": _flag(process, False, "GDS_ENABLED"),
            "mofedEnabled": _flag(process, False, "MOFED_ENABLED"),
            "useNodeFeatureAPI": None,
            "deviceDiscoveryStrategy": _flag(process, "auto", "DEVICE_DISCOVERY_STRATEGY"),
            "plugin": {
                "passDeviceSpecs": _flag(process, False, "PASS_DEVICE_SPECS"),
                "deviceListStrategy": _flag(process, ["envvar"], "DEVICE_LIST_STRATEGY"),
                "deviceIDStrategy": _flag(process, "uuid", "DEVICE_ID_STRATEGY"),
                "cdiAnnotationPrefix": _flag(process, "cdi.k8s.io/", "CDI_ANNOTATION_PREFIX"),
                "nvidiaCTKPath": _flag(process, "/usr/bin/nvidia-ctk", "NVIDIA_CDI_HOOK_PATH", "NVIDIA_CTK_PATH"),
                "containerDriverRoot": _flag(process, "/driver-root", "DRIVER_ROOT_CTR_PATH", "CONTAINER_DRIVER_ROOT"),
            },
        },
        "resources": resources,
        "sharing": {"timeSlicing": {}},
        "imex": {},
    }


def _init_failure(strategy: str) -> tuple[list[tuple[int, str]], str]:
    """``getResourceManagers`` without NVML: factory.go's error lines (with their line numbers) and the error it
    returns when it fails on them."""
    if strategy == "nvml":
        first = ("Failed to initialize NVML: ERROR_LIBRARY_NOT_FOUND.",
                 "If this is a GPU node, did you set the docker default runtime to `nvidia`?")
        return list(enumerate(first + ADVICE, start=94)), "nvml init failed: ERROR_LIBRARY_NOT_FOUND"
    first = (f"Incompatible strategy detected {strategy}",
             "If this is a GPU node, did you configure the NVIDIA Container Toolkit?")
    return list(enumerate(first + ADVICE, start=113)), "invalid device discovery strategy"


def main(process: ContainerProcess) -> Generator[tuple[str, object], None, int]:
    if int(process.node_annotation(GPU_COUNT_ANNOTATION) or 0) > 0:
        yield ("sleep", math.inf)
        return 0
    at = klog_time(process.now())
    yield klog("I", at, 1, "main.go:244", f'"Starting NVIDIA Device Plugin" version=<\n\t{VERSION}\n\t'
                                          f"commit: {COMMIT}\n >")
    yield klog("I", at, 1, "main.go:247", f"Starting FS watcher for {KUBELET_SOCKET_DIR}")
    yield klog("I", at, 1, "main.go:254", "Starting OS watcher.")
    yield klog("I", at, 1, "main.go:269", "Starting Plugins.")
    yield klog("I", at, 1, "main.go:326", "Loading configuration.")
    settings = config(process)
    strategy = settings["flags"]["deviceDiscoveryStrategy"]
    if strategy not in ("auto", "nvml", "tegra"):    # validateFlags
        yield klog("E", at, 1, "main.go:182", f"error starting plugins: unable to validate flags: invalid "
                                              f"--device-discovery-strategy option {strategy}")
        return 1
    yield klog("I", at, 1, "main.go:352", "Updating config with default resource matching patterns.")
    yield klog("I", at, 1, "main.go:363", "\nRunning with config:\n" + json.dumps(settings, indent=2))
    yield klog("I", at, 1, "main.go:366", "Retrieving plugins.")
    if strategy == "tegra":     # no Tegra emulated: a Tegra plugin's start is not modelled
        yield ("sleep", math.inf)
        return 0
    errors, error = _init_failure(strategy)
    for line, message in errors:
        yield klog("E", at, 1, f"factory.go:{line}", message)
    if settings["flags"]["failOnInitError"]:
        yield klog("E", at, 1, "main.go:182", "error starting plugins: error getting plugins: unable to create "
                                              f"plugins: failed to construct resource managers: {error}")
        return 1
    if strategy == "nvml":
        yield klog("W", at, 1, "factory.go:102", error)
    yield klog("I", at, 1, "main.go:391", "No devices found. Waiting indefinitely.")
    yield ("sleep", math.inf)
    return 0
