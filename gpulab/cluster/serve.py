"""The server process of an embedded cluster: ``python -m gpulab.cluster.serve --dir STATE_DIR``.

Started in the background by ``gpulab cluster up``. It reports readiness (or
the reason it cannot start) on the file descriptor given by ``--ready-fd``, so
``up`` returns as soon as the API answers, and it stops cleanly on SIGTERM.
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import os
import resource
import signal
import sys
from dataclasses import replace
from pathlib import Path
from typing import Callable

from .jsonio import allow_go_depth
from .pki import ensure_pki
from .runtime import Runtime, RuntimeConfig
from .server import lograte
from .store import CorruptStateError
from .topology import NodeSpec

Addon = Callable[[Runtime], None]


def _report(fd: int | None, message: str) -> None:
    if fd is None:
        return
    try:
        os.write(fd, message.encode() + b"\n")
        os.close(fd)
    except OSError:
        pass


def load_config(state_dir: Path) -> RuntimeConfig:
    meta = json.loads((state_dir / "cluster.json").read_text())
    nodes = [NodeSpec.from_record(n) for n in meta.get("nodes", [])]
    return RuntimeConfig(state_dir=state_dir, cluster_name=meta["name"], port=int(meta["port"]),
                         pki=ensure_pki(state_dir / "pki"), nodes=nodes)


async def _serve(config: RuntimeConfig, ready_fd: int | None, addons: list[Addon]) -> None:
    runtime = Runtime(config)
    runtime.seed()
    # Every stored object lives as long as the process: keep the cyclic collector from rescanning them all
    # (at 10,000 pods a full collection paused the server for seconds).
    gc.freeze()
    gc.set_threshold(20_000, 50, 50)
    try:
        await runtime.start()
    except OSError as exc:
        _report(ready_fd, f"ERROR port {config.port} cannot be used: {exc.strerror or exc}")
        await runtime.stop()
        return
    (config.state_dir / "server.pid").write_text(str(os.getpid()))
    _report(ready_fd, "READY")
    runtime.start_components()
    for addon in addons:
        addon(runtime)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runtime.stop()
    (config.state_dir / "server.pid").unlink(missing_ok=True)


def _raise_descriptor_limit() -> None:
    """The soft limit on open files up to the hard one, as the Go runtime does for kube-apiserver (Go 1.19+)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            pass


def main(argv: list[str] | None = None, addons: list[Addon] | None = None, images: Callable[[], tuple] = tuple) -> int:
    """The server; ``addons`` run once it serves; ``images()`` (kubelet.images.CatalogSource documents, asked for
    when the node agent starts, after the API answers) join the node agent's catalog."""
    parser = argparse.ArgumentParser(prog="gpulab-cluster-server")
    parser.add_argument("--dir", required=True, type=Path)
    parser.add_argument("--ready-fd", type=int)
    args = parser.parse_args(argv)
    os.umask(0o077)  # the state folder holds Secrets in clear: every file the server creates is the owner's alone
    _raise_descriptor_limit()
    allow_go_depth()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    lograte.install()
    try:
        config = replace(load_config(args.dir), images=images)
        asyncio.run(_serve(config, args.ready_fd, addons or []))
    except CorruptStateError as exc:
        _report(args.ready_fd, f"CORRUPT {exc}")
        return 3
    except (OSError, ValueError, KeyError) as exc:
        _report(args.ready_fd, f"CORRUPT cannot read the cluster's state in {args.dir}: {exc}")
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
