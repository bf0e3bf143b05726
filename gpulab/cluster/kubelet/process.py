"""One run of a container's command: the interpreted program, its clock and its log.

The program (a generator from shell/interpreter.py) is advanced lazily: :meth:`Process.advance`
runs it up to the current time and reports when it next needs waking, so a sleeping container costs
one timer and no task. Time inside the process is virtual and exact (``sleep 1`` puts the next log
line exactly one second later); a process started in the past (the node agent restarted) is simply
advanced through that past, rebuilding its log.

Stopping follows the runtime's two steps: the stop signal is delivered to PID 1, which exits if its
program handles it (``onStop`` in data/images.yaml) and otherwise ignores it, as any PID 1 without a
handler does; the kill at the end of the grace period always ends it with 137 (SIGKILL).
"""
from __future__ import annotations

import logging
import math
from collections import deque

from .shell import Shell, World
from .shell.interpreter import ExitShell, Spin

log = logging.getLogger("gpulab.kubelet")
LOG_LINES_KEPT = 10_000   # per container instance; older lines are dropped (the kubelet rotates at 10Mi)
EXIT_KILLED = 137


class Process:
    def __init__(self, world: World, argv: list[str], started: float):
        self.world = world
        self.started = started
        self.wake: float | None = started        # virtual time of the next step; None: waits forever
        self.exit_code: int | None = None
        self.finished: float | None = None
        self.log: deque[tuple[int, str]] = deque(maxlen=LOG_LINES_KEPT)   # (time in ns, line)
        self._partial = ""
        world.time = started
        self._program = Shell(world, flavour=world.image.shell or "dash", is_pid1=True).exec_program(argv)

    @property
    def running(self) -> bool:
        return self.exit_code is None

    def advance(self, now: float) -> None:
        """Run the program through every step due at or before ``now``."""
        while self.exit_code is None and self.wake is not None and self.wake <= now:
            self.world.time = self.wake
            try:
                kind, value = next(self._program)
            except StopIteration as stop:
                self._finish(stop.value or 0)
                return
            except (ExitShell, Spin) as exc:   # raised past the outermost shell: treat like its exit
                self._finish(getattr(exc, "status", 0))
                return
            except Exception:  # noqa: BLE001 - an interpreter bug ends this program, not the node agent
                log.exception("kubelet: the interpreter failed on %r", self.world.image.repository)
                self._finish(1)
                return
            if kind == "out":
                self._write(value)
            elif kind == "sleep":
                self.world.slept()
                self.wake = None if value == math.inf else self.wake + value

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
            except StopIteration:
                pass
        self._finish(status)
        return True

    def kill(self, now: float) -> None:
        """SIGKILL: the process ends now with 137."""
        if self.exit_code is None:
            self.advance(now)
        if self.exit_code is None:
            self._program.close()
            self.world.time = now
            self._finish(EXIT_KILLED)

    def _write(self, text: str) -> None:
        text = self._partial + text
        *lines, self._partial = text.split("\n")
        stamp = int(self.world.time * 1e9)
        for line in lines:
            self.log.append((stamp, line))

    def _finish(self, code: int) -> None:
        if self._partial:
            self.log.append((int(self.world.time * 1e9), self._partial))
            self._partial = ""
        self.exit_code = code
        self.finished = self.world.time
        self.wake = None
