"""The MIG manager on one node: ``nvidia.com/mig.config`` in, a MIG geometry and ``mig.config.state`` out.

Follows NVIDIA/mig-parted ``pkg/mig/reconfigure/reconfigure.go`` (the
``nvidia-mig-manager`` of k8s-mig-manager v0.13, the Go port of
``deployments/container/reconfigure-mig.sh``) step by step:

1. assert the selected config exists in the config file (``assert --valid-config``),
   else ``failed``;
2. if the GPUs already have that geometry (``assert``), ``success`` and stop;
3. ``pending``; set ``nvidia.com/gpu.deploy.{device-plugin,gpu-feature-discovery,
   dcgm-exporter,dcgm,nvsm}`` to ``paused-for-mig-change`` (a value of ``false``
   is kept), so their DaemonSets take their pods off the node;
4. wait for those pods to be deleted, delete the ``nvidia-cuda-validator`` and
   ``nvidia-device-plugin-validator`` pods;
5. ``nvidia-mig-parted apply`` (:func:`gpulab.gpustack.mig.plan`); GPUs still
   used by other pods cannot change (NVML ``In use by another client``): the
   MIG manager never stops user workloads;
6. delete the ``nvidia-operator-validator`` pod so validations run again, set
   the deploy labels back to ``true`` (or ``false`` where they were), and
   ``success`` — or, on any failure, restore the labels and ``failed``.

The labels the manager saved at step 3 live in memory in the real program; here
they are kept in the ``gpulab.dev/mig-manager-saved`` node annotation so a
restart of the reconciler mid-change resumes it.
"""
from __future__ import annotations

import json

from .mig import Layout, MigConfigs, MigPartedError, default_configs, parse_config, plan

CONFIG_LABEL = "nvidia.com/mig.config"
STATE_LABEL = "nvidia.com/mig.config.state"
SAVED_ANNOTATION = "gpulab.dev/mig-manager-saved"
PAUSED = "paused-for-mig-change"
PAUSED_COMPONENTS = ("device-plugin", "gpu-feature-discovery", "dcgm-exporter", "dcgm", "nvsm")
# The operand pods the manager waits for (reconfigure.go waitForPodsToBeDeleted), by their app label.
PAUSED_APPS = ("nvidia-device-plugin-daemonset", "gpu-feature-discovery", "nvidia-dcgm-exporter", "nvidia-dcgm")
VALIDATOR_APPS = ("nvidia-cuda-validator", "nvidia-device-plugin-validator")
OPERATOR_VALIDATOR_APP = "nvidia-operator-validator"
CONFIG_KEY = "config.yaml"
EVENT_REASON = "MIGConfigFailed"


def deploy_label(component: str) -> str:
    return f"nvidia.com/gpu.deploy.{component}"


def paused_labels(current: dict[str, str]) -> dict[str, str]:
    """``maybeSetPaused`` for every paused component."""
    return {deploy_label(c): "false" if current.get(deploy_label(c)) == "false" else PAUSED
            for c in PAUSED_COMPONENTS}


def restored_labels(saved: dict[str, str]) -> dict[str, str]:
    """``maybeSetTrue`` for every paused component."""
    return {deploy_label(c): "false" if saved.get(deploy_label(c)) == "false" else "true"
            for c in PAUSED_COMPONENTS}


def saved_labels(annotations: dict[str, str]) -> dict[str, str] | None:
    raw = annotations.get(SAVED_ANNOTATION)
    if raw is None:
        return None
    try:
        return dict(json.loads(raw))
    except ValueError:
        return {}


def encode_saved(labels: dict[str, str]) -> str:
    return json.dumps({deploy_label(c): labels.get(deploy_label(c), "") for c in PAUSED_COMPONENTS},
                      separators=(",", ":"), sort_keys=True)


def load_configs(config_map: dict | None, name: str) -> MigConfigs:
    """The configs of the ConfigMap ``migManager.config.name`` (the operator's default when it is that one)."""
    if config_map is None:
        if name == "default-mig-parted-config":
            return default_configs()
        raise MigPartedError(f"error parsing config file: open /mig-parted-config/{CONFIG_KEY}: "
                             "no such file or directory")
    data = config_map.get("data") or {}
    if CONFIG_KEY not in data:
        raise MigPartedError(f"error parsing config file: open /mig-parted-config/{CONFIG_KEY}: "
                             "no such file or directory")
    return parse_config(data[CONFIG_KEY])


def gpus_changing(current: Layout, wanted: Layout) -> list[int]:
    return [i for i, (a, b) in enumerate(zip(current, wanted)) if a != b]


def in_use_error(current: Layout, wanted: Layout, busy_gpus: set[int]) -> str | None:
    """NVML's refusal when a GPU that must change still has processes (pods holding its devices)."""
    for index in gpus_changing(current, wanted):
        if index not in busy_gpus:
            continue
        if current[index].mig_enabled != wanted[index].mig_enabled:
            return f"error setting MIG mode on GPU {index}: error setting Mig mode: In use by another client"
        return (f"error applying MIG configuration with hooks: error setting MIGConfig: error clearing MIG config on "
                f"GPU {index}: error destroying GPU instance: In use by another client")
    return None


def apply(model, count: int, config_name: str, configs: MigConfigs, current: Layout) -> Layout:
    """``nvidia-mig-parted apply``: the layout, or :class:`MigPartedError` with mig-parted's message."""
    return plan(model, count, config_name, configs, current)
