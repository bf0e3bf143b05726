"""The line discipline of a -t session (kubelet/tty.py): what is echoed, what reaches the program, Ctrl-C and Ctrl-D."""
from __future__ import annotations

from gpulab.cluster.kubelet.shell.terminal import InputStream
from gpulab.cluster.kubelet.tty import LineDiscipline, onlcr


def terminal():
    stdin, echoed, interrupts = InputStream(terminal=True), [], []
    return stdin, echoed, interrupts, LineDiscipline(stdin, echoed.append, lambda: interrupts.append(1))


def drain(stdin: InputStream) -> list:
    lines, reader = [], stdin.readline()
    while True:
        try:
            next(reader)
            return lines
        except StopIteration as done:
            if done.value is None:
                return lines
            lines.append(done.value)
            reader = stdin.readline()


def test_typed_keys_are_echoed_edited_and_delivered_on_enter():
    stdin, echoed, _, tty = terminal()
    tty.input("ecko\x7f\x7fho hi\r")
    assert "".join(echoed) == "ecko\b \b\b \bho hi\r\n"
    assert drain(stdin) == ["echo hi\n"]
    tty.input("ls\r\npwd\n")             # Enter sent as CR LF is one line
    assert drain(stdin) == ["ls\n", "pwd\n"]


def test_ctrl_c_interrupts_and_drops_the_line_ctrl_d_ends_input():
    stdin, echoed, interrupts, tty = terminal()
    tty.input("half a line\x03")
    assert interrupts == [1] and echoed[-1] == "^C"
    tty.input("\x1b[A\x1bOB")           # arrow keys: no history, nothing typed
    tty.input("\x04")
    assert drain(stdin) == [] and stdin.eof


def test_output_newlines_become_crlf():
    assert onlcr("a\nb\n") == "a\r\nb\r\n"
