"""A fresh cluster of one engine, started and removed as a learner does it (``gpulab cluster up|reset``).

Each engine's cluster lives in a ``GPULAB_HOME`` of its own, so the two never share a port, a kubeconfig or a
kubectl discovery cache. A case runs with a kubeconfig whose context names the case's namespace, so its commands
read as a learner types them.
"""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

ENGINES = ("embedded", "upstream")
BIN = Path(sys.executable).parent


@dataclass
class Target:
    """One engine's cluster: where its state lives and how a command reaches it."""
    engine: str
    home: Path

    @property
    def kubeconfig(self) -> Path:
        return self.home / "clusters" / "gpulab" / "kubeconfig"

    def env(self, kubeconfig: Path | None = None) -> dict:
        return {**os.environ, "GPULAB_HOME": str(self.home), "KUBECONFIG": str(kubeconfig or self.kubeconfig),
                "KUBECACHEDIR": str(self.home / "kubecache"), "GPULAB_ENGINE": self.engine,
                "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}

    def namespaced_kubeconfig(self, namespace: str) -> Path:
        """The cluster's kubeconfig with ``namespace`` as its context's namespace (rewritten each time: a lab reset
        may move the server to another port)."""
        config = yaml.safe_load(self.kubeconfig.read_text())
        for context in config.get("contexts") or []:
            context["context"]["namespace"] = namespace
        path = self.home / "kubeconfigs" / f"{namespace}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(config))
        path.chmod(0o600)
        return path

    def gpulab(self, *args: str, timeout: float = 300, kubeconfig: Path | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([str(BIN / "gpulab"), *args], capture_output=True, text=True, timeout=timeout,
                              env=self.env(kubeconfig), stdin=subprocess.DEVNULL)

    def up(self, gpu_stack: bool = True) -> None:
        options = ["--engine", self.engine] + ([] if gpu_stack else ["--no-gpu-stack"])
        proc = self.gpulab("cluster", "up", *options)
        if proc.returncode:
            raise RuntimeError(f"{self.engine}: gpulab cluster up failed:\n{proc.stdout}{proc.stderr}")

    def down(self) -> None:
        self.gpulab("cluster", "reset")


def targets(root: Path) -> list[Target]:
    return [Target(engine, root / engine) for engine in ENGINES]
