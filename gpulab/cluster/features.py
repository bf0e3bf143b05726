"""Feature gates of the embedded cluster: v1.37's defaults, overridable like ``--feature-gates``.

Only gates that change what gpulab serves are listed. A beta API that is off
by default upstream (``scheduling.k8s.io/v1beta1``, which needs
``--runtime-config`` and the ``GenericWorkload`` gate) is served here when its
gate is on; one switch stands for both. Set ``GPULAB_FEATURE_GATES`` (the
``--feature-gates`` syntax: ``GenericWorkload=true``) in
the environment of ``gpulab cluster up`` to change them; the server process
reads it once.
"""
from __future__ import annotations

import functools
import os

ENV = "GPULAB_FEATURE_GATES"

# pkg/features/versioned_kube_features.go at v1.37 (pkg/scheduler/features for the scheduler's own).
DEFAULTS: dict[str, bool] = {
    "DynamicResourceAllocation": True,  # GA since v1.34, locked
    "DRAPrioritizedList": True,  # GA v1.36
    "DRAAdminAccess": True,  # GA v1.36
    "DRADeviceTaints": True,  # GA v1.37: slice taints, tolerations, the device taint eviction controller
    "DRADeviceTaintRules": True,  # GA v1.37 (needs DRADeviceTaints): the scheduler and controller honour rules
    "DRAExtendedResource": True,  # GA v1.37, locked
    "DRAPartitionableDevices": True,  # beta v1.36, on
    "DRAConsumableCapacity": True,  # beta v1.36, on
    "GenericWorkload": False,  # beta v1.37, off (its API group-version is off by default too); it also puts the
    # GangScheduling plugin in the default profile (pkg/scheduler/apis/config/v1/default_plugins.go): v1.37 has no
    # gate of that name, and kube-apiserver refuses one ("unrecognized feature gate: GangScheduling")
}


class FeatureGateError(ValueError):
    """A ``GPULAB_FEATURE_GATES`` entry that names no gate or has a value other than true/false."""


def parse(text: str) -> dict[str, bool]:
    """``A=true,B=false`` as ``--feature-gates`` takes it; unknown gates and bad values are errors."""
    out: dict[str, bool] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep or value.lower() not in ("true", "false"):
            raise FeatureGateError(f"invalid value of {name}: {value}, err: strconv.ParseBool: parsing "
                                   f'"{value}": invalid syntax' if sep else f"missing bool value for {name}")
        if name not in DEFAULTS:
            raise FeatureGateError(f"unrecognized feature gate: {name}")
        out[name] = value.lower() == "true"
    return out


@functools.lru_cache(maxsize=1)
def gates() -> dict[str, bool]:
    return {**DEFAULTS, **parse(os.environ.get(ENV, ""))}


def enabled(name: str) -> bool:
    return gates()[name]
