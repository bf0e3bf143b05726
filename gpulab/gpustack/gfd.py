"""GPU Feature Discovery: the ``nvidia.com/*`` node labels for a node's GPUs.

Follows NVIDIA/k8s-device-plugin v0.18 ``internal/lm`` label by label:

* ``timestamp.go`` ``nvidia.com/gfd.timestamp`` (unix seconds; omitted with ``--no-timestamp``),
* ``machine-type.go`` ``nvidia.com/gpu.machine`` (DMI product name, spaces to ``-``; ``unknown``),
* ``nvml.go`` versions (``cuda.driver.*``, ``cuda.driver-version.*``, ``cuda.runtime.*``,
  ``cuda.runtime-version.*``; "runtime" is the CUDA version of the driver, what
  ``nvidia-smi`` prints as ``CUDA Version``), ``mig.capable``, ``mps.capable``,
  ``gpu.mode`` (PCI class 0x0302 is ``compute``),
* ``mig-strategy.go`` and ``resource.go``: ``gpu.product``/``count``/``replicas``/
  ``sharing-strategy``/``memory``/``family``/``compute.*`` for whole GPUs, then the
  MIG labels of the strategy: under ``single`` the ``nvidia.com/gpu.*`` labels of the
  one MIG profile (``NVIDIA-H100-80GB-HBM3-MIG-1g.10gb``) or the ``-MIG-INVALID``
  labels when the GPUs are not all split the same way; under ``mixed`` one
  ``nvidia.com/mig-<profile>.*`` group per profile,
* ``vgpu.go``: ``nvidia.com/vgpu.present=false`` on bare metal.

Later labelers overwrite earlier ones (``list.go`` ``Labels``), which is how the
MIG labels replace the whole-GPU ``nvidia.com/gpu.product`` under ``single``.
"""
from __future__ import annotations

import re
from collections import Counter

from .hardware import GpuModel, MigProfile
from .mig import FULL_GPU_RESOURCE, MIG_STRATEGIES, Layout, mig_resource_name, whole_gpus
from .sharing import NO_SHARING, DevicePluginConfig

PREFIX = "nvidia.com/"


class GfdError(Exception):
    """GFD fails to label the node (it exits and the labels stay as they were)."""


def sanitise(part: str) -> str:
    """``sanitise`` in resource.go: drop characters outside ``[A-Za-z0-9-_. ]``, join words with ``-``."""
    return "-".join(re.sub(r"[^A-Za-z0-9\-_. ]", "", part).split())


def gfd_labels(model: GpuModel, count: int, *, driver_version: str, cuda_version: str,
               mig_strategy: str = "none", layout: Layout | None = None,
               sharing: DevicePluginConfig = NO_SHARING, machine: str = "unknown",
               timestamp: int | None = None) -> dict[str, str]:
    """The labels GFD writes for ``count`` GPUs of ``model`` in ``layout`` (MIG disabled by default).

    ``driver_version`` is the NVIDIA driver (``580.105.08``), ``cuda_version`` the
    CUDA version of that driver (``13.0``), ``machine`` the DMI product name and
    ``timestamp`` the unix time of the labelling (None for ``--no-timestamp``).
    Keys are sorted, as ``kubectl get node -o json`` shows them.
    """
    if mig_strategy not in MIG_STRATEGIES:
        raise GfdError(f"error creating labeler: error creating resource labeler: unknown strategy: {mig_strategy}")
    layout = whole_gpus(count) if layout is None else layout
    if count == 0:
        return {} if timestamp is None else {PREFIX + "gfd.timestamp": str(timestamp)}
    labels: dict[str, str] = {}
    if timestamp is not None:
        labels[PREFIX + "gfd.timestamp"] = str(timestamp)
    labels[PREFIX + "gpu.machine"] = machine.replace(" ", "-")
    labels.update(_version_labels(driver_version, cuda_version))
    labels[PREFIX + "mig.capable"] = "true" if model.mig_capable else "false"
    labels.update(_sharing_labels(layout, sharing))
    labels.update(_full_gpu_labels(model, layout, sharing))
    if mig_strategy != "none":
        labels[PREFIX + "mig.strategy"] = mig_strategy
        labels.update(_single_labels(model, layout, sharing) if mig_strategy == "single"
                      else _mixed_labels(model, layout, sharing))
    labels[PREFIX + "gpu.mode"] = "compute" if model.pci_class == 0x0302 else "graphics"
    labels[PREFIX + "vgpu.present"] = "false"
    return dict(sorted(labels.items()))


def _version_labels(driver_version: str, cuda_version: str) -> dict[str, str]:
    parts = driver_version.split(".")
    if not 2 <= len(parts) <= 3:
        raise GfdError(f'error getting driver version: Version "{driver_version}" does not match format "X.Y[.Z]"')
    major, minor = parts[0], parts[1]
    rev = parts[2] if len(parts) == 3 else ""
    cuda_major, cuda_minor = (int(x) for x in cuda_version.split(".")[:2])
    return {
        PREFIX + "cuda.driver.major": major,
        PREFIX + "cuda.driver.minor": minor,
        PREFIX + "cuda.driver.rev": rev,
        PREFIX + "cuda.runtime.major": str(cuda_major),
        PREFIX + "cuda.runtime.minor": str(cuda_minor),
        PREFIX + "cuda.driver-version.major": major,
        PREFIX + "cuda.driver-version.minor": minor,
        PREFIX + "cuda.driver-version.revision": rev,
        PREFIX + "cuda.driver-version.full": driver_version,
        PREFIX + "cuda.runtime-version.major": str(cuda_major),
        PREFIX + "cuda.runtime-version.minor": str(cuda_minor),
        PREFIX + "cuda.runtime-version.full": f"{cuda_major}.{cuda_minor}",
    }


def _sharing_labels(layout: Layout, sharing: DevicePluginConfig) -> dict[str, str]:
    if sharing.strategy != "mps":
        return {PREFIX + "mps.capable": "false"}
    if any(gpu.mig_enabled for gpu in layout):
        raise GfdError("error creating labeler: error creating sharing labeler: failed to check MPS-capable: "
                       "MPS sharing is not supported for mig devices")
    return {PREFIX + "mps.capable": "true"}


def _base(resource: str, count: int, parts: tuple[str, ...], sharing: DevicePluginConfig | None) -> dict[str, str]:
    """``resourceLabeler.baseLabeler``: product, count, replicas, sharing-strategy of one resource."""
    replicated = sharing.replicas_of(resource) if sharing is not None and sharing.strategy != "none" else None
    if sharing is None:
        replicas = 0
    else:
        replicas = replicated.replicas if replicated is not None else 1
    strategy = sharing.strategy if sharing is not None and replicas > 1 else "none"
    product = "-".join(sanitise(p) for p in parts if p)
    if replicated is not None and replicated.replicas > 1 and not sharing.rename_by_default:
        product += "-SHARED"
    return {
        f"{resource}.product": product,
        f"{resource}.count": str(count),
        f"{resource}.replicas": str(replicas),
        f"{resource}.sharing-strategy": strategy,
    }


def _full_gpu_labels(model: GpuModel, layout: Layout, sharing: DevicePluginConfig) -> dict[str, str]:
    """``newGPULabelers``: whole-GPU labels; MIG-enabled GPUs are labelled without sharing."""
    any_full = any(not gpu.mig_enabled for gpu in layout)
    labels = _base(FULL_GPU_RESOURCE, len(layout), (model.name,), sharing if any_full else None)
    labels[f"{FULL_GPU_RESOURCE}.memory"] = str(model.memory_mib)
    major, minor = model.compute_capability
    labels[f"{FULL_GPU_RESOURCE}.family"] = model.family
    labels[f"{FULL_GPU_RESOURCE}.compute.major"] = str(major)
    labels[f"{FULL_GPU_RESOURCE}.compute.minor"] = str(minor)
    return labels


def _mig_labels(resource: str, model: GpuModel, profile: MigProfile, count: int,
                sharing: DevicePluginConfig) -> dict[str, str]:
    """``NewMIGResourceLabeler``: base labels plus the MIG device attributes."""
    labels = _base(resource, count, (model.name, "MIG", profile.resource_suffix), sharing)
    engines = profile.engines
    attributes = {
        "memory": profile.memory_mib,
        "multiprocessors": profile.multiprocessors,
        "slices.gi": profile.compute_slices,
        "slices.ci": profile.compute_slices,
        "engines.copy": engines.copy,
        "engines.decoder": engines.decoder,
        "engines.encoder": engines.encoder,
        "engines.jpeg": engines.jpeg,
        "engines.ofa": engines.ofa,
    }
    labels.update({f"{resource}.{k}": str(v) for k, v in attributes.items()})
    return labels


def single_strategy_problem(layout: Layout) -> str | None:
    """Why ``mig-strategy=single`` cannot label this layout (the reason GFD logs), or None."""
    enabled = [gpu for gpu in layout if gpu.mig_enabled]
    if not enabled:
        return None
    if any(not gpu.devices for gpu in enabled):
        return "at least one MIG device is enabled but empty"
    if len(enabled) != len(layout):
        return "devices with MIG enabled and disable detected"
    if len({d.profile.name for gpu in enabled for d in gpu.devices}) != 1:
        return "more than one MIG device type present on node"
    return None


def _single_labels(model: GpuModel, layout: Layout, sharing: DevicePluginConfig) -> dict[str, str]:
    if not any(gpu.mig_enabled for gpu in layout):
        return {}
    if single_strategy_problem(layout) is not None:
        return {
            f"{FULL_GPU_RESOURCE}.product": "-".join((sanitise(model.name), "MIG", "INVALID")),
            f"{FULL_GPU_RESOURCE}.count": "0",
            f"{FULL_GPU_RESOURCE}.replicas": "0",
            f"{FULL_GPU_RESOURCE}.memory": "0",
        }
    devices = [d for gpu in layout for d in gpu.devices]
    return _mig_labels(FULL_GPU_RESOURCE, model, devices[0].profile, len(devices), sharing)


def _mixed_labels(model: GpuModel, layout: Layout, sharing: DevicePluginConfig) -> dict[str, str]:
    counts = Counter(d.profile for gpu in layout if gpu.mig_enabled for d in gpu.devices)
    labels: dict[str, str] = {}
    for profile, n in counts.items():
        labels.update(_mig_labels(mig_resource_name(profile), model, profile, n, sharing))
    return labels
