"""k8s-device-plugin's ``config-manager`` as it runs in a container on the embedded cluster's nodes.

``cmd/config-manager/main.go``: as the device plugin pod's init container (``ONESHOT=true``) it chooses a
config once and links it for the plugin; as the sidecar it chooses again whenever the node label changes
(polled every 5 s here) and signals the plugin. The choice is :func:`.deviceplugin.choose_config_name`,
the same one the device plugin emulation makes, so what the container logs and what the plugin loads
cannot disagree. Lines are klog's (``I0101 00:00:00.000000       1 main.go:248] ...``, with that file's
line numbers) on stderr; an error is logged at ``main.go:208`` and the program exits 1. The sidecar cannot
see the link the init container made, so it takes its first choice to be that one ("Already configured").

A native program of the node agent (:data:`gpulab.contract.NativeProgram`), named by the ``config-manager``
behaviour of ``data/images.yaml``; ``gpulab/embedded.py`` supplies it with that document.
"""
from __future__ import annotations

import posixpath
from datetime import datetime, timezone
from typing import Generator

from ..contract import ContainerProcess

DEFAULT_PROCESS_TO_SIGNAL = "nvidia-device-plugin"
POLL_SECONDS = 5


def klog_time(now: float) -> str:
    """klog's header time, ``MMDD HH:MM:SS.uuuuuu``."""
    stamp = datetime.fromtimestamp(now, tz=timezone.utc)
    return (stamp.strftime("%m%d %H:%M:%S.") + f"{int(round((now % 1) * 1e9)):09d}")[:20]


def _klog(severity: str, at: str, line: int, message: str) -> tuple[str, str]:
    return ("stderr", f"{severity}{at}       1 main.go:{line}] {message}\n")


def _config_names(process: ContainerProcess, directory: str) -> list[str]:
    from .deviceplugin import ConfigManagerError

    names = process.listdir(directory)
    if names is None:
        raise ConfigManagerError(f"error getting list of configuration files: error reading directory: open "
                                 f"{directory}: no such file or directory")
    return [n for n in names if process.is_file(posixpath.join(directory, n))]


def main(process: ContainerProcess) -> Generator[tuple[str, object], None, int]:
    # The device plugin's modules load when a config-manager container first runs, not with the node agent.
    from .deviceplugin import CONFIG_LABEL, ConfigManagerError, choose_config_name

    env = process.getenv
    label_name = env("NODE_LABEL") or CONFIG_LABEL
    directory = env("CONFIG_FILE_SRCDIR") or ""
    fallbacks = tuple((env("FALLBACK_STRATEGIES") or "").replace(",", " ").split())
    signal = env("SIGNAL") or "1"
    signal_name = "hangup" if signal == "1" else f"signal {signal}"
    oneshot = env("ONESHOT") == "true"
    at = klog_time(process.now())
    for value, flag in ((env("NODE_NAME"), "node-name"), (directory, "config-file-srcdir"),
                        (env("CONFIG_FILE_DST"), "config-file-dst")):
        if not value:
            yield _klog("E", at, 208, f"invalid <{flag}>: must not be empty string")
            return 1
    assumed = not oneshot            # the sidecar's first choice is taken to be what the init container linked
    linked: str | None = None
    value: str | None = None
    while True:
        yield _klog("I", at, 246, f"Waiting for change to '{label_name}' label")
        new = process.node_label(label_name) or ""
        while new == value:
            yield ("sleep", POLL_SECONDS)
            new = process.node_label(label_name) or ""
        value = new
        at = klog_time(process.now())
        yield _klog("I", at, 248, f"Label change detected: {label_name}={value}")
        logged: list[tuple[str, str]] = []
        try:
            chosen = choose_config_name(value, env("DEFAULT_CONFIG") or "", _config_names(process, directory),
                                        fallbacks, log=lambda line, message: logged.append(_klog("I", at, line, message)))
        except ConfigManagerError as err:
            yield from logged
            yield _klog("E", at, 208, str(err))
            return 1
        yield from logged
        yield _klog("I", at, 304, f"Updating to config: {chosen}") if chosen else \
            _klog("I", at, 302, "Updating to empty config")
        if assumed or linked == chosen:
            yield _klog("I", at, 312, "Already configured. Skipping update...")
        else:
            yield _klog("I", at, 319, f"Successfully updated to config: {chosen}") if chosen else \
                _klog("I", at, 317, "Successfully updated to empty config")
            if env("SEND_SIGNAL") != "false":
                target = env("PROCESS_TO_SIGNAL") or DEFAULT_PROCESS_TO_SIGNAL
                yield _klog("I", at, 323, f"Sending signal '{signal_name}' to '{target}'")
                yield _klog("I", at, 328, "Successfully sent signal")
        assumed, linked = False, chosen
        if oneshot:
            return 0
