"""/healthz latency while containers compute: idle, then with eight busy pods, then with eight growing ones.

Emulated programs run on the API server's own event loop, a slice at a time (gpulab/cluster/kubelet/cpu.py).
Each probe opens a new HTTPS connection (TCP and TLS handshakes included, the most loop iterations a request
needs), every 20 ms, for PROBE_SECONDS after the deployment is created; the server's RSS is read at the end.

Run with `python -m bench busy` (part of `make bench`). Writes bench/results/busy.json.
"""
from __future__ import annotations

import http.client
import json
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import yaml

from .apiserver import _gpulab, _percentiles

PROBE_SECONDS = 6.0
KUBECTL = str(Path(sys.executable).parent / "kubectl") if (Path(sys.executable).parent / "kubectl").exists() \
    else shutil.which("kubectl")
PROGRAMS = {"busy": "i=0; while true; do i=$((i+1)); done", "growing": "x=a; while true; do x=$x$x; done"}


def _probe(kubeconfig: Path, ca: Path, seconds: float) -> list[float]:
    server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    host, port = server.removeprefix("https://").split(":")
    ctx = ssl.create_default_context(cafile=str(ca))
    samples, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        conn = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=60)
        start = time.monotonic()
        conn.request("GET", "/healthz")
        assert conn.getresponse().read() == b"ok"
        samples.append(time.monotonic() - start)
        conn.close()
        time.sleep(0.02)
    return samples


def main() -> dict:
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        kubeconfig = Path(_gpulab(home, "cluster", "up").strip().splitlines()[-1])
        state = home / "clusters" / "gpulab"
        pid = int((state / "server.pid").read_text())
        time.sleep(3)  # the components have started
        figures["idle"] = _percentiles(_probe(kubeconfig, state / "pki" / "ca.crt", PROBE_SECONDS))
        for name, script in PROGRAMS.items():
            subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), "create", "deployment", name,
                            "--image=busybox", "--replicas=8", "--", "sh", "-c", script], check=True,
                           capture_output=True)
            figures[f"eight_{name}_pods"] = _percentiles(_probe(kubeconfig, state / "pki" / "ca.crt", PROBE_SECONDS))
            figures[f"eight_{name}_pods"]["server_rss_mb"] = round(psutil.Process(pid).memory_info().rss / 2**20, 1)
            subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), "delete", "deployment", name, "--wait=false"],
                           check=True, capture_output=True)
        _gpulab(home, "cluster", "reset")
    return figures


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
