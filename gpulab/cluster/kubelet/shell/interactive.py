"""A shell reading its commands from a live stdin (``kubectl exec -it POD -- sh``, ``kubectl run -it``).

The shell reads a line, asks for more (the ``PS2`` prompt, ``> ``) while the command is incomplete, runs it
and starts again, until ``exit`` or the end of input. On a terminal (or with ``-i``) it is interactive:
it writes its prompt to stderr first, ``PS1`` as each image's shell sets it for root (BusyBox ash's
``\\w \\$ ``, dash's ``# ``, and Debian's /etc/bash.bashrc ``\\u@\\h:\\w\\$ `` for bash); Ctrl-C abandons the
line being typed or the running command (``$?`` 130) and prompts again, and bash says ``exit`` when
the input ends. Read from a pipe it is not interactive: no prompts, and Ctrl-C ends the shell.
"""
from __future__ import annotations

import math

from .interpreter import ExitShell, Gen, Shell
from .limits import Spin
from .parse import Parser, ShellSyntaxError
from .terminal import EXIT_INTERRUPTED, InputStream, Interrupted

CONTINUATION_PROMPT = "> "
# Syntax errors that only mean the command goes on on the next line.
_INCOMPLETE = ("end of file", "Unterminated", "EOF in", "Missing")


def prompt(sh: Shell) -> str:
    if sh.flavour == "ash":
        return f"{sh.cwd} # "
    if sh.flavour == "bash":
        return f"root@{sh.world.hostname}:{sh.cwd}# "
    return "# "


def run_commands(sh: Shell, stdin: InputStream, interactive: bool) -> Gen:
    line_number = 1
    while True:
        if interactive:
            yield from sh.emit(2, prompt(sh))
        try:
            source, lines = yield from _read_command(sh, stdin, interactive)
        except Interrupted:
            yield from sh.emit(2, "\n")
            sh.status = EXIT_INTERRUPTED
            continue
        if source is None:
            if interactive and sh.flavour == "bash":
                yield from sh.emit(2, "exit\n")
            return sh.status
        try:
            seq = Parser(source, line=line_number).parse_script()
        except ShellSyntaxError as exc:
            sh.line = line_number
            yield from sh.error(str(exc) if sh.flavour != "bash" else str(exc).replace("Syntax error", "syntax error"))
            sh.status = 2
            line_number += lines
            if not interactive:
                return 2
            continue
        line_number += lines
        try:
            sh.status = yield from sh.run_seq(seq)
        except ExitShell as exc:
            return exc.status
        except Spin:
            try:
                yield ("sleep", math.inf)   # busy for ever, until interrupted
            except Interrupted:
                sh.status = EXIT_INTERRUPTED
        except Interrupted:
            if not interactive:
                return EXIT_INTERRUPTED
            sh.status = EXIT_INTERRUPTED
            yield from sh.emit(2, "\n")


def _read_command(sh: Shell, stdin: InputStream, interactive: bool) -> Gen:
    """One complete command (possibly several lines) and how many lines it took; (None, 0) at the end of input."""
    source, lines = "", 0
    while True:
        line = yield from stdin.readline()
        if line is None:
            return (source or None), lines
        source += line if line.endswith("\n") else line + "\n"
        lines += 1
        if not _incomplete(source):
            return source, lines
        if interactive:
            yield from sh.emit(2, CONTINUATION_PROMPT)


def _incomplete(source: str) -> bool:
    try:
        Parser(source).parse_script()
    except ShellSyntaxError as exc:
        return any(marker in str(exc) for marker in _INCOMPLETE)
    return False
