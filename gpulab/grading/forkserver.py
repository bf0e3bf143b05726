"""Start embedded cluster servers by forking a process that has already imported them.

A cluster server spends about 90% of its start importing its modules (1.3 of
1.5 CPU seconds here), and grading starts one per submission. The fork server
imports ``gpulab.embedded`` once; each server is a fork of it that runs
``gpulab.embedded.main`` exactly as ``python -m gpulab.embedded`` would, in its
own session, with its own log, ready pipe and random seed. It is the same
idea as multiprocessing's ``forkserver`` start method, which cannot be used
here because ``gpulab.cluster.lifecycle`` starts servers as a command line and
reads their readiness from a pipe; this module is that command line:

* ``python -m gpulab.grading.forkserver --serve SOCKET`` is the fork server
  (it exits when its parent does);
* ``python -m gpulab.grading.forkserver --dir DIR --ready-fd N`` is what
  ``lifecycle.up(server_module="gpulab.grading.forkserver")`` runs: a small
  client that asks the fork server at ``$GPULAB_FORKSERVER`` for a server and
  relays its readiness line to ``lifecycle``. Without a fork server it becomes
  ``python -m gpulab.embedded`` itself.

Forked servers show the fork server's command line, so they are told apart by
their working directory, which is their state directory.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

SOCKET_ENV = "GPULAB_FORKSERVER"
SERVER_MODULE = "gpulab.embedded"


class ForkServer:
    """The fork server process of one grading process, started on first use."""

    def __init__(self, directory: Path):
        self.address = str(Path(directory) / f"forkserver-{os.getpid()}.sock")
        self.process: subprocess.Popen | None = None

    def ensure(self) -> str:
        if self.process is None or self.process.poll() is not None:
            Path(self.address).unlink(missing_ok=True)
            self.process = subprocess.Popen([sys.executable, "-m", __name__, "--serve", self.address],
                                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
            if self.process.stdout.readline().strip() != "READY":
                raise RuntimeError(f"the cluster fork server did not start (exit status {self.process.wait()})")
        return self.address

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait()
        Path(self.address).unlink(missing_ok=True)


def serve(address: str) -> int:
    """Import the server's modules, then fork one server per request until the parent process is gone."""
    from gpulab import embedded

    embedded.load_server()   # the point: imported once, shared by every fork

    parent = os.getppid()
    signal.signal(signal.SIGCHLD, _reap)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(address)
        listener.listen(16)
        listener.settimeout(1.0)
        print("READY", flush=True)
        while os.getppid() == parent:
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                message, fds, _, _ = socket.recv_fds(conn, 4096, 2)
                if len(fds) != 2:
                    continue
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    conn.close()
                    _become_server(message.decode(), *fds)
                for fd in fds:
                    os.close(fd)
                conn.sendall(str(pid).encode())
    return 0


def _reap(*_) -> None:
    """Wait for exited servers (rather than ignoring SIGCHLD) so their CPU time counts in the parent's rusage."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _become_server(state_dir: str, ready_fd: int, log_fd: int) -> None:
    """In the forked child: what ``python -m gpulab.embedded --dir DIR --ready-fd N`` would be. Never returns."""
    import random

    code = 1
    try:
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(log_fd)
        os.chdir(state_dir)
        random.seed()                                   # not the fork server's sequence
        from gpulab import embedded

        code = embedded.main(["--dir", state_dir, "--ready-fd", str(ready_fd)]) or 0
    except BaseException:  # noqa: BLE001 - report, then leave without running the fork server's code
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def client(state_dir: str, ready_fd: int) -> int:
    """Ask the fork server for a server of ``state_dir`` and relay its readiness line to ``ready_fd``."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(os.environ[SOCKET_ENV])
    except (KeyError, OSError):
        conn.close()
        os.execv(sys.executable, [sys.executable, "-m", SERVER_MODULE, "--dir", state_dir,
                                  "--ready-fd", str(ready_fd)])
    read_end, write_end = os.pipe()
    with conn:
        socket.send_fds(conn, [state_dir.encode()], [write_end, 1])      # its ready pipe, and server.log
        os.close(write_end)
        conn.recv(64)
    with os.fdopen(read_end, "rb") as ready:
        line = ready.readline()                     # READY, ERROR ... or CORRUPT ...; nothing if it died
    if line:
        os.write(ready_fd, line)
    return 0 if line.startswith(b"READY") else 1


def main(argv: list[str]) -> int:
    if argv[:1] == ["--serve"]:
        return serve(argv[1])
    arguments = dict(zip(argv[::2], argv[1::2]))
    return client(arguments["--dir"], int(arguments["--ready-fd"]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
