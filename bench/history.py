"""Memory benchmark of the watch history: 300 updates of a 1 MB ConfigMap, then its deletion.

The server keeps recent changes so that watches can resume (gpulab/cluster/store.py); the history is bounded
by count and by HISTORY_MAX_BYTES of serialized objects. This measures the server's RSS before, after the
updates and after the delete, and the bytes the history reports holding.

Run with `python -m bench history` (part of `make bench`). Writes bench/results/history.json.
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import psutil

from gpulab.cluster.store import HISTORY_MAX_BYTES

from .apiserver import Conn, _gpulab

UPDATES = int(os.environ.get("GPULAB_BENCH_UPDATES") or 300)
SIZE = 1024 * 1024


def _rss_mb(pid: int) -> float:
    return round(psutil.Process(pid).memory_info().rss / 2**20, 1)


def main() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        kubeconfig = Path(_gpulab(home, "cluster", "up").strip().splitlines()[-1])
        pid = int((home / "clusters" / "gpulab" / "server.pid").read_text())
        conn = Conn(kubeconfig, home / "clusters" / "gpulab" / "pki" / "ca.crt")
        base = "/api/v1/namespaces/default/configmaps"
        time.sleep(3)  # the components have started
        before = _rss_mb(pid)

        def body(i: int) -> dict:
            return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"},
                    "data": {"blob": f"{i:06d}" + "x" * (SIZE - 200)}}

        status, _ = conn.request("POST", base, body(0))
        assert status == 201, status
        t = time.perf_counter()
        for i in range(1, UPDATES + 1):
            status, _ = conn.request("PUT", f"{base}/big", body(i))
            assert status == 200, status
        update_s = time.perf_counter() - t
        time.sleep(1)
        after_updates = _rss_mb(pid)
        status, _ = conn.request("DELETE", f"{base}/big")
        assert status == 200, status
        time.sleep(1)
        after_delete = _rss_mb(pid)
        _gpulab(home, "cluster", "reset")
    return {"history_max_bytes_mb": HISTORY_MAX_BYTES / 2**20, "updates": UPDATES, "object_mb": SIZE / 2**20,
            "updates_per_s": round(UPDATES / update_s, 1), "rss_mb": {
                "before": before, "after_updates": after_updates, "after_delete": after_delete},
            "rss_growth_mb": round(after_updates - before, 1), "rss_left_after_delete_mb":
                round(after_delete - before, 1)}


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
