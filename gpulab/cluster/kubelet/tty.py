"""The terminal of a ``-t`` exec or attach session: a Linux pty's line discipline with its default modes.

``kubectl exec -it`` puts the user's own terminal in raw mode and sends keystrokes as they are typed; the
pty the runtime allocates for the container does the rest, and so does this class: canonical input
(a line reaches the program on Enter, Backspace and Ctrl-U edit it, ICRNL turns Enter's ``\\r`` into
``\\n``), echo of what is typed (ECHO, with ECHOCTL's ``^C``), Ctrl-C as SIGINT (ISIG), Ctrl-D as the end
of input on an empty line (VEOF), and ``\\n`` written by the program shown as ``\\r\\n`` (ONLCR).
Escape sequences (arrow keys) are dropped: the emulated shells keep no history. Hand-written because a
line discipline lives in the kernel; no library offers one detached from a real pty.
"""
from __future__ import annotations

from typing import Callable

from .shell.terminal import InputStream

_INTR, _EOF, _KILL, _ERASE, _BACKSPACE, _ESC = "\x03", "\x04", "\x15", "\x7f", "\x08", "\x1b"


def onlcr(text: str) -> str:
    """What the pty shows of a program's output."""
    return text.replace("\n", "\r\n")


def _escape_done(seq: str) -> bool:
    """ESC [ ... final or ESC O final (CSI and SS3: cursor and function keys) or ESC and one character."""
    if len(seq) < 2:
        return False
    if seq[1] not in "[O":
        return True
    return len(seq) > 2 and "@" <= seq[-1] <= "~"


class LineDiscipline:
    def __init__(self, stdin: InputStream, echo: Callable[[str], None], interrupt: Callable[[], None]):
        self.stdin = stdin
        self._echo = echo
        self._interrupt = interrupt
        self._line = ""
        self._escape = ""        # a partly received escape sequence
        self._after_cr = False

    def input(self, text: str) -> None:
        for ch in text:
            if self._escape or ch == _ESC:
                self._escape += ch
                if _escape_done(self._escape):
                    self._escape = ""
                continue
            if ch == "\n" and self._after_cr:
                self._after_cr = False
                continue
            self._after_cr = ch == "\r"
            if ch in "\r\n":
                self._echo("\r\n")
                self.stdin.feed(self._line + "\n")
                self._line = ""
            elif ch == _INTR:
                self._echo("^C")
                self._line = ""
                self._interrupt()
            elif ch == _EOF:
                if self._line:
                    self.stdin.feed(self._line)
                    self._line = ""
                else:
                    self.stdin.close()
            elif ch in (_ERASE, _BACKSPACE):
                if self._line:
                    self._line = self._line[:-1]
                    self._echo("\b \b")
            elif ch == _KILL:
                self._echo("\b \b" * len(self._line))
                self._line = ""
            elif ch < " " and ch != "\t":
                self._echo("^" + chr(ord(ch) + 64))
                self._line += ch
            else:
                self._echo(ch)
                self._line += ch
