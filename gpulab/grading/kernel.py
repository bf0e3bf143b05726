"""The learner's kernel as nbclient starts it, but inside the submission's sandbox (:mod:`.sandbox`).

nbclient (under nbgrader's ``Execute``) asks its kernel manager to start,
interrupt, restart and kill the kernel exactly as it would any kernel; this
manager only changes how the process is launched and reached:

* the kernel command (the notebook's kernel spec) is wrapped in the sandbox's
  bwrap command line, with a fresh socket pair for :mod:`.sandbox_entry` to hand
  its cluster listener to the :class:`~.bridge.ClusterBridge`;
* ZeroMQ runs over unix sockets (``transport = "ipc"``) in the sandbox's
  runtime folder, with the connection file there: the sandbox has no network
  of the host's, and no other kernel's connection file is in sight;
* interrupts are sent as ``interrupt_request`` messages (ipykernel interrupts
  itself): a signal to the launched process would reach bwrap, not the kernel;
* the kernel is the sandbox's PID 1 (``--as-pid-1``), bwrap's own child, and
  killing it (shutdown, restart) kills that process (bwrap reports its pid on
  ``--info-fd``): everything else in the sandbox dies with it, and bwrap,
  which reaps it, exits by itself, so the kernel's CPU time is counted to the
  grading process as an ordinary kernel's is. (Killing bwrap instead, as the
  provisioner would, ends the sandbox too, through ``--die-with-parent``, but
  leaves the kernel to the host's init.)
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
import socket

from jupyter_client.manager import AsyncKernelManager

from .bridge import ClusterBridge
from .sandbox import Sandbox


class SandboxedKernelManager(AsyncKernelManager):
    def __init__(self, sandbox: Sandbox, bridge: ClusterBridge, **kwargs):
        super().__init__(**kwargs)
        self.sandbox, self.bridge = sandbox, bridge
        self.transport = "ipc"
        self.ip = str(sandbox.dirs.runtime / "zmq")
        self.connection_file = str(sandbox.dirs.runtime / "kernel.json")

    @property
    def kernel_spec(self):
        spec = super().kernel_spec
        if spec is not None:
            spec.interrupt_mode = "message"
        return spec

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw) -> None:
        self.sandbox.give(self.connection_file)
        ours, theirs = socket.socketpair()
        info, info_for_bwrap = os.pipe()
        try:
            command = self.sandbox.command(kernel_cmd, self.bridge.port, theirs.fileno(), info_for_bwrap)
            await super()._async_launch_kernel(command, **kw, pass_fds=(theirs.fileno(), info_for_bwrap))
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

    async def _async_kill_kernel(self, restart: bool = False) -> None:
        kernel, self._sandbox_init = getattr(self, "_sandbox_init", None), None
        if kernel and self.has_kernel:
            try:
                os.kill(kernel, signal.SIGKILL)     # not reaped while bwrap runs: the pid is still the kernel's
                await asyncio.wait_for(self._async_wait(), timeout=5)
            except (ProcessLookupError, asyncio.TimeoutError):
                pass
        await super()._async_kill_kernel(restart=restart)
