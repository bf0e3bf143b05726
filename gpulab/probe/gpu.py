"""Is there a GPU to probe, and what is it?

``unavailable_reason`` answers without creating a CUDA context (the probe's
parent process must not hold one: it would be one more time-sliced neighbour).
``describe`` adds what ``nvidia-smi`` knows (driver, MIG and compute mode,
NVML's memory figure), in the data file's ``gpu`` fields; NVML's enum values are
those of ``nvmlComputeMode_t`` (Default 0, Exclusive_Thread 1, Prohibited 2,
Exclusive_Process 3).
"""
from __future__ import annotations

import os
import shutil
import subprocess

POD_MANIFEST = "cluster-setup/real/probe-pod.yaml"
_COMPUTE_MODES = {"Default": 0, "Exclusive_Thread": 1, "Prohibited": 2, "Exclusive_Process": 3}
_SMI_FIELDS = ("name", "driver_version", "memory.total", "mig.mode.current", "mig.mode.pending", "compute_mode")


def unavailable_reason(device: int = 0) -> str | None:
    """Why there is nothing to measure on CUDA device ``device``, or None when there is."""
    try:
        import torch
    except ImportError:
        return ("PyTorch is not installed, so there is nothing to measure with: install it with CUDA support "
                "(https://pytorch.org/get-started/locally/) on a GPU host, or run the probe in a pod "
                f"holding a GPU ({POD_MANIFEST})")
    if torch.version.cuda is None:
        return (f"PyTorch {torch.__version__} is a CPU-only build (torch.version.cuda is None): install a CUDA "
                "build on a GPU host, or run the probe in a pod holding a GPU "
                f"({POD_MANIFEST})")
    if not torch.cuda.is_available():
        visible = ", ".join(f"{k}={os.environ[k]!r}" for k in ("NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")
                            if k in os.environ) or "no NVIDIA_VISIBLE_DEVICES or CUDA_VISIBLE_DEVICES set"
        smi = "" if shutil.which("nvidia-smi") else "; nvidia-smi is not on PATH either"
        return (f"no NVIDIA GPU is visible: torch.cuda.is_available() is False (PyTorch {torch.__version__}, "
                f"CUDA {torch.version.cuda}; {visible}{smi}). Run it on a GPU host, or in a pod holding a GPU "
                f"({POD_MANIFEST})")
    count = torch.cuda.device_count()
    if device >= count:
        return f"CUDA device {device} does not exist: {count} visible"
    return None


def _smi_value(text: str) -> str | None:
    text = text.strip()
    return None if text in ("", "[N/A]", "N/A", "[Not Supported]") else text


def _mig_mode(text: str | None) -> int | None:
    return {"Enabled": 1, "Disabled": 0}.get(text or "")


def nvidia_smi(device: int = 0) -> dict:
    """``nvidia-smi --query-gpu`` for ``device``, in the data file's field names; ``{}`` without nvidia-smi."""
    if not shutil.which("nvidia-smi"):
        return {}
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={','.join(_SMI_FIELDS)}", "--format=csv,noheader,nounits",
                              "-i", str(device)], capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    values = [_smi_value(v) for v in out.strip().split(",")]
    if len(values) != len(_SMI_FIELDS):
        return {}
    name, driver, memory, mig_current, mig_pending, compute = values
    return {"nvml_name": name, "driver": driver, "mig_mode_current": _mig_mode(mig_current),
            "mig_mode_pending": _mig_mode(mig_pending), "compute_mode": _COMPUTE_MODES.get(compute or ""),
            "nvml_mem_total_mib": int(memory) if memory and memory.isdigit() else None}


def describe(props: dict, device: int = 0) -> dict:
    """The data file's ``gpu`` object from the server's device properties and nvidia-smi."""
    info = {"gpu": props["name"], "total_mem_gib": props["total_memory"] / 2**30,
            "sm": props["multi_processor_count"]}
    info.update(nvidia_smi(device))
    info["cuda_capability"] = props["capability"]
    return info
