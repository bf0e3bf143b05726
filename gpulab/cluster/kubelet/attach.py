"""``kubectl attach`` (and ``kubectl run -it``, ``kubectl debug -it``): a session joined to a container's PID 1.

What the program writes from now on reaches the session (the container's log keeps it too; the log
does not tell stdout from stderr apart, so neither does an attached session: everything arrives on
stdout). A container created with ``stdin: true`` takes the session's input: on a TTY (``tty: true``)
through the container's terminal, which echoes and turns Ctrl-C into SIGINT, else as is. The session
ends when the program exits, or when the client leaves; a ``stdinOnce`` container's stdin then closes,
as containerd closes it after the first attach.
"""
from __future__ import annotations

import asyncio
from typing import Callable

from .process import Process
from .shell.octets import to_bytes, to_text
from .tty import onlcr

_POLL = 0.1


class AttachSession:
    def __init__(self, process: Process, *, stdin: bool, tty: bool, stdin_once: bool, poke: Callable[[], None]):
        self.process = process
        self.tty = tty and process.terminal is not None
        self.takes_stdin = stdin and process.stdin is not None
        self._stdin_once = stdin_once
        self._poke = poke
        self.output: asyncio.Queue[tuple[int, bytes] | None] = asyncio.Queue()
        process.listeners.append(self._on_output)

    def _on_output(self, text: str) -> None:
        if text:
            self.output.put_nowait((1, to_bytes(onlcr(text) if self.tty else text)))

    def write_stdin(self, data: bytes) -> None:
        if not self.takes_stdin:
            return
        text = to_text(data)
        if self.process.terminal is not None:
            self.process.terminal.input(text)
        else:
            self.process.stdin.feed(text)
        self._poke()

    def close_stdin(self) -> None:
        """The client's input ended (v5 CLOSE, SPDY FIN): nothing to do, the container keeps its stdin open."""

    def interrupt(self) -> None:
        if self.process.terminal is not None:
            self.process.interrupt()
            self._poke()

    async def run(self) -> int:
        """Wait for the program to exit (the session ends with it); the output queue ends with None."""
        try:
            while self.process.running:     # the node agent advances the program; its exit shows within a poll
                await asyncio.sleep(_POLL)
            return self.process.exit_code or 0
        finally:
            self.detach()
            self.output.put_nowait(None)

    def detach(self) -> None:
        if self._on_output in self.process.listeners:
            self.process.listeners.remove(self._on_output)
            if self._stdin_once and self.process.stdin is not None:
                self.process.stdin.close()
                self._poke()
