"""Programs that run in the background beside a cluster which has no place for them inside its control plane.

kind and the upstream engine cannot run Python in their control plane, so whoever starts such a cluster starts the
GPU stack emulation (``gpulab gpustack run --kubeconfig K``, :data:`GPUSTACK`) next to it, and the upstream engine
its stand-ins too; each records its pid in the cluster's folder and is stopped with the cluster. A pid counts as
ours only while that process's command line is still the program's (pids get reused).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Background:
    name: str                    # its files: NAME.pid, NAME.log in the cluster's folder
    argv: tuple[str, ...]        # what follows the Python interpreter; --kubeconfig K is added

    def _ours(self, pid: int) -> bool:
        import psutil

        try:
            command = psutil.Process(pid).cmdline()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return False
        return list(self.argv) == command[1:1 + len(self.argv)]

    def log(self, directory: Path) -> Path:
        return directory / f"{self.name}.log"

    def running(self, directory: Path) -> int | None:
        """Its pid for ``directory``'s cluster, if it still runs."""
        try:
            pid = int((directory / f"{self.name}.pid").read_text())
        except (OSError, ValueError):
            return None
        return pid if self._ours(pid) else None

    def start(self, directory: Path, kubeconfig: Path, *extra: str) -> int:
        """Start it for the cluster of ``kubeconfig`` unless ours still runs; its pid."""
        pid = self.running(directory)
        if pid:
            return pid
        with open(self.log(directory), "ab") as stream:
            process = subprocess.Popen([sys.executable, *self.argv, "--kubeconfig", str(kubeconfig), *extra],
                                       stdin=subprocess.DEVNULL, stdout=stream, stderr=stream,
                                       start_new_session=True, close_fds=True)
        (directory / f"{self.name}.pid").write_text(str(process.pid))
        return process.pid

    def stop(self, directory: Path, timeout: float = 10.0) -> bool:
        """Stop it (SIGTERM, then SIGKILL after ``timeout``); whether it was running."""
        import psutil

        pid = self.running(directory)
        (directory / f"{self.name}.pid").unlink(missing_ok=True)
        if pid is None:
            return False
        os.kill(pid, signal.SIGTERM)
        try:
            psutil.Process(pid).wait(timeout)
        except psutil.TimeoutExpired:
            os.kill(pid, signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
        return True


GPUSTACK = Background("gpustack", ("-m", "gpulab.cli", "gpustack", "run"))
