"""mig-parted: its config file, which geometry a GPU ends up with, and what the device plugin makes of it.

Three upstream programs are imitated here, each only as far as a node's state goes:

* NVIDIA/mig-parted ``api/spec/v1/spec.go`` parses ``version: v1`` / ``mig-configs:``
  files; the errors it raises are copied verbatim (``unknown version: v2``,
  ``missing required field: devices``, ...).
* ``nvidia-mig-parted apply`` (``cmd/nvidia-mig-parted/apply``, ``pkg/mig/config/config.go``)
  walks the selected config's entries per GPU (``device-filter`` and ``devices``
  matching as in ``api/spec/v1/helpers.go``) and creates GPU instances; NVML
  refuses an instance that does not fit with ``Insufficient Resources``, and
  mig-parted gives up with ``all orderings failed``. NVML's placement rules
  come from ``nvidia-smi mig -lgipp`` (``hardware.MigProfile.placements``): an
  instance occupies ``memory_slices`` consecutive slices of the 8-slice memory
  axis starting at one of its allowed starts, and at most ``instances`` of a
  profile and 7 compute slices fit one GPU. :func:`plan` searches those
  placements the way mig-parted's permutation search does, so a geometry fails
  exactly when no ordering could succeed on the hardware.
* The device plugin's device map (NVIDIA/k8s-device-plugin ``internal/rm/device_map.go``)
  turns a layout into resource counts for the ``none``/``single``/``mixed`` MIG
  strategies, with its error strings for layouts the ``single`` strategy refuses.

No Python library models MIG geometry; NVML itself needs the hardware.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml

from .hardware import GpuModel, MigProfile

SPEC_VERSION = "v1"
MIG_STRATEGIES = ("none", "single", "mixed")
# "+me" from pkg/types/mig_profile.go; "+gfx", "+me.all" and the "-me" suffix are the
# Blackwell RTX PRO profiles the operator's default config names (MIG user guide v580).
KNOWN_PROFILE_ATTRIBUTES = ("me", "gfx", "me.all")
COMPUTE_SLICES_PER_GPU = 7
MEMORY_SLICES_PER_GPU = 8
FULL_GPU_RESOURCE = "nvidia.com/gpu"


class MigPartedError(Exception):
    """mig-parted failed; ``str()`` is the message ``nvidia-mig-parted apply`` exits with.

    ``log`` holds the ``level=error`` lines mig-parted logs on the way (one per failed ordering attempt).
    """

    def __init__(self, message: str, log: tuple[str, ...] = ()):
        super().__init__(message)
        self.log = log


class DevicePluginError(Exception):
    """The device plugin refused the node's devices and exits (``FAIL_ON_INIT_ERROR=true``)."""


@dataclass(frozen=True)
class MigConfigEntry:
    """One item of a ``mig-configs.<name>`` list (``MigConfigSpec``)."""

    devices: str | tuple[int, ...]            # "all" or GPU indices
    mig_enabled: bool
    mig_devices: dict[str, int]
    device_filter: tuple[str, ...] = ()       # PCI device IDs such as "0x233010DE"; empty matches all

    def matches(self, index: int, device_id: str) -> bool:
        """``MatchesDeviceFilter`` and ``MatchesDevices`` from api/spec/v1/helpers.go."""
        if self.device_filter and _device_id(device_id) not in {_device_id(f) for f in self.device_filter}:
            return False
        return self.devices == "all" or index in self.devices

    @property
    def matches_all_devices(self) -> bool:
        return self.devices == "all"


MigConfigs = dict[str, tuple[MigConfigEntry, ...]]


@dataclass(frozen=True)
class MigDevice:
    """One MIG device: a GPU instance with its full-size compute instance."""

    profile: MigProfile
    gpu_instance_id: int
    start: int                      # placement start on the memory axis
    compute_instance_id: int = 0


@dataclass(frozen=True)
class GpuState:
    """What one GPU looks like after mig-parted: MIG mode and its MIG devices in ``nvidia-smi`` order."""

    mig_enabled: bool
    devices: tuple[MigDevice, ...] = ()

    def profile_counts(self) -> dict[str, int]:
        return dict(Counter(d.profile.name for d in self.devices))


Layout = tuple[GpuState, ...]


def whole_gpus(count: int) -> Layout:
    """The layout of ``count`` GPUs with MIG disabled."""
    return tuple(GpuState(False) for _ in range(count))


# --- config file -----------------------------------------------------------------------------

def parse_config(source: str | dict) -> MigConfigs:
    """Parse a mig-parted config (YAML text or an already-loaded dict) like ``api/spec/v1/spec.go``.

    Raises :class:`MigPartedError` with ``error parsing config file: unmarshal error: ...``,
    the message ``nvidia-mig-parted apply`` prints for a bad file.
    """
    raw = yaml.safe_load(source) if isinstance(source, str) else source
    try:
        return _parse_spec(raw or {})
    except ValueError as err:
        raise MigPartedError(f"error parsing config file: unmarshal error: {_sigs_yaml_error(err)}") from None


def _sigs_yaml_error(err: ValueError) -> str:
    # sigs.k8s.io/yaml converts to JSON and wraps json.Unmarshal errors.
    return f"error unmarshaling JSON: while decoding JSON: {err}"


def _parse_spec(raw: Any) -> MigConfigs:
    if not isinstance(raw, dict):
        raise ValueError("json: cannot unmarshal array into Go value of type map[string]json.RawMessage")
    if "version" not in raw and raw:
        raise ValueError("unable to parse with missing 'version' field")
    if raw.get("version") != SPEC_VERSION:
        raise ValueError(f"unknown version: {raw.get('version') or ''}")
    configs: MigConfigs = {}
    for key, value in raw.items():
        if key == "version":
            continue
        if key != "mig-configs":
            raise ValueError(f"unexpected field: {key}")
        if not value:
            raise ValueError(f"at least one entry in '{key}' is required")
        for name, entries in value.items():
            if not entries:
                raise ValueError(f"at least one entry in '{name}' is required")
            configs[name] = tuple(_parse_entry(entry) for entry in entries)
    return configs


def _parse_entry(raw: dict) -> MigConfigEntry:
    for required in ("devices", "mig-enabled"):
        if required not in raw:
            raise ValueError(f"missing required field: {required}")
    device_filter: tuple[str, ...] = ()
    mig_devices: dict[str, int] | None = None
    devices: str | tuple[int, ...] = "all"
    mig_enabled = False
    for key, value in raw.items():
        if key == "device-filter":
            if isinstance(value, str):
                device_filter = (value,) if value else ()
            elif isinstance(value, list) and all(isinstance(v, str) for v in value):
                device_filter = tuple(value)
            else:
                raise ValueError("json: cannot unmarshal value into Go value of type string or []string")
        elif key == "devices":
            if isinstance(value, str):
                if value != "all":
                    raise ValueError(f"invalid string input for '{key}': {value}")
                devices = "all"
            elif isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
                devices = tuple(value)
            else:
                raise ValueError("json: cannot unmarshal value into Go value of type string or []int")
        elif key == "mig-enabled":
            if not isinstance(value, bool):
                raise ValueError(f"json: cannot unmarshal {type(value).__name__} into Go value of type bool")
            mig_enabled = value
        elif key == "mig-devices":
            mig_devices = dict(value or {})
            for profile, count in mig_devices.items():
                problem = profile_format_error(profile)
                if problem is None and (not isinstance(count, int) or count < 0):
                    problem = f"invalid count for '{profile}': {count}"
                elif problem is not None:
                    problem = f"invalid format for '{profile}': {problem}"
                if problem:
                    raise ValueError(f"error validating values in '{key}' field: {problem}")
        else:
            raise ValueError(f"unexpected field: {key}")
    if mig_enabled and mig_devices is None:
        raise ValueError("missing required field 'mig-devices' when 'mig-enabled' is true")
    if not mig_enabled and mig_devices:
        raise ValueError("MIG devices included when 'mig-enabled' is false")
    return MigConfigEntry(devices, mig_enabled, mig_devices or {}, device_filter)


def profile_format_error(profile: str) -> str | None:
    """``ParseMigProfile`` from pkg/types/mig_profile.go: None when ``profile`` is well formed."""
    if not profile:
        return "empty MigProfile string"
    base, _, attributes = profile.partition("+")
    if "+" in profile:
        for attribute in attributes.split(","):
            if attribute not in KNOWN_PROFILE_ATTRIBUTES:
                return f"unknown MigProfile attribute: {attribute}"
    base = base.removesuffix("-me")
    fields = base.split(".", 2)
    expected = ("c", "g", "gb") if len(fields) == 3 else ("g", "gb") if len(fields) == 2 else None
    if expected is None:
        return "error parsing '.' separated fields in MigProfile string: parsed wrong number of fields, expected 2 or 3"
    for value, suffix in zip(fields, expected):
        if value.strip() != value:
            return f"error parsing '.' separated fields in MigProfile string: leading or trailing spaces on '%d{suffix}'"
        if not value.endswith(suffix):
            return f"error parsing '.' separated fields in MigProfile string: missing '{suffix}' from '%d{suffix}'"
        if not value[: -len(suffix)].isdigit():
            return f"error parsing '.' separated fields in MigProfile string: malformed number in '%d{suffix}'"
    slices = int(fields[-2][:-1])
    if slices not in (1, 2, 3, 4, 6, 7, 8):
        return f"unknown GPU Instance slice size: {slices}"
    return None


@cache
def default_configs() -> MigConfigs:
    """The GPU Operator's ``default-mig-parted-config`` (assets/state-mig-manager/0400_configmap.yaml)."""
    return parse_config(default_config_map()["data"]["config.yaml"])


@cache
def default_config_map() -> dict:
    """The ``default-mig-parted-config`` ConfigMap object the operator creates (namespace left to the caller)."""
    text = resources.files(__package__).joinpath("data/default-mig-parted-config.yaml").read_text()
    return yaml.safe_load(text)


def _device_id(value: str) -> int:
    return int(value, 16)


# --- applying a config ------------------------------------------------------------------------

def plan(model: GpuModel, count: int, config_name: str, configs: MigConfigs | None = None,
         current: Layout | None = None) -> Layout:
    """The layout ``nvidia-mig-parted apply -c config_name`` leaves on ``count`` GPUs of ``model``.

    GPUs that no entry of the config selects keep their ``current`` state (MIG
    disabled by default). Raises :class:`MigPartedError` with mig-parted's message
    when the config is missing or a geometry does not fit.
    """
    configs = default_configs() if configs is None else configs
    if config_name not in configs:
        raise MigPartedError(f"error selecting MIG config: selected mig-config not present: {config_name}")
    states = list(current if current is not None else whole_gpus(count))
    for entry in configs[config_name]:
        for index in range(count):
            if not entry.matches(index, model.pci_device_filter_id):
                continue
            if not model.mig_capable:
                if entry.matches_all_devices or not entry.mig_enabled:
                    continue
                raise MigPartedError(_apply_error("cannot set MIG config on non MIG-capable GPU"))
            states[index] = GpuState(True, _place(model, entry.mig_devices)) if entry.mig_enabled else GpuState(False)
    return tuple(states)


def _apply_error(inner: str) -> str:
    return f"error applying MIG configuration with hooks: {inner}"


def _flatten(model: GpuModel, mig_devices: dict[str, int]) -> list[str]:
    """``MigConfig.Flatten``: one entry per instance, larger GPU-instance slices first."""
    names = [name for name, n in mig_devices.items() for _ in range(n)]
    return sorted(names, key=lambda name: (-_slices(name), name))


def _slices(name: str) -> int:
    return int(name.split("+")[0].split(".")[-2][:-1])


def _resolve(model: GpuModel, name: str) -> MigProfile:
    """The profile NVML creates for ``name``; mig-parted's error when the GPU has none by that name."""
    try:
        return model.mig_profile(name)
    except KeyError:
        pass
    same_size = [p for p in model.mig_profiles if p.compute_slices == _slices(name) and "+" not in p.name]
    if same_size:
        expected = min(same_size, key=lambda p: p.memory_slices).name
        raise _OrderingFailed(f"unsupported MIG Device specified {name}, expected {expected} instead")
    raise _OrderingFailed(f"error getting GPU instance profile info for '{name}': Not Supported")


class _OrderingFailed(Exception):
    pass


def _place(model: GpuModel, mig_devices: dict[str, int]) -> tuple[MigDevice, ...]:
    names = _flatten(model, mig_devices)
    try:
        profiles = [_resolve(model, name) for name in names]
    except _OrderingFailed as failure:
        raise _all_orderings_failed(str(failure)) from None
    placed = _search(profiles, [], set(), 0)
    if placed is None:
        raise _all_orderings_failed(_first_failure(names, profiles))
    devices = [MigDevice(p, gpu_instance_id(p, start), start) for p, start in placed]
    return tuple(sorted(devices, key=lambda d: d.gpu_instance_id))


def _all_orderings_failed(first: str) -> MigPartedError:
    message = _apply_error("error setting MIGConfig: error attempting multiple config orderings: all orderings failed")
    return MigPartedError(message, (first[0].upper() + first[1:],))


def _fits(profile: MigProfile, start: int, placed: list[tuple[MigProfile, int]], used: set[int],
          compute: int) -> bool:
    if compute + profile.compute_slices > COMPUTE_SLICES_PER_GPU:
        return False
    if sum(1 for p, _ in placed if p.name == profile.name) >= profile.instances:
        return False
    return not used.intersection(range(start, start + profile.memory_slices))


def _search(profiles: list[MigProfile], placed: list[tuple[MigProfile, int]], used: set[int],
            compute: int) -> list[tuple[MigProfile, int]] | None:
    """Depth-first over placements, highest start first (NVML fills a GPU from the top)."""
    if not profiles:
        return placed
    profile, rest = profiles[0], profiles[1:]
    for start in sorted(profile.placements, reverse=True):
        if _fits(profile, start, placed, used, compute):
            found = _search(rest, placed + [(profile, start)],
                            used | set(range(start, start + profile.memory_slices)),
                            compute + profile.compute_slices)
            if found is not None:
                return found
    return None


def _first_failure(names: list[str], profiles: list[MigProfile]) -> str:
    """The error the first ordering attempt logs: the first instance NVML cannot create greedily."""
    placed: list[tuple[MigProfile, int]] = []
    used: set[int] = set()
    compute = 0
    for name, profile in zip(names, profiles):
        start = next((s for s in sorted(profile.placements, reverse=True)
                      if _fits(profile, s, placed, used, compute)), None)
        if start is None:
            return f"error creating GPU instance for '{name}': Insufficient Resources"
        placed.append((profile, start))
        used |= set(range(start, start + profile.memory_slices))
        compute += profile.compute_slices
    return f"error creating GPU instance for '{names[-1]}': Insufficient Resources"


def gpu_instance_id(profile: MigProfile, start: int) -> int:
    """The GPU instance ID NVML gives an instance at ``start`` (observed on H100: 1-slice at start s is 7+s)."""
    if profile.memory_slices >= MEMORY_SLICES_PER_GPU:
        return 0
    if profile.memory_slices == 4:
        return 1 if start == 4 else 2
    if profile.memory_slices == 2:
        return 3 + (6 - start) // 2
    return 7 + start


# --- what the device plugin exposes -----------------------------------------------------------

def mig_resource_name(profile: MigProfile) -> str:
    """The mixed-strategy resource of a profile: ``nvidia.com/mig-1g.10gb`` (``nvidia.com/mig-1g.10gb.me``)."""
    return f"nvidia.com/mig-{profile.resource_suffix}"


def device_map(layout: Layout, strategy: str) -> dict[str, int]:
    """Device counts per resource name, as ``deviceMapBuilder.build`` sees them before any sharing.

    Raises :class:`DevicePluginError` with the device plugin's message when the
    strategy refuses the layout (the plugin then exits and advertises nothing).
    """
    if strategy not in MIG_STRATEGIES:
        raise DevicePluginError(f"unknown MIG strategy: {strategy}")
    if strategy == "none":
        return {FULL_GPU_RESOURCE: len(layout)} if layout else {}
    prefix = "error building device map from config.resources: "
    if any(gpu.mig_enabled and not gpu.devices for gpu in layout):
        raise DevicePluginError(
            prefix + "invalid MIG configuration: at least one device with migEnabled=true was not configured "
            "correctly: device 0 has an invalid MIG configuration")
    mig_devices = [d for gpu in layout if gpu.mig_enabled for d in gpu.devices]
    full = sum(1 for gpu in layout if not gpu.mig_enabled)
    if strategy == "single":
        if len({d.profile.name for d in mig_devices}) > 1:
            raise DevicePluginError(prefix + "invalid MIG configuration: more than one MIG device type present on node")
        if full and mig_devices:
            raise DevicePluginError(prefix + "all devices on the node must be configured with the same migEnabled value")
        total = full + len(mig_devices)
        return {FULL_GPU_RESOURCE: total} if total else {}
    counts: dict[str, int] = {FULL_GPU_RESOURCE: full} if full else {}
    for device in mig_devices:
        name = mig_resource_name(device.profile)
        counts[name] = counts.get(name, 0) + 1
    return counts
