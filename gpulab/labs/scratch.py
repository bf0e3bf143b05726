"""``python -m gpulab.labs.scratch HOME``: remove a validation run's own cluster once its kernel has gone.

``nbgrader validate`` builds a lab's starting state on a new embedded cluster
in a private ``GPULAB_HOME`` (see :func:`gpulab.labs.reset`). The kernel starts
this process, which waits until it is orphaned (its parent, the kernel, has
exited: shut down or killed alike), then stops every cluster under HOME and
deletes HOME. An ``atexit`` hook in the kernel would not run when nbclient
kills a kernel that is slow to shut down.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

POLL_SECONDS = 0.5


def watch(home: Path) -> None:
    """Start the remover of ``home`` for this process (the kernel); it outlives the kernel by design."""
    subprocess.Popen([sys.executable, "-m", __name__, str(home)], start_new_session=True, stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main(argv: list[str]) -> int:
    home = Path(argv[0])
    kernel = os.getppid()
    while os.getppid() == kernel:
        time.sleep(POLL_SECONDS)
    env = {**os.environ, "GPULAB_HOME": str(home)}
    for cluster in (home / "clusters").glob("*"):      # down, not reset: reset also edits ~/.kube/config
        subprocess.run([sys.executable, "-m", "gpulab.cli", "cluster", "down", "--name", cluster.name], env=env,
                       capture_output=True, timeout=120)
    shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
