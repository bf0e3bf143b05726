"""k8s-device-plugin's ``gpu-feature-discovery`` as its container logs it: the config it runs with, then a label
pass every sleep interval.

NVIDIA/k8s-device-plugin v0.18.1 ``cmd/gpu-feature-discovery/main.go``: ``start`` logs ``Starting OS watcher.``,
``Loading configuration.``, the config as indented JSON (``spec.NewConfig`` from its flags; flags GFD does not
define stay ``null``) and ``Start running``; each pass of ``run`` logs ``Creating Labels``, the outputer's line
(``internal/lm/output.go``: ``Writing labels to output file PATH``, or with the NodeFeature API ``creating
NodeFeature object nvidia-features-for-NODE`` the first time and ``no changes in NodeFeature object, not
updating`` after), then ``Sleeping for INTERVAL`` (a Go duration) unless ``GFD_ONESHOT``, which exits 0 after one
pass. The labels themselves are the GPU stack's (:mod:`.gfd`), written to the node by its reconciler; with the
NodeFeature API the ``NodeFeature object created`` line, which prints the whole object, is left out.
A native program of the node agent (:data:`gpulab.contract.NativeProgram`).
"""
from __future__ import annotations

import json
import re
from typing import Generator

from ..contract import ContainerProcess
from .configmanager import klog, klog_time
from .pluginstart import env_flag

OUTPUT_FILE = "/etc/kubernetes/node-feature-discovery/features.d/gfd"
MACHINE_TYPE_FILE = "/sys/class/dmi/id/product_name"
NODE_FEATURE_PREFIX = "nvidia-features-for"
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> float | None:
    """Go's ``time.ParseDuration`` for what a manifest writes (``60s``, ``1m30s``, ``2h``); None if it is not one."""
    if not text or _PART.sub("", text) != "":
        return None
    return sum(float(n) * _UNITS[u] for n, u in _PART.findall(text))


def go_duration(seconds: float) -> str:
    """Go's ``Duration.String`` for whole and fractional seconds: ``1m0s``, ``30s``, ``1h0m0s``, ``1.5s``."""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{secs:g}s"
    if hours or minutes:
        text = f"{int(minutes)}m" + text
    if hours:
        text = f"{int(hours)}h" + text
    return text


def config(process: ContainerProcess, interval: float) -> dict:
    """``spec.NewConfig`` from GFD's flags, as ``start`` logs it."""
    return {
        "version": "v1",
        "flags": {
            "migStrategy": env_flag(process, "none", "GFD_MIG_STRATEGY", "MIG_STRATEGY"),
            "failOnInitError": env_flag(process, True, "GFD_FAIL_ON_INIT_ERROR", "FAIL_ON_INIT_ERROR"),
            "gdrcopyEnabled": None,
            "gdsEnabled": None,
            "mofedEnabled": None,
            "useNodeFeatureAPI": env_flag(process, False, "GFD_USE_NODE_FEATURE_API", "USE_NODE_FEATURE_API"),
            "deviceDiscoveryStrategy": env_flag(process, "auto", "DEVICE_DISCOVERY_STRATEGY"),
            "plugin": {
                "passDeviceSpecs": None,
                "deviceListStrategy": None,
                "deviceIDStrategy": None,
                "cdiAnnotationPrefix": None,
                "nvidiaCTKPath": None,
                "containerDriverRoot": env_flag(process, "/driver-root", "DRIVER_ROOT_CTR_PATH", "CONTAINER_DRIVER_ROOT"),
            },
            "gfd": {
                "oneshot": env_flag(process, False, "GFD_ONESHOT"),
                "noTimestamp": env_flag(process, False, "GFD_NO_TIMESTAMP"),
                "sleepInterval": go_duration(interval),
                "outputFile": env_flag(process, OUTPUT_FILE, "GFD_OUTPUT_FILE"),
                "machineTypeFile": env_flag(process, MACHINE_TYPE_FILE, "GFD_MACHINE_TYPE_FILE"),
            },
        },
        "resources": {"gpus": None},
        "sharing": {"timeSlicing": {}},
        "imex": {},
    }


def main(process: ContainerProcess) -> Generator[tuple[str, object], None, int]:
    interval = parse_duration(process.getenv("GFD_SLEEP_INTERVAL") or "")
    if interval is None:     # unset (or a value urfave/cli would refuse, not modelled): the flag's default
        interval = 60.0
    at = klog_time(process.now())
    settings = config(process, interval)
    yield klog("I", at, 1, "main.go:162", "Starting OS watcher.")
    yield klog("I", at, 1, "main.go:167", "Loading configuration.")
    yield klog("I", at, 1, "main.go:179", "\nRunning with config:\n" + json.dumps(settings, indent=2))
    yield klog("I", at, 1, "main.go:213", "Start running")
    flags = settings["flags"]
    created = False
    while True:
        at = klog_time(process.now())
        yield klog("I", at, 1, "main.go:277", "Creating Labels")
        if flags["useNodeFeatureAPI"]:
            name = f"{NODE_FEATURE_PREFIX}-{process.getenv('NODE_NAME') or ''}"
            yield klog("I", at, 1, "output.go:123", f"creating NodeFeature object {name}") if not created else \
                klog("I", at, 1, "output.go:151", "no changes in NodeFeature object, not updating")
            created = True
        else:
            yield klog("I", at, 1, "output.go:82", f"Writing labels to output file {flags['gfd']['outputFile']}")
        if flags["gfd"]["oneshot"]:
            yield klog("I", at, 1, "main.go:159", "Exiting")
            return 0
        yield klog("I", at, 1, "main.go:286", f"Sleeping for {go_duration(interval)}")
        yield ("sleep", interval if interval > 0 else 1.0)
