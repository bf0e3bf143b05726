"""``kubectl exec``: a program started in a running container, as the runtime's exec does (runc exec).

The program runs in the container's world (shell/world.py): its files, the environment the kubelet
computed for the container (plus ``TERM=xterm`` with a TTY, as containerd adds), the programs the image
has and those the device allocation mounted. Unlike the container's own process, which runs on the
node agent's virtual clock, an exec'd program runs in real time while its client is connected: ``sleep
2`` takes two seconds, a read waits for the client's input. Its standard streams are the session's: what
it writes goes to :attr:`ExecSession.output` as ``(fd, bytes)`` (fd 1 only with a TTY, whose terminal
also echoes input and turns Ctrl-C into SIGINT, see tty.py), and ``None`` ends the output.

A program the image does not have fails to start with runc's words (:func:`start_failure`), reported to
the client as an error rather than an exit code, as containerd does.

The program computes a slice at a time on the node agents' CPU (cpu.py), so a busy loop in an exec session
leaves the API answering. An exec'd program shares its container's memory limit; past it the OOM killer
ends the whole container (the kubelet puts each container's processes in one OOM group, memory.oom.group
on cgroup v2), so the session ends with 137 and the container is reported OOMKilled (``oom_killed``).
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
from typing import Callable

from .cpu import Cpu
from .shell import Shell, World
from .shell.limits import Budget, OutOfMemory, Spin
from .shell.octets import to_bytes, to_text
from .shell.interpreter import ExitShell
from .shell.terminal import EXIT_INTERRUPTED, InputStream, Interrupted
from .shell.utilities import UTILITIES
from .tty import LineDiscipline, onlcr

log = logging.getLogger("gpulab.kubelet")
_CHECK_ALIVE = 1.0   # seconds between checks that the container still runs, while the program waits
EXIT_KILLED = 137


def start_failure(world: World, argv: list[str]) -> str | None:
    """runc's reason a program cannot be executed in ``world`` (``exec: "x": executable file not found in
    $PATH``), or None when it can."""
    prog = world.find_program(argv, UTILITIES)
    name = argv[0]
    if prog is None:
        if "/" in name:
            return f'exec: "{name}": stat {name}: no such file or directory'
        return f'exec: "{name}": executable file not found in $PATH'
    if prog.kind == "script" and not world.files.executable(world.files.normalize(name, world.workdir)):
        return f'exec: "{name}": permission denied'
    return None


class _Sink:
    """A standard stream of the program: text goes to the session's output queue."""

    def __init__(self, session: "ExecSession", fd: int):
        self.session, self.fd = session, fd

    def write(self, text: str) -> None:
        self.session.emit(self.fd, text)


class ExecSession:
    def __init__(self, world: World, argv: list[str], *, stdin: bool, tty: bool, clock: Callable[[], float],
                 alive: Callable[[], bool], cpu: Cpu, oom_killed: Callable[[], None]):
        env = list(world.env)
        if tty and not any(name == "TERM" for name, _ in env):
            env.append(("TERM", "xterm"))
        self.world = dataclasses.replace(world, env=env, time=clock(), pid1_stop=None, listening={},
                                         budget=Budget(memory=world.budget.memory))
        self.tty = tty
        self.clock = clock
        self.alive = alive
        self.cpu = cpu
        self.oom_killed = oom_killed
        self.output: asyncio.Queue[tuple[int, bytes] | None] = asyncio.Queue()
        self.stdin = InputStream(terminal=tty) if stdin else None
        self.terminal = LineDiscipline(self.stdin, lambda text: self.emit(1, text), self.interrupt) \
            if tty and stdin else None
        self._interrupted = False
        self._wakeup = asyncio.Event()
        out = _Sink(self, 1)
        shell = Shell(self.world, flavour=world.image.shell or "dash", fds={1: out, 2: out if tty else _Sink(self, 2)},
                      stdin=self.stdin)
        self._program = shell.exec_program(argv)

    # --- the client's side -------------------------------------------------------
    def write_stdin(self, data: bytes) -> None:
        if self.stdin is None:
            return
        text = to_text(data)
        if self.terminal is not None:
            self.terminal.input(text)
        else:
            self.stdin.feed(text)
        self._wakeup.set()

    def close_stdin(self) -> None:
        if self.stdin is not None:
            self.stdin.close()
            self._wakeup.set()

    def interrupt(self) -> None:
        self._interrupted = True
        self._wakeup.set()

    def emit(self, fd: int, text: str) -> None:
        if text:
            self.output.put_nowait((fd, to_bytes(onlcr(text) if self.tty else text)))

    # --- running -------------------------------------------------------------------
    async def run(self) -> int:
        """Run the program to its end; its exit code. The output queue ends with None."""
        try:
            return await self._drive()
        finally:
            self.output.put_nowait(None)

    async def _drive(self) -> int:
        throw: BaseException | None = None
        while True:
            kind, value = await self.cpu.slice(lambda: self._compute(throw))
            throw = None
            if kind == "exit":
                return value
            if kind == "busy":
                continue
            self.world.budget.slept()
            if kind == "sleep":
                ended = await self._wait(lambda: False, value)
            else:
                ended = await self._wait(lambda: self.stdin is None or self.stdin.ready, math.inf)
            if ended:
                return EXIT_KILLED
            if self._interrupted:
                self._interrupted = False
                throw = Interrupted()

    def _compute(self, throw: BaseException | None) -> tuple[str, object]:
        """Run the program until it waits (``sleep``, ``read``), uses up its slice (``busy``) or ends (``exit``
        and its code), writing its output meanwhile."""
        self.world.budget.start_slice()
        while True:
            self.world.time = self.clock()
            try:
                kind, value = self._program.throw(throw) if throw is not None else next(self._program)
            except StopIteration as stop:
                return "exit", stop.value or 0
            except ExitShell as exc:
                return "exit", exc.status
            except Interrupted:
                return "exit", EXIT_INTERRUPTED
            except OutOfMemory:
                self.oom_killed()
                return "exit", EXIT_KILLED
            except Spin:
                kind, value, self._program = "sleep", math.inf, _forever()
            except Exception:  # noqa: BLE001 - an interpreter bug ends this program, not the node agent
                log.exception("kubelet: the interpreter failed in an exec session")
                return "exit", 1
            throw = None
            if kind != "out":
                return kind, value
            self.emit(1, value)

    async def _wait(self, ready: Callable[[], bool], seconds: float) -> bool:
        """Wait ``seconds``, or until ``ready()`` or an interrupt; True when the container stopped meanwhile."""
        deadline = self.clock() + seconds
        while not ready() and not self._interrupted:
            left = deadline - self.clock()
            if left <= 0:
                return False
            self._wakeup.clear()
            try:
                await asyncio.wait_for(self._wakeup.wait(), min(left, _CHECK_ALIVE))
            except asyncio.TimeoutError:
                pass
            if not self.alive():
                return True
        return False


def _forever():
    yield ("sleep", math.inf)
    return 0
