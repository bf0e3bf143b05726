"""The driver container's ``nvidia-driver init``: the install progress a learner reads in its log.

NVIDIA/gpu-driver-container ``ubuntu22.04/nvidia-driver`` (the script is the image's ENTRYPOINT, ``nvidia-driver
init``) prints its architecture, the installer's banner, then one line per step of its full install path as
``init()`` runs them: ``_unload_driver``, ``_unmount_rootfs``, ``_install_userspace_components``,
``_kernel_requires_package`` (no precompiled package for the node's kernel: build one), ``_update_package_cache``,
``_resolve_kernel_version``, ``_install_prerequisites``, ``_create_driver_package``, ``_create_module_params_conf``,
``_install_driver``, ``_load_driver`` (its ``modprobe`` lines traced by ``set -o xtrace``, on stderr),
``_start_daemons``, ``_mount_rootfs``, ``_store_driver_digest``, then ``_wait_for_signal``. On the stop signal its
trap prints ``Caught signal`` and ``_shutdown`` unloads the driver (the ``onStop`` of the ``nvidia-driver``
behaviour, data/images.yaml).

The emulated node has no package cache, compiler or kernel modules: only the script's own ``echo`` lines are
printed, not the output of ``apt-get``, ``make`` or ``nvidia-installer`` between them. The kernel is the node's
(``uname -r``); ``DRIVER_VERSION`` and ``TARGETARCH`` come from the image's environment, as the Dockerfile sets
them. A native program of the node agent (:data:`gpulab.contract.NativeProgram`).
"""
from __future__ import annotations

import math
from typing import Generator

from ..contract import ContainerProcess

RUN_DIR = "/run/nvidia"
FIRMWARE_PARAMETER = "/sys/module/firmware_class/parameters/path"


def _usage() -> str:
    return ("Usage: nvidia-driver COMMAND [ARG...]\n\nCommands:\n"
            "  init   [-a | --accept-license] [-m | --max-threads MAX_THREADS]\n"
            "  update [-k | --kernel VERSION] [-s | --sign KEYID] [-t | --tag TAG] [-m | --max-threads MAX_THREADS]\n")


def install_lines(driver_version: str, arch: str, kernel: str) -> list[tuple[str, str]]:
    """``init``'s full install path as (stream, line) pairs, in the order the script prints them."""
    flavourless = kernel.rsplit("-", 1)[0] if "-" in kernel else kernel
    out = [
        f"DRIVER_ARCH is {arch}",
        "",
        "========== NVIDIA Software Installer ==========",
        "",
        f"Starting installation of NVIDIA driver version {driver_version} for Linux kernel version {kernel}",
        "",
        "Unloading NVIDIA driver kernel modules...",
        "Unmounting NVIDIA driver rootfs...",
        "Installing userspace components (libraries and binaries)...",
        "Checking NVIDIA driver packages...",
        "Updating the package cache...",
        "Resolving Linux kernel version...",
        f"Proceeding with Linux kernel version {kernel}",
        "Installing Linux kernel headers...",
        "Installing Linux kernel module files...",
        "Generating Linux kernel version string...",
        "Compiling NVIDIA driver kernel modules...",
        "Relinking NVIDIA driver kernel modules...",
        f"Building NVIDIA driver package nvidia-modules-{flavourless}...",
        "Parsing kernel module parameters...",
        "Installing NVIDIA driver kernel modules...",
        f"Configuring the following firmware search path in '{FIRMWARE_PARAMETER}': {RUN_DIR}/driver/lib/firmware",
        "Loading ipmi and i2c_core kernel modules...",
        "Loading NVIDIA driver kernel modules...",
    ]
    lines = [("stdout", line) for line in out]
    lines += [("stderr", f"+ {command}") for command in
              ("modprobe nvidia", "modprobe nvidia-uvm", "modprobe nvidia-modeset", "set +o xtrace -o nounset")]
    lines += [("stdout", line) for line in (
        "Starting NVIDIA persistence daemon...",
        "Mounting NVIDIA driver rootfs...",
        "Storing driver configuration digest...",
        f"Driver configuration digest stored at {RUN_DIR}/nvidia-driver.state",
        "Done, now waiting for signal",
    )]
    return lines


def main(process: ContainerProcess) -> Generator[tuple[str, object], None, int]:
    args = process.argv[1:]
    if not args or args[0] not in ("init", "update", "reload_nvidia_peermem", "probe_nvidia_peermem"):
        yield ("stderr", _usage())
        return 1
    if args[0] != "init":       # only the DaemonSet's command is modelled; the others wait like a server
        yield ("sleep", math.inf)
        return 0
    version = process.getenv("DRIVER_VERSION")
    if not version:
        yield ("stderr", "/usr/local/bin/nvidia-driver: line 8: DRIVER_VERSION: Missing DRIVER_VERSION env\n")
        return 1
    arch = (process.getenv("TARGETARCH") or "amd64").replace("amd64", "x86_64").replace("arm64", "aarch64")
    for stream, line in install_lines(version, arch, process.kernel_release()):
        yield (stream, line + "\n")
    yield ("sleep", math.inf)
    return 0
