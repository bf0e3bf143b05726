"""The NVIDIA driver on each node, and the operator's driver upgrade controller.

Which driver a node runs is the version of its running driver pod's image
(``nvcr.io/nvidia/driver:580.105.08-ubuntu22.04``), or the host's driver when
``driver.enabled=false`` (the emulated hosts come with :data:`PREINSTALLED_DRIVER`).
The driver DaemonSet uses ``updateStrategy: OnDelete``, so a new
``driver.version`` changes nothing until a driver pod is deleted. With
``driver.upgradePolicy.autoUpgrade`` (the chart default) the upgrade controller
(NVIDIA/gpu-operator ``controllers/upgrade_controller.go`` over
NVIDIA/k8s-operator-libs ``pkg/upgrade``) does it node by node, walking the
``nvidia.com/gpu-driver-upgrade-state`` label through its states, recording a
``GPUDriverUpgrade`` event on the node at each step: cordon, delete the pods
using GPUs (``podDeletion``, the values' ``gpuPodDeletion``; pods that no controller owns are refused unless
``force``, which fails the upgrade as the drain helper does), restart the driver
pod, wait for it, uncordon. ``maxParallelUpgrades`` bounds how many nodes are
in flight.

The CUDA version each driver branch supports is NVIDIA's table (CUDA Toolkit
release notes, "CUDA Toolkit and Corresponding Driver Versions"); it is what
``nvidia-smi`` prints as ``CUDA Version`` and GFD as ``cuda.runtime.*``.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import standins

UPGRADE_STATE_LABEL = "nvidia.com/gpu-driver-upgrade-state"
UPGRADE_EVENT_REASON = "GPUDriverUpgrade"
PREINSTALLED_DRIVER = "580.105.08"
DRIVER_APP = "nvidia-driver-daemonset"

# k8s-operator-libs pkg/upgrade/consts.go
UPGRADE_REQUIRED = "upgrade-required"
CORDON_REQUIRED = "cordon-required"
WAIT_FOR_JOBS_REQUIRED = "wait-for-jobs-required"
POD_DELETION_REQUIRED = "pod-deletion-required"
DRAIN_REQUIRED = "drain-required"
POD_RESTART_REQUIRED = "pod-restart-required"
VALIDATION_REQUIRED = "validation-required"
UNCORDON_REQUIRED = "uncordon-required"
UPGRADE_DONE = "upgrade-done"
UPGRADE_FAILED = "upgrade-failed"
IN_PROGRESS = (CORDON_REQUIRED, WAIT_FOR_JOBS_REQUIRED, POD_DELETION_REQUIRED, DRAIN_REQUIRED,
               POD_RESTART_REQUIRED, VALIDATION_REQUIRED, UNCORDON_REQUIRED)

# driver branch -> CUDA version of the driver API (CUDA Toolkit release notes, Table 3: CUDA 13.3 GA needs
# >= 610.43.02, 13.2 GA >= 595.45.04, 13.1 GA >= 590.44.01).
_CUDA_BY_BRANCH = ((610, "13.3"), (595, "13.2"), (590, "13.1"), (580, "13.0"), (575, "12.9"), (570, "12.8"), (565, "12.7"), (560, "12.6"),
                   (555, "12.5"), (550, "12.4"), (545, "12.3"), (535, "12.2"), (530, "12.1"), (525, "12.0"),
                   (520, "11.8"), (515, "11.7"), (510, "11.6"), (495, "11.5"), (470, "11.4"))


def cuda_version(driver_version: str) -> str:
    """The CUDA version a driver supports (``580.105.08`` -> ``13.0``)."""
    try:
        branch = int(driver_version.split(".")[0])
    except ValueError:
        return "13.0"
    for minimum, cuda in _CUDA_BY_BRANCH:
        if branch >= minimum:
            return cuda
    return "11.4"


def image_driver_version(image: str) -> str:
    """``nvcr.io/nvidia/driver:580.105.08-ubuntu22.04`` -> ``580.105.08``."""
    tag = image.rsplit(":", 1)[-1] if ":" in image.rsplit("/", 1)[-1] else ""
    return tag.split("-")[0]


def driver_container_image(pod: dict) -> str:
    """The driver image of a driver Pod or pod template (the one a stand-in image stands for, :mod:`.standins`)."""
    containers = (pod.get("spec") or {}).get("containers") or []
    return standins.real_image(pod, containers[0]) if containers else ""


def pod_is_current(pod: dict, daemonset: dict | None) -> bool:
    """Whether a driver pod runs the DaemonSet's current template (compared by the driver image)."""
    if daemonset is None:
        return True
    return driver_container_image(pod) == driver_container_image(daemonset["spec"]["template"])


@dataclass(frozen=True)
class UpgradePolicy:
    auto_upgrade: bool = True
    max_parallel: int = 1
    force_gpu_pod_deletion: bool = False
    drain: bool = False          # drain.enable: after the GPU pods, every other pod but DaemonSets' leaves the node
    drain_force: bool = False

    @classmethod
    def from_spec(cls, spec: dict) -> "UpgradePolicy":
        policy = ((spec.get("driver") or {}).get("upgradePolicy")) or {}
        deletion = policy.get("podDeletion") or {}
        drain = policy.get("drain") or {}
        return cls(bool(policy.get("autoUpgrade", True)), int(policy.get("maxParallelUpgrades", 1) or 0),
                   bool(deletion.get("force", False)), bool(drain.get("enable", False)),
                   bool(drain.get("force", False)))


def unmanaged_refusal(pods: list[dict]) -> str | None:
    """The drain helper's error for pods that no controller owns (``k8s.io/kubectl/pkg/drain``), or None."""
    names = [f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in pods
             if not any(ref.get("controller") for ref in p["metadata"].get("ownerReferences") or [])]
    if not names:
        return None
    return f"cannot delete Pods declare no controller (use --force to override): {', '.join(names)}"


def event_message(state: str) -> str:
    """k8s-operator-libs ``ChangeNodeUpgradeState``'s event text."""
    return f"Successfully updated node state label to {state}"
