"""The container toolkit's installer (``nvidia-toolkit``) as its container logs it, and the MIG manager's loop.

NVIDIA/nvidia-container-toolkit v1.20.0 ``cmd/nvidia-ctk-installer`` (logrus): ``main`` logs ``Starting
nvidia-ctk-installer``; ``Run`` logs ``Initializing`` (the pid file), then the toolkit's ``Install``
(``toolkit/toolkit.go``: ``Installing NVIDIA container toolkit to '<install dir>/toolkit'`` and ``Removing existing
NVIDIA container toolkit installation``), configures the runtime and logs ``Waiting for signal``; on the stop
signal it cleans up and logs ``Completed nvidia-ctk-installer``. The install dir is ``TOOLKIT_INSTALL_DIR`` or
``ROOT``, by default ``/usr/local/nvidia``. Left out: the line per file it installs, the source root it resolves and
the runtime configuration's own lines, which depend on the host's files.

NVIDIA/mig-parted v0.15.0 ``cmd/nvidia-mig-manager/main.go`` (logrus): ``setupMigConfig`` logs ``Using custom
config: FILE`` (``CONFIG_FILE``), then ``start`` loops: ``Waiting for change to 'nvidia.com/mig.config' label``,
``Updating to MIG config: NAME`` once the label names a config, then ``Successfully updated to MIG config: NAME``
(a failed reconfiguration's ``Error: ...`` line, whose text the reconfigure package words, is left out). The reconfiguration itself is the GPU stack's MIG manager
(:mod:`.migmanager`), which reports its outcome in the node's ``nvidia.com/mig.config.state`` label; this program
follows that label (the reconfigure script's own output is left out). Native programs of the node agent
(:data:`gpulab.contract.NativeProgram`).
"""
from __future__ import annotations

import math
from typing import Generator

from ..contract import ContainerProcess
from .golog import logrus_line
from .migmanager import CONFIG_LABEL, STATE_LABEL

DEFAULT_INSTALL_DIR = "/usr/local/nvidia"
LABEL_POLL_S = 2.0     # how often the MIG manager's loop looks at its node's labels (its informer, here)
START_WAIT_S = 10.0    # how long a new config's reconfiguration may take to set the state to pending


def toolkit(process: ContainerProcess) -> Generator[tuple[str, object], None, int]:
    root = process.getenv("TOOLKIT_INSTALL_DIR") or process.getenv("ROOT") or DEFAULT_INSTALL_DIR
    now = process.now()
    yield logrus_line(now, "info", "Starting nvidia-ctk-installer")
    yield logrus_line(now, "info", "Initializing")
    yield logrus_line(now, "info", f"Installing NVIDIA container toolkit to '{root.rstrip('/')}/toolkit'")
    yield logrus_line(now, "info", "Removing existing NVIDIA container toolkit installation")
    yield logrus_line(now, "info", "Waiting for signal")
    yield ("sleep", math.inf)
    return 0


def mig_manager(process: ContainerProcess) -> Generator[tuple[str, object], None, int]:
    config_file = process.getenv("CONFIG_FILE") or ""
    if config_file:
        yield logrus_line(process.now(), "info", f"Using custom config: {config_file}")
    else:
        yield logrus_line(process.now(), "info", "Generating MIG configuration from hardware...")
    applied: str | None = None
    while True:
        yield logrus_line(process.now(), "info", f"Waiting for change to '{CONFIG_LABEL}' label")
        wanted = process.node_label(CONFIG_LABEL)
        while not wanted or wanted == applied:
            yield ("sleep", LABEL_POLL_S)
            wanted = process.node_label(CONFIG_LABEL)
        yield logrus_line(process.now(), "info", f"Updating to MIG config: {wanted}")
        state = yield from _outcome(process, wanted, first=applied is None)
        applied = wanted
        if state == "success":
            yield logrus_line(process.now(), "info", f"Successfully updated to MIG config: {wanted}")


def _outcome(process: ContainerProcess, wanted: str, *, first: bool) -> Generator[tuple[str, object], None, str]:
    """The state label once the reconfiguration to ``wanted`` ended (``success`` or ``failed``), or whatever it is
    when the label asks for another config meanwhile. A change of config first sets the state ``pending``: the state
    left by the last config counts only once that was seen, or after START_WAIT_S (a reconfiguration too quick to
    catch); the first config of the program's life may find its outcome already there."""
    started = first
    waited = 0.0
    while process.node_label(CONFIG_LABEL) == wanted:
        state = process.node_label(STATE_LABEL)
        if state not in ("success", "failed"):
            started = True
        elif started or waited >= START_WAIT_S:
            return state
        yield ("sleep", LABEL_POLL_S)
        waited += LABEL_POLL_S
    return process.node_label(STATE_LABEL) or ""
