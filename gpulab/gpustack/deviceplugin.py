"""The device plugin on one node: which config it runs with, which devices it lists, what the kubelet advertises.

NVIDIA/k8s-device-plugin as the GPU Operator runs it:

* ``cmd/config-manager`` (``updateConfigName``): the config named by the node
  label ``nvidia.com/device-plugin.config``, else ``DEFAULT_CONFIG``, else the
  fallback strategies in order. The operator sets ``FALLBACK_STRATEGIES=empty``
  (gpu-operator ``transformConfigManagerInitContainer`` and the sidecar's
  transform), so an unlabelled node with no ``devicePlugin.config.default``
  gets the empty config: whole GPUs, whatever keys the ConfigMap holds (the
  standalone chart's ``named,single``, a key called ``default`` and then the
  only key, does not apply). A choice that fails (``specified config X does
  not exist``, ...) makes config-manager exit 1: as the init
  container at pod start the plugin never starts (``Init:CrashLoopBackOff``);
  as the sidecar on a later label change it crash-loops while the plugin keeps
  the config it loaded. The init container links the file out of the ConfigMap
  mounted in the pod when the pod starts, the sidecar when the label changes;
  edits to the ConfigMap's content therefore only count after the pod restarts
  (``kubectl rollout restart``), exactly as upstream. The containers themselves
  run this same decision on the embedded cluster's nodes (:mod:`.configmanager`).
* ``internal/rm``: the device IDs the plugin lists: GPU UUIDs, MIG device UUIDs,
  and ``<uuid>::<n>`` replicas for time-slicing/MPS (``AnnotatedID``).
* the kubelet's device manager (pkg/kubelet/cm/devicemanager ``GetCapacity``):
  capacity and allocatable from the registered devices; when a plugin goes away
  its devices turn unhealthy (allocatable 0, capacity kept) and the resource is
  dropped from the node after ``endpointStopGracePeriod`` (5 minutes).
* ``internal/rm/health.go``: the health check, on the node's recorded faults (:mod:`.faults`,
  :func:`unhealthy_devices`); unhealthy devices count in capacity, not in allocatable.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

from . import faults as gpu_faults
from .hardware import gpu_uuid, mig_uuid
from .mig import DevicePluginError, Layout, mig_resource_name
from .sharing import NO_SHARING, DevicePluginConfig, DevicePluginConfigError, advertised, parse_config

CONFIG_LABEL = "nvidia.com/device-plugin.config"
FALLBACK_CONFIG_NAME = "default"               # NamedConfigFallback
FALLBACK_STRATEGIES = ("empty",)                # the operator's FALLBACK_STRATEGIES=empty
# pkg/kubelet/cm/devicemanager/endpoint.go endpointStopGracePeriod; overridable so tests need not wait 5 minutes.
ENDPOINT_STOP_GRACE_SECONDS = float(os.environ.get("GPULAB_DEVICE_PLUGIN_STOP_GRACE", "300"))


@dataclass(frozen=True)
class LoadedConfig:
    """What one plugin pod loaded: the config name it chose (``""`` for none) and the parsed file."""

    name: str
    config: DevicePluginConfig
    error: str | None = None


class ConfigManagerError(Exception):
    """``updateConfigName``'s error, with upstream's wording: config-manager logs it and exits 1."""


def choose_config_name(label: str | None, default: str, available: list[str],
                       fallbacks: tuple[str, ...] = FALLBACK_STRATEGIES,
                       log: Callable[[int, str], None] | None = None) -> str:
    """``updateConfigName``: the name of the config to use among ``available`` (``""``: the empty config);
    :class:`ConfigManagerError` when it fails. ``log(line, message)`` receives upstream's klog lines on the way
    (``line`` in cmd/config-manager/main.go)."""
    def info(line: int, message: str) -> None:
        if log is not None:
            log(line, message)

    if not available:
        raise ConfigManagerError("no configuration files available")
    if label:
        if label not in available:
            raise ConfigManagerError(f"specified config {label} does not exist")
        return label
    if default:
        info(360, f"No value set. Selecting default name: {default}")
        if default not in available:
            # Upstream formats the (empty) label here, not the default: "specified config  does not exist".
            raise ConfigManagerError("specified config  does not exist")
        return default
    info(368, f"No value set and no default set. Attempting fallback strategies: [{' '.join(fallbacks)}]")
    for fallback in fallbacks:
        if fallback == "named":
            info(372, f"Attempting to find config named: {FALLBACK_CONFIG_NAME}")
            if FALLBACK_CONFIG_NAME in available:
                return FALLBACK_CONFIG_NAME
            info(376, f"No configuration named '{FALLBACK_CONFIG_NAME}' was found")
        elif fallback == "single":
            info(378, "Attempting to see if only a single config is available...")
            if len(available) == 1:
                return available[0]
            info(382, f"More than one configuration was found: [{' '.join(available)}]")
        elif fallback == "empty":
            info(384, "Falling back to an empty configuration")
            return ""
        else:
            raise ConfigManagerError(f"unknown fallback strategy: {fallback}")
    raise ConfigManagerError("no config was set, no default was provided, and all fallbacks failed")


def choose_config(label: str | None, default: str, available: dict[str, str],
                  fallbacks: tuple[str, ...] = FALLBACK_STRATEGIES) -> LoadedConfig:
    """config-manager's choice among the ConfigMap's keys, loaded; :class:`ConfigManagerError` when it fails."""
    name = choose_config_name(label, default, sorted(available), fallbacks)
    return LoadedConfig("", NO_SHARING) if not name else _load(name, available)


def _load(name: str, available: dict[str, str]) -> LoadedConfig:
    """The plugin reading the linked file: a config it cannot parse is its error, not config-manager's."""
    try:
        return LoadedConfig(name, parse_config(available[name]))
    except DevicePluginConfigError as err:
        return LoadedConfig(name, NO_SHARING, str(err))


@dataclass(frozen=True)
class Device:
    """One device the plugin lists: its ID and the physical device (GPU or MIG UUID) behind it."""

    id: str
    physical: str
    gpu_index: int
    mig_profile: str = ""        # the MIG profile behind a MIG device ("1g.10gb")


def physical_devices(node_name: str, layout: Layout, strategy: str) -> dict[str, list[Device]]:
    """Resource name -> devices before sharing (``deviceMapBuilder``)."""
    out: dict[str, list[Device]] = {}
    for index, gpu in enumerate(layout):
        uuid = gpu_uuid(node_name, index)
        if not gpu.mig_enabled or strategy == "none":
            out.setdefault("nvidia.com/gpu", []).append(Device(uuid, uuid, index))
            continue
        for device in gpu.devices:
            mig = mig_uuid(uuid, device.gpu_instance_id, device.compute_instance_id)
            name = "nvidia.com/gpu" if strategy == "single" else mig_resource_name(device.profile)
            out.setdefault(name, []).append(Device(mig, mig, index, device.profile.name))
    return out


def listed_devices(node_name: str, layout: Layout, strategy: str,
                   config: DevicePluginConfig) -> dict[str, list[Device]]:
    """Resource name -> the device IDs the plugin advertises (replicas expanded, renamed resources)."""
    advertised(layout, strategy, config)  # raises DevicePluginError exactly when the plugin refuses to start
    devices = physical_devices(node_name, layout, strategy)
    if config.strategy == "none":
        return devices
    out = {name: devs for name, devs in devices.items() if config.replicas_of(name) is None}
    for resource in config.resources:
        for device in devices.get(resource.name, []):
            name = config.advertised_name(resource)
            out.setdefault(name, []).extend(Device(f"{device.id}::{n}", device.physical, device.gpu_index,
                                                   device.mig_profile) for n in range(resource.replicas))
    return out


def plugin_devices(node_name: str, layout: Layout, strategy: str,
                   loaded: LoadedConfig) -> tuple[dict[str, list[Device]], str | None]:
    """The plugin's devices, or ``({}, error)`` when it cannot start with this config and layout."""
    if loaded.error:
        return {}, loaded.error
    try:
        return listed_devices(node_name, layout, strategy, loaded.config), None
    except DevicePluginError as err:
        return {}, str(err)


def node_resources(registered: dict[str, int], healthy: dict[str, int]) -> dict[str, dict[str, str]]:
    """``status.capacity``/``allocatable`` entries for the plugin's resources (kubelet ``GetCapacity``)."""
    capacity = {name: str(count) for name, count in registered.items()}
    allocatable = {name: str(healthy.get(name, 0)) for name in registered}
    return {"capacity": capacity, "allocatable": allocatable}


def unhealthy_devices(devices: dict[str, list[Device]], recorded, started: float,
                      disabled: dict[int, bool]) -> set[str]:
    """The device IDs a plugin pod started at ``started`` has marked Unhealthy given the node's faults: at start
    (``registerDevices``), every device of a GPU NVML cannot reach (off the bus); after it, on each XID critical
    error it does not ignore (``runEventMonitor``), the one device its ``parentToDeviceMap`` keeps for that GPU
    (one per GPU UUID: one time-slicing replica, one MIG device; upstream's choice follows Go's map order, here
    the highest ID). An XID from before the pod started was never seen by it."""
    listed = [d for resource in sorted(devices) for d in devices[resource]]
    marked: set[str] = set()
    for fault in recorded:
        on_gpu = [d for d in listed if d.gpu_index == fault.gpu]
        if not on_gpu:
            continue
        if fault.xid == gpu_faults.FALLEN_OFF_THE_BUS and fault.since_seconds() < int(started):
            marked.update(d.id for d in on_gpu)
        elif fault.since_seconds() >= int(started) and gpu_faults.plugin_marks_unhealthy(fault, disabled):
            marked.add(max(d.id for d in on_gpu))
    return marked
