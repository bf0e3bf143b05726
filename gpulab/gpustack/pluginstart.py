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

On a node with GPUs (the emulated hosts come with a driver) NVML loads: after the same start and config (with the
``mixed`` strategy's resource per MIG profile), ``startPlugins`` starts each plugin that has devices, and
``Start`` (``internal/plugin/server.go``) logs its gRPC server, the socket it serves on and its registration with
the kubelet, per resource the device plugin emulation (:mod:`.deviceplugin`) registered on the node. The log is v0.18.1's whatever the image's tag: its line
numbers and the version it reports are that release's. A native program of the node agent
(:data:`gpulab.contract.NativeProgram`), named by the ``nvidia-device-plugin`` behaviour of ``data/images.yaml``.
"""
from __future__ import annotations

import json
import math
from typing import Generator

from ..contract import GPU_COUNT_ANNOTATION, GPU_MODEL_ANNOTATION, PLUGIN_RESOURCES_ANNOTATION, ContainerProcess
from .configmanager import klog, klog_time
from .hardware import gpu_model

# internal/info: the version and commit the release's image was built with (its tag's commit).
VERSION = "dfcf7283"
COMMIT = "dfcf72838b8839c7a0fd9bc9d21fe8d46bed2111"
KUBELET_SOCKET_DIR = "/var/lib/kubelet/device-plugins"
REGISTRATION_POLL_S = 2.0    # how often the plugin looks at its node's state again (the kubelet's view of it)
SHARING_LABEL = "nvidia.com/gpu.sharing-strategy"    # GFD's labels of the node's config for nvidia.com/gpu
REPLICAS_LABEL = "nvidia.com/gpu.replicas"
ADVICE = ("You can check the prerequisites at: https://github.com/NVIDIA/k8s-device-plugin#prerequisites",
               "You can learn how to set the runtime at: https://github.com/NVIDIA/k8s-device-plugin#quick-start",
               "If this is not a GPU node, you should set up a toleration or nodeSelector to only deploy this plugin "
               "on GPU nodes")
_TRUE = ("1", "t", "T", "TRUE", "true", "True")     # Go's strconv.ParseBool, as urfave/cli reads a flag's variable
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def env_flag(process: ContainerProcess, default, *names: str):
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


def _mig_profiles(process: ContainerProcess) -> list[str]:
    """The node's GPU's MIG profiles whose compute and GPU slices match (``VisitMigProfiles`` with ``C == G``)."""
    try:
        model = gpu_model(process.node_annotation(GPU_MODEL_ANNOTATION) or "")
    except KeyError:
        return []
    return [p.name for p in model.mig_profiles]


def config(process: ContainerProcess, *, nvml: bool = False) -> dict:
    """``spec.NewConfig`` from the plugin's flags, after ``AddDefaultResourcesToConfig``: what it logs as JSON
    (``nvml``: NVML loaded, so the ``mixed`` strategy adds a resource per MIG profile of the node's GPU)."""
    driver_root = env_flag(process, "/", "NVIDIA_DRIVER_ROOT")
    mig_strategy = env_flag(process, "none", "MIG_STRATEGY")
    resources = {"gpus": [{"pattern": "*", "name": "nvidia.com/gpu"}]}
    if mig_strategy == "single":
        resources["mig"] = [{"pattern": "*", "name": "nvidia.com/gpu"}]
    elif mig_strategy == "mixed" and nvml:
        resources["mig"] = [{"pattern": name, "name": "nvidia.com/mig-" + name.replace("+", ".")}
                            for name in _mig_profiles(process)] or None
        if resources["mig"] is None:
            del resources["mig"]
    return {
        "version": "v1",
        "flags": {
            "migStrategy": mig_strategy,
            "failOnInitError": env_flag(process, True, "FAIL_ON_INIT_ERROR"),
            "mpsRoot": env_flag(process, "", "MPS_ROOT"),
            "nvidiaDriverRoot": driver_root,
            "nvidiaDevRoot": env_flag(process, "", "NVIDIA_DEV_ROOT") or driver_root,
            "gdrcopyEnabled": env_flag(process, False, "GDRCOPY_ENABLED"),
            "gdsEnabled": env_flag(process, False, "GDS_ENABLED"),
            "mofedEnabled": env_flag(process, False, "MOFED_ENABLED"),
            "useNodeFeatureAPI": None,
            "deviceDiscoveryStrategy": env_flag(process, "auto", "DEVICE_DISCOVERY_STRATEGY"),
            "plugin": {
                "passDeviceSpecs": env_flag(process, False, "PASS_DEVICE_SPECS"),
                "deviceListStrategy": env_flag(process, ["envvar"], "DEVICE_LIST_STRATEGY"),
                "deviceIDStrategy": env_flag(process, "uuid", "DEVICE_ID_STRATEGY"),
                "cdiAnnotationPrefix": env_flag(process, "cdi.k8s.io/", "CDI_ANNOTATION_PREFIX"),
                "nvidiaCTKPath": env_flag(process, "/usr/bin/nvidia-ctk", "NVIDIA_CDI_HOOK_PATH", "NVIDIA_CTK_PATH"),
                "containerDriverRoot": env_flag(process, "/driver-root", "DRIVER_ROOT_CTR_PATH", "CONTAINER_DRIVER_ROOT"),
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


def _served(process: ContainerProcess) -> list[str]:
    """The resources whose devices the plugin serves on this node, as the device plugin emulation registered them."""
    return [r for r in (process.node_annotation(PLUGIN_RESOURCES_ANNOTATION) or "").split(",") if r]


def _socket(resource: str) -> str:
    """``getPluginSocketPath``: ``nvidia-`` and the resource's name without its domain."""
    return f"{KUBELET_SOCKET_DIR}/nvidia-{resource.split('/', 1)[-1]}.sock"


def _start_lines(at: str) -> list[tuple[str, str]]:
    return [klog("I", at, 1, "main.go:244", f'"Starting NVIDIA Device Plugin" version=<\n\t{VERSION}\n\t'
                                            f"commit: {COMMIT}\n >"),
            klog("I", at, 1, "main.go:247", f"Starting FS watcher for {KUBELET_SOCKET_DIR}"),
            klog("I", at, 1, "main.go:254", "Starting OS watcher.")]


def _config_lines(at: str, settings: dict) -> list[tuple[str, str]]:
    """``startPlugins`` up to the plugins: loading, validating and printing the config."""
    return [klog("I", at, 1, "main.go:269", "Starting Plugins."),
            klog("I", at, 1, "main.go:326", "Loading configuration."),
            klog("I", at, 1, "main.go:352", "Updating config with default resource matching patterns."),
            klog("I", at, 1, "main.go:363", "\nRunning with config:\n" + json.dumps(settings, indent=2)),
            klog("I", at, 1, "main.go:366", "Retrieving plugins.")]


def main(process: ContainerProcess) -> Generator[tuple[str, object], None, int]:
    on_gpu_node = int(process.node_annotation(GPU_COUNT_ANNOTATION) or 0) > 0
    at = klog_time(process.now())
    for line in _start_lines(at):
        yield line
    settings = config(process, nvml=on_gpu_node)
    strategy = settings["flags"]["deviceDiscoveryStrategy"]
    if strategy not in ("auto", "nvml", "tegra"):    # validateFlags
        yield klog("I", at, 1, "main.go:269", "Starting Plugins.")
        yield klog("I", at, 1, "main.go:326", "Loading configuration.")
        yield klog("E", at, 1, "main.go:182", f"error starting plugins: unable to validate flags: invalid "
                                              f"--device-discovery-strategy option {strategy}")
        return 1
    if on_gpu_node and strategy != "tegra":
        yield from _serve(process)
        return 0
    for line in _config_lines(at, settings):
        yield line
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


def _sharing(process: ContainerProcess, served: list[str]) -> dict:
    """The config's ``sharing`` as the node's config has it, read back from what GFD labelled for ``nvidia.com/gpu``
    (its sharing strategy and replicas) and the names served (``nvidia.com/gpu.shared``: ``renameByDefault``).
    ``timeSlicing`` is a struct in ``spec.Sharing``, always printed; ``mps`` a pointer, printed when set."""
    strategy = process.node_label(SHARING_LABEL) or "none"
    try:
        replicas = int(process.node_label(REPLICAS_LABEL) or "1")
    except ValueError:
        replicas = 1
    if strategy not in ("time-slicing", "mps") or replicas < 2:
        return {"timeSlicing": {}}
    shared = {**({"renameByDefault": True} if "nvidia.com/gpu.shared" in served else {}),
              "resources": [{"name": "nvidia.com/gpu", "devices": "all", "replicas": replicas}]}
    return {"timeSlicing": shared} if strategy == "time-slicing" else {"timeSlicing": {}, "mps": shared}


def _node_state(process: ContainerProcess) -> tuple[list[str], dict]:
    served = _served(process)
    return served, _sharing(process, served)


def _serve(process: ContainerProcess) -> Generator[tuple[str, object], None, int]:
    """``startPlugins`` on a GPU node, and ``Start`` of each plugin that has devices (internal/plugin/server.go): its
    gRPC server, then its registration with the kubelet. Which resources have devices is what the device plugin
    emulation registered on the node (``PLUGIN_RESOURCES_ANNOTATION``), and the config is the one GFD labelled; until
    both are there the program waits, as the kubelet has then seen no plugin. When they change (the config-manager
    sidecar sends SIGHUP when the node's config changes), the plugins stop and start again."""
    served, sharing = _node_state(process)
    while not served or process.node_label(SHARING_LABEL) is None:
        yield ("sleep", REGISTRATION_POLL_S)
        served, sharing = _node_state(process)
    while True:
        at = klog_time(process.now())
        settings = {**config(process, nvml=True), "sharing": sharing}
        settings["imex"] = settings.pop("imex")     # spec.Config's field order: sharing, then imex
        for line in _config_lines(at, settings):
            yield line
        for resource in served:
            yield klog("I", at, 1, "server.go:197", f"Starting GRPC server for '{resource}'")
            yield klog("I", at, 1, "server.go:141", f"Starting to serve '{resource}' on {_socket(resource)}")
            yield klog("I", at, 1, "server.go:148", f"Registered device plugin for '{resource}' with Kubelet")
        state = (served, sharing)
        while _node_state(process) == state or not _node_state(process)[0]:
            yield ("sleep", REGISTRATION_POLL_S)
        at = klog_time(process.now())
        yield klog("I", at, 1, "main.go:308", "Received SIGHUP, restarting.")
        yield klog("I", at, 1, "main.go:398", "Stopping plugins.")
        for resource in served:
            yield klog("I", at, 1, "server.go:166", f"Stopping to serve '{resource}' on {_socket(resource)}")
        served, sharing = _node_state(process)
