"""The device plugin's config file and what a node advertises with it: time-slicing, MPS, admission.

Imitates NVIDIA/k8s-device-plugin v0.18:

* ``api/config/v1`` (config.go, sharing.go, replicas.go, resources.go) parses
  ``version: v1`` files. Like the plugin (sigs.k8s.io/yaml over encoding/json),
  unknown keys are ignored, and errors come back through the same wrappers
  (``unable to load config: unable to finalize config: unable to parse config file:
  error parsing config file: unmarshal error: error unmarshaling JSON: while decoding
  JSON: number of replicas must be >= 2``).
* ``Sharing.SharingStrategy``/``ReplicatedResources``: an ``mps`` block wins over
  ``timeSlicing``; there is no error for setting both.
* ``DisableResourceNamingInConfig``: per-resource ``rename`` and ``devices`` are
  ignored (with a warning); ``renameByDefault`` renames to ``<name>.shared``.
* ``internal/rm/device_map.go`` ``updateDeviceMapWithReplicas``: each device of a
  named resource becomes ``replicas`` devices; names with no devices are skipped.
* ``internal/rm/rm.go`` ``ValidateRequest`` and ``internal/plugin/server.go``
  ``Allocate``: the error a request for more than one shared device gets, wrapped
  the way the kubelet's device manager reports a failed gRPC Allocate
  (``pkg/kubelet/cm/topologymanager``: ``Allocate failed due to %v, which is unexpected``).

Hand-written because the plugin is Go and no Python port exists.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from .mig import MIG_STRATEGIES, DevicePluginError, Layout, device_map

CONFIG_VERSION = "v1"
RESOURCE_PREFIX = "nvidia.com"
SHARED_SUFFIX = ".shared"
MAX_RESOURCE_NAME_LENGTH = 63
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class DevicePluginConfigError(Exception):
    """The plugin cannot load its config file; ``str()`` is the error it exits with."""


@dataclass(frozen=True)
class ReplicatedResource:
    name: str                     # fully qualified (``nvidia.com/gpu``)
    replicas: int
    rename: str = ""              # as written; ignored by the plugin unless renameByDefault
    devices: Any = "all"          # as written; ignored by the plugin (always all devices)


@dataclass(frozen=True)
class DevicePluginConfig:
    """A parsed device plugin config (``spec.Config``), reduced to what changes a node's resources."""

    mig_strategy: str | None = None                   # flags.migStrategy, None when unset
    strategy: str = "none"                            # "none" | "time-slicing" | "mps"
    rename_by_default: bool = False
    fail_requests_greater_than_one: bool = False
    resources: tuple[ReplicatedResource, ...] = ()
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def advertised_name(self, resource: ReplicatedResource) -> str:
        return resource.name + SHARED_SUFFIX if self.rename_by_default else resource.name

    def replicas_of(self, resource_name: str) -> ReplicatedResource | None:
        return next((r for r in self.resources if r.name == resource_name), None)

    def shared_resource_names(self) -> set[str]:
        return {self.advertised_name(r) for r in self.resources if self.strategy != "none"}


NO_SHARING = DevicePluginConfig()


def parse_config(source: str | dict) -> DevicePluginConfig:
    """Parse a device plugin config file (YAML text or loaded dict).

    Raises :class:`DevicePluginConfigError` with the plugin's message for files it rejects.
    """
    raw = yaml.safe_load(source) if isinstance(source, str) else source
    raw = raw or {}
    if not isinstance(raw, dict):
        raise _load_error("unmarshal error: error unmarshaling JSON: while decoding JSON: "
                          "json: cannot unmarshal array into Go value of type v1.Config")
    version = raw.get("version") or CONFIG_VERSION
    if version != CONFIG_VERSION:
        raise _load_error(f"unknown version: {version}")
    try:
        flags = raw.get("flags") or {}
        sharing = raw.get("sharing") or {}
        time_slicing = _replicated(sharing["timeSlicing"]) if sharing.get("timeSlicing") is not None else None
        mps = _replicated(sharing["mps"]) if sharing.get("mps") is not None else None
    except ValueError as err:
        raise _load_error(f"unmarshal error: error unmarshaling JSON: while decoding JSON: {err}") from None
    mig_strategy = flags.get("migStrategy")
    if mig_strategy is not None and mig_strategy not in MIG_STRATEGIES:
        raise DevicePluginConfigError(f"unknown MIG strategy: {mig_strategy}")
    active, strategy = _active(time_slicing, mps)
    if strategy == "mps" and mig_strategy == "mixed":
        raise DevicePluginConfigError("using --mig-strategy=mixed is not supported with MPS")
    if active is None:
        return DevicePluginConfig(mig_strategy=mig_strategy)
    rename_by_default, fail_gt1, resources = active
    if strategy == "mps" and fail_gt1 is None:
        fail_gt1 = True  # config.go: "Preserve the historical MPS behavior"
    return DevicePluginConfig(mig_strategy, strategy, rename_by_default, bool(fail_gt1), resources,
                              _naming_warnings(strategy, rename_by_default, resources))


def _load_error(inner: str) -> DevicePluginConfigError:
    return DevicePluginConfigError(
        f"unable to load config: unable to finalize config: unable to parse config file: "
        f"error parsing config file: {inner}")


def _active(time_slicing, mps):
    """``SharingStrategy()``: MPS when it replicates anything, else time-slicing when it does."""
    if mps is not None:
        return mps, ("mps" if any(r.replicas > 1 for r in mps[2]) else "none")
    if time_slicing is not None:
        return time_slicing, ("time-slicing" if any(r.replicas > 1 for r in time_slicing[2]) else "none")
    return None, "none"


def _replicated(raw: Any) -> tuple[bool, bool | None, tuple[ReplicatedResource, ...]]:
    if not isinstance(raw, dict):
        raise ValueError("json: cannot unmarshal value into Go value of type v1.ReplicatedResources")
    rename_by_default = _bool(raw.get("renameByDefault", False))
    fail = raw.get("failRequestsGreaterThanOne")
    resources = raw.get("resources")
    if not resources:
        raise ValueError("no resources specified")
    return rename_by_default, None if fail is None else _bool(fail), tuple(_resource(r) for r in resources)


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"json: cannot unmarshal {type(value).__name__} into Go value of type bool")
    return value


def _resource(raw: Any) -> ReplicatedResource:
    if not isinstance(raw, dict):
        raise ValueError("json: cannot unmarshal value into Go value of type v1.ReplicatedResource")
    if "name" not in raw:
        raise ValueError("no resource name specified")
    name = resource_name(str(raw["name"]))
    devices = raw.get("devices", "all")
    _check_devices(devices)
    if "replicas" not in raw:
        raise ValueError("no replicas specified")
    replicas = raw["replicas"]
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        raise ValueError(f"json: cannot unmarshal {type(replicas).__name__} into Go value of type int")
    if replicas < 2:
        raise ValueError("number of replicas must be >= 2")
    rename = resource_name(str(raw["rename"])) if raw.get("rename") else ""
    return ReplicatedResource(name, replicas, rename, devices)


def resource_name(name: str) -> str:
    """``NewResourceName``: add the ``nvidia.com/`` prefix when missing and validate the name."""
    full = name if name.startswith(RESOURCE_PREFIX + "/") else f"{RESOURCE_PREFIX}/{name}"
    if len(full) > MAX_RESOURCE_NAME_LENGTH:
        raise ValueError(f"fully-qualified resource name must be {MAX_RESOURCE_NAME_LENGTH} characters or less: {full}")
    short = full.split("/", 1)[1]
    if not _DNS1123_SUBDOMAIN.match(short) or len(short) > 253:
        problem = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                   "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                   "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
        raise ValueError(f"incorrect format for resource name '{full}': [{problem}]")
    return full


def _check_devices(devices: Any) -> None:
    """``ReplicatedDevices.UnmarshalJSON``."""
    if isinstance(devices, str):
        if devices != "all":
            raise ValueError(f"devices set as '{devices}' but the only valid string input is 'all'")
    elif isinstance(devices, int) and not isinstance(devices, bool):
        if devices <= 0:
            raise ValueError(f"devices set as '{devices}' but a count of devices must be > 0")
    elif isinstance(devices, list):
        for item in devices:
            if isinstance(item, int) and item >= 0:
                continue
            if isinstance(item, str) and _is_device_ref(item):
                continue
            raise ValueError(f"unsupported type for device in devices list: {item}, string")
    else:
        raise ValueError(f"unrecognized type for devices spec: {devices}")


_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"


def _is_device_ref(ref: str) -> bool:
    return bool(re.fullmatch(rf"\d+|\d+:\d+|GPU-{_UUID}|MIG-{_UUID}|MIG-GPU-{_UUID}/\d+/\d+", ref))


def _naming_warnings(strategy: str, rename_by_default: bool, resources) -> tuple[str, ...]:
    section = "mps" if strategy == "mps" else "timeSlicing"
    warnings = []
    if any(r.rename and (not rename_by_default or r.rename != r.name + SHARED_SUFFIX) for r in resources):
        warnings.append(f"Setting the 'rename' field in sharing.{section}.resources is not yet supported in the "
                        "config. Ignoring...")
    if any(r.devices != "all" for r in resources):
        warnings.append(f"Customizing the 'devices' field in sharing.{section}.resources is not yet supported in "
                        "the config. Ignoring...")
    return tuple(warnings)


def effective_mig_strategy(config: DevicePluginConfig, operator_strategy: str | None) -> str:
    """The strategy the plugin and GFD run with.

    The GPU Operator passes ClusterPolicy ``mig.strategy`` as the ``MIG_STRATEGY``
    environment variable, and the plugin's urfave/cli flags (flag > env > file)
    override ``flags.migStrategy`` from the config file (``Flags.UpdateFromCLIFlags``).
    """
    return operator_strategy or config.mig_strategy or "none"


def advertised(layout: Layout, mig_strategy: str, config: DevicePluginConfig = NO_SHARING) -> dict[str, int]:
    """Resource name -> device count the plugin registers with the kubelet for ``layout``.

    ``8 x H100`` with ``nvidia.com/gpu`` replicas 4 gives ``{"nvidia.com/gpu": 32}``,
    with ``renameByDefault`` ``{"nvidia.com/gpu.shared": 32}``. Resources with no
    devices are not registered (the kubelet then reports a previously registered
    one as 0). Raises :class:`~gpulab.gpustack.mig.DevicePluginError` when the plugin refuses to start.
    """
    if config.strategy == "mps" and mig_strategy == "mixed":
        raise DevicePluginError("using --mig-strategy=mixed is not supported with MPS")
    devices = device_map(layout, mig_strategy)
    if config.strategy == "none":
        return devices
    mig_backed = mig_strategy == "single" and any(gpu.mig_enabled for gpu in layout)
    result = {name: n for name, n in devices.items() if config.replicas_of(name) is None}
    for resource in config.resources:
        count = devices.get(resource.name, 0)
        if not count:
            continue
        if config.strategy == "mps" and mig_backed:
            raise DevicePluginError("sharing using MPS is not supported for MIG devices")
        name = config.advertised_name(resource)
        result[name] = result.get(name, 0) + count * resource.replicas
    return result


def admission_error(config: DevicePluginConfig, resource: str, requested: int) -> str | None:
    """The ``UnexpectedAdmissionError`` message the kubelet records when Allocate refuses a request.

    None when the plugin accepts the request. Time-slicing refuses more than one
    shared device only with ``failRequestsGreaterThanOne: true``; MPS refuses it
    unless the config sets it to false explicitly.
    """
    if requested <= 1 or resource not in config.shared_resource_names():
        return None
    if not config.fail_requests_greater_than_one:
        return None
    plugin_error = (f'invalid allocation request for "{resource}": invalid request: '
                    f"maximum request size for shared resources is 1; found {requested}")
    return f"Allocate failed due to rpc error: code = Unknown desc = {plugin_error}, which is unexpected"
