"""One run of a container's command: the interpreted program, its clock and its log.

The program (a generator from shell/interpreter.py) is advanced lazily: :meth:`Process.advance`
runs it up to the current time and reports when it next needs waking, so a sleeping container costs
one timer and no task. Time inside the process is virtual and exact (``sleep 1`` puts the next log
line exactly one second later); a process started in the past (the node agent restarted) is simply
advanced through that past, rebuilding its log.

A container created with ``stdin: true`` has a live stdin (shell/terminal.py) that attach sessions feed; a
program waiting on it costs no timer either, and :meth:`Process.input_arrived` wakes it. Output goes to the
log and to every attached session (``listeners``); with ``tty: true`` the container's terminal
(tty.py) echoes what attached users type, and its Ctrl-C interrupts the program.

Stopping follows the runtime's two steps: the stop signal is delivered to PID 1, which exits if its
program handles it (``onStop`` in data/images.yaml) and otherwise ignores it, as any PID 1 without a
handler does; the kill at the end of the grace period always ends it with 137 (SIGKILL).

A program that computes without sleeping runs a slice at a time (shell/limits.py): :meth:`Process.advance`
returns with :attr:`Process.computing` set, and the node agent runs it again on a later turn of its CPU
(cpu.py). A program that outgrows its container's memory ends with 137 and :attr:`Process.oom_killed`, as
the kernel's OOM killer ends it. The log keeps the last LOG_BYTES_KEPT bytes, as the kubelet's log rotation
keeps the current file that ``kubectl logs`` reads.
"""
from __future__ import annotations

import logging
import math
from collections import deque

from typing import Callable

from .shell import Shell, World
from .shell.interpreter import ExitShell
from .shell.limits import OutOfMemory, Spin
from .shell.terminal import EXIT_INTERRUPTED, InputStream, Interrupted
from .tty import LineDiscipline

log = logging.getLogger("gpulab.kubelet")
LOG_BYTES_KEPT = 10 * 1024 * 1024   # per container instance, older lines dropped (containerLogMaxSize: 10Mi)
EXIT_KILLED = 137


class Process:
    def __init__(self, world: World, argv: list[str], started: float, *, stdin: bool = False, tty: bool = False):
        self.world = world
        self.started = started
        self.wake: float | None = started        # virtual time of the next step; None: waits forever
        self.exit_code: int | None = None
        self.finished: float | None = None
        self.log: deque[tuple[int, str]] = deque()   # (time in ns, line), at most LOG_BYTES_KEPT of text
        self._log_bytes = 0
        self.computing = False     # the last advance ended with its slice used up, not with a wait
        self.oom_killed = False
        self.listeners: list[Callable[[str], None]] = []   # attached sessions: called with each output chunk
        self.stdin = InputStream(terminal=tty) if stdin else None
        self.terminal = LineDiscipline(self.stdin, self._write, self.interrupt) if stdin and tty else None
        self._reading = False
        self._pending: BaseException | None = None
        self._partial = ""
        world.time = started
        self._program = Shell(world, flavour=world.image.shell or "dash", is_pid1=True,
                              stdin=self.stdin).exec_program(argv)

    @property
    def running(self) -> bool:
        return self.exit_code is None

    def advance(self, now: float) -> None:
        """Run the program through every step due at or before ``now``, or until its slice of CPU is used up."""
        self.computing = False
        self.world.budget.start_slice()
        while self.exit_code is None and self.wake is not None and self.wake <= now:
            self.world.time = self.wake
            try:
                if self._pending is not None:
                    pending, self._pending = self._pending, None
                    kind, value = self._program.throw(pending)
                else:
                    kind, value = next(self._program)
            except StopIteration as stop:
                self._finish(stop.value or 0)
                return
            except (ExitShell, Spin) as exc:   # raised past the outermost shell: treat like its exit
                self._finish(getattr(exc, "status", 0))
                return
            except Interrupted:
                self._finish(EXIT_INTERRUPTED)
                return
            except OutOfMemory:
                self.oom_killed = True
                self._finish(EXIT_KILLED)
                return
            except Exception:  # noqa: BLE001 - an interpreter bug ends this program, not the node agent
                log.exception("kubelet: the interpreter failed on %r", self.world.image.repository)
                self._finish(1)
                return
            if kind == "out":
                self._write(value)
            elif kind == "busy":
                self.wake = max(self.wake, now)   # computing takes real time
                self.computing = True
                return
            elif kind == "sleep":
                self.world.budget.slept()
                self.wake = None if value == math.inf else self.wake + value
            elif kind == "read":
                self.world.budget.slept()
                self._reading = not self.stdin.ready
                if self._reading:
                    self.wake = None

    def poke(self, now: float) -> bool:
        """After an attached session's input: True when the program must run now (it was waiting on its stdin
        and input or its end arrived, or Ctrl-C interrupted it)."""
        if self.exit_code is not None:
            return False
        if self._pending is not None or (self._reading and self.stdin.ready):
            self._reading = False
            self.wake = now
            return True
        return False

    def interrupt(self) -> None:
        """Ctrl-C on the container's terminal: SIGINT, delivered when the program next runs (see :meth:`poke`)."""
        if self.exit_code is None:
            self._pending = Interrupted()
    def stop(self, now: float) -> bool:
        """Deliver the stop signal; True when the program exits because of it."""
        if self.exit_code is not None:
            return True
        self.advance(now)
        handler = self.world.pid1_stop
        if self.exit_code is not None or handler is None:
            return self.exit_code is not None
        self._program.close()
        self.world.time = now
        status = handler.exit
        if handler.script:
            quick = Shell(self.world, flavour=self.world.image.shell or "dash").run_source(handler.script)
            try:
                while True:
                    kind, value = next(quick)
                    if kind == "out":
                        self._write(value)
            except (StopIteration, OutOfMemory, Spin):
                pass
        self._finish(status)
        return True

    def kill(self, now: float, *, oom: bool = False) -> None:
        """SIGKILL: the process ends now with 137 (``oom``: sent by the OOM killer)."""
        if self.exit_code is None:
            self.advance(now)
        if self.exit_code is None:
            self._program.close()
            self.world.time = now
            self.oom_killed = oom
            self._finish(EXIT_KILLED)

    def emit(self, text: str) -> None:
        """Output of the running program that the program itself did not yield (a server's access log)."""
        self._write(text)

    def _write(self, text: str) -> None:
        for listener in list(self.listeners):
            listener(text)
        text = self._partial + text
        *lines, partial = text.split("\n")
        self._partial = partial[-LOG_BYTES_KEPT:]
        stamp = int(self.world.time * 1e9)
        for line in lines:
            self._log_line(stamp, line)

    def _log_line(self, stamp: int, line: str) -> None:
        self.log.append((stamp, line))
        self._log_bytes += len(line) + 1
        while self._log_bytes > LOG_BYTES_KEPT and len(self.log) > 1:
            self._log_bytes -= len(self.log.popleft()[1]) + 1

    def _finish(self, code: int) -> None:
        if self._partial:
            self._log_line(int(self.world.time * 1e9), self._partial)
            self._partial = ""
        self.exit_code = code
        self.finished = self.world.time
        self.wake = None
