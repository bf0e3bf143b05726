"""The GPU stack inside an embedded cluster's server process.

``gpulab.embedded`` passes :func:`start` to the server as an add-on. Once the
``ClusterPolicy`` CRD is served (``gpulab install gpu-operator`` creates it),
the reconciler starts in a daemon thread and talks to the cluster through the
cluster's own kubeconfig (``STATE_DIR/kubeconfig``), exactly as
``gpulab gpustack run --kubeconfig K`` does against kind: the cluster code
never learns about GPUs. ``gpulab cluster up --no-gpu-stack`` records
``"gpuStack": false`` in ``cluster.json`` to leave the stack to such an
external process.
"""
from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

log = logging.getLogger("gpulab.gpustack.addon")

CRD_KEY = "clusterpolicies.nvidia.com"
ENABLED_KEY = "gpuStack"


def enabled(state_dir: Path) -> bool:
    try:
        return bool(json.loads((state_dir / "cluster.json").read_text()).get(ENABLED_KEY, True))
    except (OSError, ValueError):
        return True


def set_enabled(state_dir: Path, value: bool) -> None:
    meta_file = state_dir / "cluster.json"
    meta = json.loads(meta_file.read_text())
    meta[ENABLED_KEY] = value
    meta_file.write_text(json.dumps(meta, indent=1))


def _serve(kubeconfig: Path) -> None:
    from ..kubeclient import Kube
    from .operator import FIELD_MANAGER
    from . import observe
    from .reconciler import GpuStack

    try:
        stack = GpuStack(Kube.from_kubeconfig(str(kubeconfig), field_manager=FIELD_MANAGER), identity="embedded")
        observe.attach(stack)
        stack.run()
    except Exception:  # noqa: BLE001 - the cluster keeps serving even if the stack dies
        log.exception("the GPU stack stopped")


def start(runtime) -> None:
    """Add-on entry point: run the reconciler once the ClusterPolicy CRD is served, unless the cluster says not
    to then (``gpulab cluster up --no-gpu-stack`` records that right after a new cluster starts)."""
    state_dir = runtime.config.state_dir

    def launch() -> None:
        if not enabled(state_dir):
            log.info("GPU stack disabled for this cluster (cluster.json %s: false)", ENABLED_KEY)
            return
        threading.Thread(target=_serve, args=(state_dir / "kubeconfig",), name="gpustack", daemon=True).start()

    runtime.when_resource_served(CRD_KEY, launch)
