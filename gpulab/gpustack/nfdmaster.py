"""node-feature-discovery's ``nfd-master`` as it runs in a container on the embedded cluster's nodes.

The master's own work (labelling nodes from their NodeFeature objects) is the GPU stack's reconciler
(:mod:`.reconciler`, :mod:`.nfd`); its container only has to run. With ``-prune``, as the chart's
post-delete hook Job runs it (``templates/post-delete-job.yaml``), it does what ``nfd-master.go`` ``prune``
does (:func:`.nfd.prune_nodes`) through the API client of the GPU stack running in this process, logging
``"pruning node..." nodeName="..."`` for each node as klog's structured lines on stderr, and exits 0, so
the Job completes; when it cannot reach the API it logs the error and exits 1. The node agent steps a
native program on the server's event loop, so the API calls run in a thread while the program sleeps
(a call from the loop to its own server would never be answered).

A native program of the node agent (:data:`gpulab.contract.NativeProgram`), named by the ``nfd-master``
behaviour of ``data/images.yaml``; ``gpulab/embedded.py`` supplies it with that document.
"""
from __future__ import annotations

import threading
from typing import Generator

from ..contract import ContainerProcess
from .configmanager import klog_time

IDLE_SECONDS = 3600
PRUNE_LINE = 421        # nfd-master.go at v0.18.3: klog.InfoS("pruning node...", "nodeName", node.Name)
ERROR_LINE = 97         # cmd/nfd-master/main.go at v0.18.3: klog.ErrorS(err, "error while running")
POLL_SECONDS = 0.05


def _klog(severity: str, process: ContainerProcess, file: str, line: int, message: str) -> tuple[str, str]:
    return ("stderr", f"{severity}{klog_time(process.now())}       1 {file}:{line}] {message}\n")


def main(process: ContainerProcess) -> Generator[tuple[str, object], None, int]:
    if "-prune" not in process.argv[1:]:
        while True:
            yield ("sleep", IDLE_SECONDS)
    from . import nfd, observe

    kube = observe.stack_client()
    pruned: list[str] = []
    failure: list[str] = []

    def prune() -> None:
        try:
            pruned.extend(nfd.prune_nodes(kube))
        except Exception as exc:  # noqa: BLE001 - reported as nfd-master reports it, then exit 1
            failure.append(f"{exc}".splitlines()[0] if f"{exc}" else type(exc).__name__)

    if kube is None:
        failure.append("failed to get nodes: the API server cannot be reached")
    else:
        worker = threading.Thread(target=prune, daemon=True, name="nfd-master-prune")
        worker.start()
        while worker.is_alive():
            yield ("sleep", POLL_SECONDS)
    for name in pruned:
        yield _klog("I", process, "nfd-master.go", PRUNE_LINE, f'"pruning node..." nodeName="{name}"')
    if failure:
        yield _klog("E", process, "main.go", ERROR_LINE, f'"error while running" err="{failure[0]}"')
        return 1
    return 0
