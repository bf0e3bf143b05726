"""Real programs in the place of the pods that run them, on the upstream engine's KWOK nodes.

KWOK runs no containers: a pod it starts is Running with nothing inside. Most of the course needs nothing inside
(the GPU stack emulation drives the API itself), but module 05's second scheduler is a program whose work is the
lesson: once the learner installs the scheduler-plugins chart, its ``scheduler-plugins-scheduler`` and
``scheduler-plugins-controller`` pods must schedule gangs and keep PodGroups' status. So this supervisor, started
beside the cluster (``python -m gpulab.upstream.standins --kubeconfig K``), runs the upstream program built from
source (:mod:`.build`) for every Running pod whose image is one it knows (:data:`PROGRAMS`), while that pod runs:
with the pod's arguments, the files of its ConfigMap volumes written to a folder of its own, the cluster's admin
kubeconfig in place of the pod's ServiceAccount (outside a pod there is no in-cluster configuration), and its
serving ports off (two clusters' stand-ins must not compete for 10259). Deleting the pod (``helm uninstall``, a
rollout) stops the program, as the kubelet would kill the container.
"""
from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from . import build

LOG = logging.getLogger("gpulab.upstream.standins")
POLL_SECONDS = 1.0


@dataclass(frozen=True)
class StandIn:
    program: str                  # the built binary (build.PROGRAMS)
    extra_args: tuple[str, ...]   # serving off, for a program outside its pod
    config_flag: str = ""         # a flag naming a KubeSchedulerConfiguration whose clientConnection gets K


PROGRAMS = {
    "registry.k8s.io/scheduler-plugins/kube-scheduler": StandIn(
        "scheduler-plugins-scheduler", ("--secure-port=0",), config_flag="--config"),
    "registry.k8s.io/scheduler-plugins/controller": StandIn(
        "scheduler-plugins-controller", ("--metricsAddr=0", "--probeAddr=0")),
}


def image_repository(image: str) -> str:
    """``registry/name`` of ``registry/name:tag`` or ``...@sha256:...``."""
    return re.sub(r"(@sha256:[0-9a-f]+|:[\w.-]+)$", "", image)


class Supervisor:
    """One cluster's stand-ins: a process per (pod uid, container) of a known image that runs there."""

    def __init__(self, kubeconfig: Path):
        from ..kubeclient import Kube

        self.kubeconfig = kubeconfig
        self.kube = Kube.from_kubeconfig(str(kubeconfig), field_manager="gpulab-standins")
        self.running: dict[tuple[str, str], tuple[subprocess.Popen, Path]] = {}
        self.stopping = False

    def wanted(self) -> dict[tuple[str, str], tuple[dict, dict, StandIn]]:
        from ..kubeclient import PODS

        found = {}
        for pod in self.kube.list(PODS, field_selector="status.phase=Running")["items"]:
            if pod["metadata"].get("deletionTimestamp"):
                continue
            for container in pod["spec"]["containers"]:
                stand_in = PROGRAMS.get(image_repository(container.get("image", "")))
                if stand_in:
                    found[(pod["metadata"]["uid"], container["name"])] = (pod, container, stand_in)
        return found

    def _files(self, pod: dict, container: dict, folder: Path) -> dict[str, str]:
        """Write the container's ConfigMap volumes under ``folder``; mount path -> local path."""
        from ..kubeclient import CONFIGMAPS

        volumes = {v["name"]: v for v in pod["spec"].get("volumes") or []}
        mapped = {}
        for mount in container.get("volumeMounts") or []:
            source = (volumes.get(mount["name"]) or {}).get("configMap")
            if not source:
                continue
            config_map = self.kube.try_get(CONFIGMAPS, source["name"], pod["metadata"]["namespace"]) or {}
            local = folder / mount["name"]
            local.mkdir(parents=True, exist_ok=True)
            for key, value in (config_map.get("data") or {}).items():
                (local / key).write_text(value)
            mapped[mount["mountPath"].rstrip("/")] = str(local)
        return mapped

    def _arguments(self, container: dict, stand_in: StandIn, mapped: dict[str, str]) -> list[str]:
        args = [*(container.get("command") or [])[1:], *(container.get("args") or [])]
        for mount, local in mapped.items():
            args = [arg.replace(mount + "/", local + "/") for arg in args]
        if stand_in.config_flag:
            for arg in args:
                if arg.startswith(stand_in.config_flag + "="):
                    path = Path(arg.split("=", 1)[1])
                    config = yaml.safe_load(path.read_text()) or {}
                    config.setdefault("clientConnection", {})["kubeconfig"] = str(self.kubeconfig)
                    path.write_text(yaml.safe_dump(config))
        return [*args, *stand_in.extra_args]

    def start(self, key: tuple[str, str], pod: dict, container: dict, stand_in: StandIn) -> None:
        folder = Path(tempfile.mkdtemp(prefix=f"gpulab-standin-{stand_in.program}-"))
        args = self._arguments(container, stand_in, self._files(pod, container, folder))
        log = open(folder / "program.log", "ab")
        process = subprocess.Popen([str(build.bin_dir() / stand_in.program), *args], stdout=log, stderr=log,
                                   stdin=subprocess.DEVNULL, env={**os.environ, "KUBECONFIG": str(self.kubeconfig)})
        LOG.info("started %s for pod %s/%s (pid %d, log %s)", stand_in.program, pod["metadata"]["namespace"],
                 pod["metadata"]["name"], process.pid, folder / "program.log")
        self.running[key] = (process, folder)

    def stop(self, key: tuple[str, str]) -> None:
        process, folder = self.running.pop(key)
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(folder, ignore_errors=True)

    def reconcile(self) -> None:
        wanted = self.wanted()
        for key in [k for k in self.running if k not in wanted or self.running[k][0].poll() is not None]:
            self.stop(key)
        for key, (pod, container, stand_in) in wanted.items():
            if key not in self.running:
                self.start(key, pod, container, stand_in)

    def run(self) -> None:
        unreachable_since = None
        while not self.stopping:
            try:
                self.reconcile()
                unreachable_since = None
            except Exception as exc:  # noqa: BLE001 - a cluster going away must not leave programs behind
                unreachable_since = unreachable_since or time.monotonic()
                LOG.warning("cannot reach the cluster: %s", exc)
                if time.monotonic() - unreachable_since > 60:
                    break
            time.sleep(POLL_SECONDS)
        for key in list(self.running):
            self.stop(key)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpulab.upstream.standins", description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True, type=Path)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    supervisor = Supervisor(args.kubeconfig)

    def stop(*_: object) -> None:
        supervisor.stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    supervisor.run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
