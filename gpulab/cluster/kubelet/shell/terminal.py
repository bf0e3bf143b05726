"""A process's live standard input, and the terminal's interrupt.

A container's program normally reads a fixed text (a pipe's output, a file) or nothing (``/dev/null``).
An exec or attach session gives it a live stdin instead: text arrives while the program runs, and a
reader that finds nothing yet yields ``("read", None)`` so its driver (the exec session, or the
container's process driver) resumes it once more input or the end of input has come. Programs ask the
shell for input through :meth:`Shell.read_stdin` / :meth:`Shell.read_stdin_line`, which accept either kind.

``Interrupted`` is thrown into a running program when the terminal's user presses Ctrl-C (SIGINT to the
foreground process group): a program ends with 130 (128 + SIGINT), an interactive shell abandons the
current command and prompts again.
"""
from __future__ import annotations

from typing import Generator

EXIT_INTERRUPTED = 130


class Interrupted(Exception):
    """SIGINT from the terminal."""


class InputStream:
    """Text arriving on a program's stdin; ``terminal`` when it comes from a TTY (the shell is then interactive)."""

    def __init__(self, terminal: bool = False):
        self.terminal = terminal
        self._buffer = ""
        self.eof = False

    def feed(self, text: str) -> None:
        if not self.eof:
            self._buffer += text

    def close(self) -> None:
        self.eof = True

    @property
    def ready(self) -> bool:
        """True when a reader would make progress: input is buffered or the input has ended."""
        return bool(self._buffer) or self.eof

    def readline(self) -> Generator[tuple, None, str | None]:
        """The next line with its newline (the last one may lack it); None at the end of input."""
        while True:
            end = self._buffer.find("\n")
            if end >= 0:
                line, self._buffer = self._buffer[:end + 1], self._buffer[end + 1:]
                return line
            if self.eof:
                rest, self._buffer = self._buffer, ""
                return rest or None
            yield ("read", None)

    def read_all(self) -> Generator[tuple, None, str]:
        """Everything up to the end of input."""
        while not self.eof:
            yield ("read", None)
        rest, self._buffer = self._buffer, ""
        return rest
