"""The learner's kernel as nbclient starts it, but inside the submission's sandbox (:mod:`.sandbox`).

nbclient (under nbgrader's ``Execute``) asks its kernel manager to start,
interrupt, restart and kill the kernel exactly as it would any kernel; this
manager only changes how the process is launched and reached:

* the kernel command (the notebook's kernel spec) is wrapped in the sandbox's
  bwrap command line, with a fresh socket pair for :mod:`.sandbox_entry` to hand
  its cluster listener to the :class:`~.bridge.ClusterBridge`;
* ZeroMQ runs over unix sockets (``transport = "ipc"``): the sandbox has no
  network of the host's. The kernel binds them in its own writable tmpfs
  (:data:`.sandbox.RUNTIME`), which the grader reaches through the kernel's
  root, ``/proc/PID/root``, by a link in the submission's private home that
  each start points at the new kernel (so the client's sockets reconnect to
  a restarted kernel as to any). The connection file lies in the seed, which
  the kernel reads but cannot write, and says where the kernel binds;
* interrupts are sent as ``interrupt_request`` messages (ipykernel interrupts
  itself): a signal to the launched process would reach bwrap, not the kernel;
* the kernel is the sandbox's PID 1 (``--as-pid-1``), bwrap's own child, and
  killing it (shutdown, restart) kills that process (bwrap reports its pid on
  ``--info-fd``): everything else in the sandbox dies with it, and bwrap,
  which reaps it, exits by itself, so the kernel's CPU time is counted to the
  grading process as an ordinary kernel's is. (Killing bwrap instead, as the
  provisioner would, ends the sandbox too, through ``--die-with-parent``, but
  leaves the kernel to the host's init.) bwrap's process group is killed
  after it all the same, and bwrap dies with the grading process
  (``PR_SET_PDEATHSIG``), so no part of a sandbox outlives its grading.
"""
from __future__ import annotations

import asyncio
import ctypes
import json
import os
import signal
import socket

from jupyter_client.manager import AsyncKernelManager

from .bridge import ClusterBridge
from .sandbox import RUNTIME, Sandbox

PR_SET_PDEATHSIG = 1
_prctl = ctypes.CDLL(None, use_errno=True).prctl      # looked up here: after fork, only called


class SandboxedKernelManager(AsyncKernelManager):
    def __init__(self, sandbox: Sandbox, bridge: ClusterBridge, **kwargs):
        super().__init__(**kwargs)
        self.sandbox, self.bridge = sandbox, bridge
        self.transport = "ipc"
        # The grader's way to the sockets. A unix socket's address may not exceed 107 bytes: through a descriptor
        # of the submission's home it stays short however deep the grading folder lies.
        self._home = os.open(sandbox.dirs.home, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        self.ip = f"/proc/self/fd/{self._home}/{sandbox.dirs.sockets.name}/zmq"
        self.connection_file = str(sandbox.dirs.connection_file)

    @property
    def kernel_spec(self):
        spec = super().kernel_spec
        if spec is not None:
            spec.interrupt_mode = "message"
        return spec

    def write_connection_file(self, **kw) -> None:
        """The connection file names the sockets as the kernel binds them, inside its sandbox."""
        ours, self.ip = self.ip, str(RUNTIME / "zmq")
        try:
            super().write_connection_file(**kw)
        finally:
            self.ip = ours

    def _reconcile_connection_info(self, info) -> None:
        """Keep the connection file as written: it names the sockets as the kernel sees them, which
        jupyter_client's check would take for a mismatch with the grader's view and rewrite under the running
        kernel."""

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if not restart and self._home is not None:
            os.close(self._home)
            self._home = None

    def cleanup_ipc_files(self) -> None:
        """Nothing to remove: the sockets went with the sandbox's tmpfs (and the link may already name another
        process's root)."""

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw) -> None:
        self.sandbox.give(self.connection_file)
        ours, theirs = socket.socketpair()
        info, info_for_bwrap = os.pipe()
        try:
            command = self.sandbox.command(kernel_cmd, self.bridge.port, theirs.fileno(), info_for_bwrap)
            await super()._async_launch_kernel(command, **kw, pass_fds=(theirs.fileno(), info_for_bwrap),
                                               preexec_fn=_die_with_grader(os.getpid()))
        except BaseException:
            ours.close()
            os.close(info)
            raise
        finally:
            theirs.close()
            os.close(info_for_bwrap)
        self.bridge.attach(ours)
        with os.fdopen(info, "rb") as reported:          # bwrap writes it once the sandbox exists, then closes
            self._sandbox_init = json.loads(reported.read() or b"{}").get("child-pid")
        if self._sandbox_init is None:
            await super()._async_kill_kernel()
            raise RuntimeError("the sandbox did not start (bwrap reported no kernel process); see the log")
        self.sandbox.reach(self._sandbox_init)

    async def _async_kill_kernel(self, restart: bool = False) -> None:
        kernel, self._sandbox_init = getattr(self, "_sandbox_init", None), None
        if kernel and self.has_kernel:
            try:
                os.kill(kernel, signal.SIGKILL)     # not reaped while bwrap runs: the pid is still the kernel's
                await asyncio.wait_for(self._async_wait(), timeout=5)
            except (ProcessLookupError, asyncio.TimeoutError):
                pass
        await super()._async_kill_kernel(restart=restart)     # bwrap's process group


def _die_with_grader(grader: int):
    """A ``preexec_fn`` that has bwrap killed when the grading process ends (or at once, if it already has)."""
    def preexec() -> None:
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != grader:
            os._exit(1)
    return preexec
