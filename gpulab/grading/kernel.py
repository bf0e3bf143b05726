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
* killing the launched process (shutdown, restart) ends bwrap, and with it
  every process of the sandbox.
"""
from __future__ import annotations

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
        try:
            command = self.sandbox.command(kernel_cmd, self.bridge.port, theirs.fileno())
            await super()._async_launch_kernel(command, **kw, pass_fds=(theirs.fileno(),))
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self.bridge.attach(ours)
