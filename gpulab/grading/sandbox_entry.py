"""The first thing that runs inside a submission's sandbox: bound it, fill its writable space, open the cluster's
address there, then become the kernel.

``python -m gpulab.grading.sandbox_entry --listen PORT --bridge-fd FD --limits JSON --seed SEED --workdir DIR
-- KERNEL ARGV...``

It sets the submission's limits (:mod:`.limits`) on itself, so on the kernel
and everything it starts, and copies the grader's seed into the sandbox's
writable tmpfs (an empty one each time the kernel starts): the kubeconfig into
the home, the notebook's folder into ``DIR``, its working directory.

The sandbox has a network namespace of its own with nothing but loopback, so
the learner's kubeconfig (``https://127.0.0.1:PORT``) would reach nothing.
This binds that address inside the sandbox before any learner code runs,
hands the listening socket out over ``FD`` (a socket pair the grader passed
in) to the grader's relay (:mod:`.bridge`), which connects what it accepts to
the cluster outside, and closes both: the kernel keeps no way out. Then it
runs the kernel command: ``python -m MODULE ...`` in this same interpreter (as
``python -m`` would: one interpreter start per kernel, not two), anything
else by ``exec``.
"""
from __future__ import annotations

import os
import runpy
import shutil
import socket
import sys
from pathlib import Path

from .limits import Limits
from .sandbox import HOME, RUNTIME


def open_cluster_address(port: int, bridge_fd: int) -> None:
    """Listen on 127.0.0.1:``port`` in this network namespace and send the listening socket over ``bridge_fd``."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    with socket.socket(fileno=bridge_fd) as bridge, listener:
        socket.send_fds(bridge, [b"listener"], [listener.fileno()])


def fill(seed: Path, workdir: Path) -> None:
    """The home (kubeconfig), the socket folder and the working directory, from the seed."""
    shutil.copytree(seed / "home", HOME, symlinks=True)
    HOME.chmod(0o700)
    RUNTIME.mkdir(mode=0o700, parents=True)
    shutil.copytree(seed / "work", workdir, symlinks=True)
    os.chdir(workdir)


def run_kernel(argv: list[str]) -> None:
    if len(argv) >= 3 and argv[1] == "-m" and os.path.realpath(argv[0]) == os.path.realpath(sys.executable):
        sys.argv = [argv[2], *argv[3:]]
        runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
        return
    os.execvp(argv[0], argv)


def main(argv: list[str]) -> int:
    split = argv.index("--")
    options = dict(zip(argv[:split:2], argv[1:split:2]))
    Limits.from_json(options["--limits"]).apply()
    fill(Path(options["--seed"]), Path(options["--workdir"]))
    open_cluster_address(int(options["--listen"]), int(options["--bridge-fd"]))
    run_kernel(argv[split + 1:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
