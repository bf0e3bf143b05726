"""The GPU stack's images on the embedded cluster's nodes: ``data/images.yaml`` and the native programs it names.

The node agent's catalog lists no GPU images of its own; ``gpulab/embedded.py`` adds this document (the
NVIDIA registry, the CUDA/NGC images, the GPU Operator's operands and their programs' behaviours) with
the programs written in Python that its behaviours name (``native: true``) and the ``nvidia-smi`` the device
allocation mounts (:mod:`.observe`).
"""
from __future__ import annotations

from importlib import resources

from . import (configmanager, cudaworkload, dcgmstart, driverstart, gfdstart, mpsdaemon, nfdmaster, observe,
               pluginstart, toolkitstart)
from .allocation import NVIDIA_SMI_PROGRAM

PROGRAMS = {"config-manager": configmanager.main, "mps-control-daemon": mpsdaemon.main, "nfd-master": nfdmaster.main,
            "nvidia-device-plugin": pluginstart.main, "nvidia-driver": driverstart.main,
            "image-nvidia-smi": observe.image_nvidia_smi, "gpu-feature-discovery": gfdstart.main,
            "dcgm-exporter-entrypoint.sh": dcgmstart.main, "nvidia-toolkit": toolkitstart.toolkit,
            "nvidia-mig-manager": toolkitstart.mig_manager,
            NVIDIA_SMI_PROGRAM: observe.nvidia_smi, **{name: cudaworkload.main for name in cudaworkload.PROGRAMS}}


def document() -> str:
    return resources.files(__package__).joinpath("data/images.yaml").read_text()
