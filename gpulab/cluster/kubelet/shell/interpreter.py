"""Run a parsed shell script as a generator of actions, so a container's program needs no thread or task.

A running program is a Python generator that yields ``("out", text)`` when it writes to the
container's log and ``("sleep", seconds)`` when time must pass (``sleep 5`` takes five real seconds);
its return value is the exit status. The node agent's process driver (process.py) advances the
generator whenever the virtual clock reaches the next wake-up, which lets ten thousand containers
run on one event loop. The semantics follow the POSIX Shell Command Language (XCU 2.9-2.14) for the
subset parse.py accepts; the three shells images use (BusyBox ash, Debian's dash, bash) differ only
in error wording here (data/images.yaml ``shells``).
"""
from __future__ import annotations

import fnmatch
import math
import re
from typing import Callable, Generator

from ....contract import USE_RECORDED_OUTPUT, NativeProgram
from .parse import AndOr, For, Group, If, Loop, Parser, Pipeline, Redirect, Seq, ShellSyntaxError, Simple, Word
from .limits import BUSY, Spin
from .terminal import InputStream
from .world import Action, Program, World

Gen = Generator[Action, None, int]


class ExitShell(Exception):
    def __init__(self, status: int):
        super().__init__(status)
        self.status = status


class _Log:
    """The container's log (stdout and stderr go to the same CRI log file)."""


LOG = _Log()


class Buffer:
    """A pipe or a command substitution's output, held in the container's memory."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.parts: list[str] = []
        self.size = 0

    def write(self, text: str) -> None:
        self.size += len(text)
        self.world.budget.allocate(self.size)
        self.parts.append(text)

    def text(self) -> str:
        return "".join(self.parts)


class NullSink:
    def write(self, text: str) -> None:
        pass


class FileSink:
    def __init__(self, world: World, path: str, append: bool):
        self.world, self.path = world, path
        if not append or world.files.read(path) is None:
            world.files.add_file(path, "")

    def write(self, text: str) -> None:
        files = self.world.files
        old = files.read(self.path) or ""
        self.world.budget.allocate(len(old) + len(text))
        files.files[self.path] = old + text


class NativeProcess:
    """What a native program sees (gpulab.contract.ContainerProcess), read from the shell that runs it."""

    def __init__(self, shell: "Shell", argv: list[str]):
        self._shell = shell
        self.argv = list(argv)

    def getenv(self, name: str) -> str | None:
        return dict(self._shell.environ()).get(name)

    def listdir(self, path: str) -> list[str] | None:
        files = self._shell.world.files
        path = files.normalize(path, self._shell.cwd)
        return files.listdir(path) if path in files.dirs else None

    def is_file(self, path: str) -> bool:
        files = self._shell.world.files
        return files.read(files.normalize(path, self._shell.cwd)) is not None

    def node_label(self, key: str) -> str | None:
        return self._shell.world.node_labels().get(key)

    def node_annotation(self, key: str) -> str | None:
        return self._shell.world.node_annotations().get(key)

    def now(self) -> float:
        return self._shell.world.time

    def kernel_release(self) -> str:
        return self._shell.world.kernel


SPECIAL_BUILTINS = {":", "true", "false", "exit", "export", "readonly", "unset", "set", "shift", "cd", "exec",
                    "eval", ".", "source", "read", "wait", "trap", "kill", "echo", "printf", "test", "[", "pwd",
                    "return"}


class Shell:
    """One shell process (or the context a directly executed program runs in)."""

    def __init__(self, world: World, *, argv0: str = "sh", flavour: str = "dash", positional: list[str] = (),
                 env: list[tuple[str, str]] | None = None, fds: dict | None = None, stdin: str | None = None,
                 is_pid1: bool = False):
        from .utilities import UTILITIES  # the utilities module uses Shell: import here to avoid a cycle

        self.world = world
        self.utilities: dict[str, Callable] = UTILITIES
        self.vars: dict[str, str] = dict(world.env if env is None else env)
        self.exported: set[str] = set(self.vars)
        self.argv0 = argv0
        self.flavour = flavour
        self.positional = list(positional)
        self.status = 0
        self.errexit = False
        self.xtrace = False
        self.fds: dict[int, object] = dict(fds) if fds else {1: LOG, 2: LOG}
        self.stdin = stdin
        self.cwd = world.workdir
        self.is_pid1 = is_pid1
        # True while this process runs a program in its place (exec): the program is then PID 1 too.
        self.execing = False
        self._condition = 0
        self._substituted = 0      # exit status of the last command substitution (an assignment's status)
        self.line = 1

    # --- output -------------------------------------------------------------
    def emit(self, fd: int, text: str) -> Generator[Action, None, None]:
        sink = self.fds.get(fd, LOG)
        if sink is LOG:
            if text:
                yield ("out", text)
        else:
            sink.write(text)

    def read_stdin(self) -> Generator[Action, None, str]:
        """All of standard input: a fixed text, or a live stream read to its end."""
        if isinstance(self.stdin, InputStream):
            return (yield from self.stdin.read_all())
        return self.stdin or ""

    def read_stdin_line(self) -> Generator[Action, None, str | None]:
        """The next line of standard input (with its newline); None at its end."""
        if isinstance(self.stdin, InputStream):
            return (yield from self.stdin.readline())
        if not self.stdin:
            return None
        line, newline, self.stdin = self.stdin.partition("\n")
        return line + newline

    def error(self, message: str) -> Generator[Action, None, None]:
        """A diagnostic prefixed the way this shell prefixes them (``sh: 1: ...``)."""
        yield from self.emit(2, self.prefix() + message + "\n")

    def prefix(self) -> str:
        if self.flavour == "dash":
            return f"{self.argv0}: {self.line}: "
        if self.flavour == "bash":
            return f"{self.argv0}: line {self.line}: "
        return f"{self.argv0}: "

    def environ(self) -> list[tuple[str, str]]:
        return [(k, v) for k, v in self.vars.items() if k in self.exported]

    def child(self, **kw) -> "Shell":
        kw.setdefault("env", self.environ())
        kw.setdefault("fds", self.fds)
        kw.setdefault("stdin", self.stdin)
        kw.setdefault("flavour", self.flavour)
        kw.setdefault("argv0", self.argv0)
        sub = Shell(self.world, **kw)
        sub.cwd = self.cwd
        return sub

    # --- entry points -------------------------------------------------------
    def run_source(self, src: str) -> Gen:
        try:
            seq = Parser(src).parse_script()
        except ShellSyntaxError as exc:
            yield from self.error(str(exc) if self.flavour != "bash" else str(exc).replace("Syntax error", "syntax error"))
            return 2
        try:
            if self.is_pid1 and _single_command(seq):
                argv = yield from self._expand_words(seq.items[0].first.commands[0].words)
                return (yield from self.exec_program(argv))
            return (yield from self.run_seq(seq))
        except ExitShell as exc:
            return exc.status
        except Spin:
            yield ("sleep", math.inf)
            return 0

    def exec_program(self, argv: list[str]) -> Gen:
        """Replace this process with ``argv`` (PID 1 takes over the program's reaction to the stop signal)."""
        if not argv:
            return 0
        prog = self.world.find_program(argv, self.utilities)
        if prog is None:
            yield from self._not_found(argv[0])
            return 127
        if self.is_pid1:
            self.world.pid1_stop = prog.stop
        self.execing = True
        return (yield from self.run_program(prog, argv))

    # --- lists and compound commands -----------------------------------------
    def run_seq(self, seq: Seq) -> Gen:
        status = 0
        for item in seq.items:
            status = yield from self._and_or(item)
        return status

    def _and_or(self, node: AndOr) -> Gen:
        status = yield from self._pipeline(node.first)
        last = node.first
        for op, pipeline in node.rest:
            if (op == "&&") == (status == 0):
                status = yield from self._pipeline(pipeline)
                last = pipeline
        if status and self.errexit and not self._condition and last is (node.rest[-1][1] if node.rest else node.first) \
                and not last.negate:
            raise ExitShell(status)
        return status

    def _pipeline(self, node: Pipeline) -> Gen:
        if node.negate:
            self._condition += 1
        try:
            stdin = self.stdin
            status = 0
            for i, command in enumerate(node.commands):
                last = i == len(node.commands) - 1
                saved_fds, saved_stdin = self.fds, self.stdin
                buffer = None if last else Buffer(self.world)
                if buffer is not None:
                    self.fds = {**self.fds, 1: buffer}
                self.stdin = stdin
                try:
                    status = yield from self._command(command)
                finally:
                    self.fds, self.stdin = saved_fds, saved_stdin
                stdin = buffer.text() if buffer is not None else None
        finally:
            if node.negate:
                self._condition -= 1
        if node.negate:
            status = 0 if status else 1
        self.status = status
        return status

    def _command(self, node) -> Gen:
        if isinstance(node, Simple):
            return (yield from self._simple(node))
        return (yield from self._with_redirects(node.redirects, lambda: self._compound(node)))

    def _compound(self, node) -> Gen:
        if isinstance(node, If):
            for cond, body in node.branches:
                if (yield from self._condition_of(cond)) == 0:
                    return (yield from self.run_seq(body))
            return (yield from self.run_seq(node.otherwise)) if node.otherwise else 0
        if isinstance(node, Loop):
            status = 0
            while True:
                if self.world.budget.spend():
                    yield BUSY
                if ((yield from self._condition_of(node.condition)) == 0) == node.until:
                    return status
                status = yield from self.run_seq(node.body)
        if isinstance(node, For):
            words = self.positional if node.words is None else (yield from self._expand_words(node.words))
            status = 0
            for value in words:
                self.vars[node.name] = value
                status = yield from self.run_seq(node.body)
            return status
        if isinstance(node, Group) and node.subshell:
            sub = self.child(positional=self.positional)
            sub.vars, sub.exported = dict(self.vars), set(self.exported)
            sub.errexit, sub.xtrace = self.errexit, self.xtrace
            try:
                return (yield from sub.run_seq(node.body))
            except ExitShell as exc:
                return exc.status
        return (yield from self.run_seq(node.body))

    def _condition_of(self, seq: Seq) -> Gen:
        self._condition += 1
        try:
            return (yield from self.run_seq(seq))
        finally:
            self._condition -= 1

    # --- simple commands ----------------------------------------------------
    def _simple(self, node: Simple) -> Gen:
        self.line = node.line
        if self.world.budget.spend():
            yield BUSY
        self._substituted = 0
        argv = yield from self._expand_words(node.words)
        assigns = []
        for name, word in node.assigns:
            assigns.append((name, (yield from self._expand_one(word))))
        if not argv:
            for name, value in assigns:
                self.vars[name] = value
            if node.redirects:
                return (yield from self._with_redirects(node.redirects, _done))
            return self._substituted
        if argv == ["exec"]:
            for redirect in node.redirects:
                if not (yield from self._redirect(redirect)):
                    return 2
            return 0
        if self.xtrace:
            yield from self.emit(2, "+ " + " ".join(_xtrace_quote(a) for a in argv) + "\n")
        return (yield from self._with_redirects(node.redirects, lambda: self._with_assigns(assigns, argv)))

    def _with_assigns(self, assigns: list[tuple[str, str]], argv: list[str]) -> Gen:
        saved = {name: self.vars.get(name) for name, _ in assigns}
        saved_exported = set(self.exported)
        for name, value in assigns:
            self.vars[name] = value
            self.exported.add(name)
        try:
            return (yield from self.run_argv(argv))
        finally:
            for name, value in saved.items():
                if value is None:
                    self.vars.pop(name, None)
                else:
                    self.vars[name] = value
            self.exported = saved_exported

    def run_argv(self, argv: list[str]) -> Gen:
        name = argv[0]
        if name in SPECIAL_BUILTINS:
            from .utilities import run_builtin

            return (yield from run_builtin(self, argv))
        prog = self.world.find_program(argv, self.utilities)
        if prog is None:
            yield from self._not_found(name)
            return 127
        return (yield from self.run_program(prog, argv))

    def run_program(self, prog: Program, argv: list[str]) -> Gen:
        if prog.kind == "mounted":
            if prog.native is not None:
                status = yield from self._run_native(prog.native, argv)
                if status != USE_RECORDED_OUTPUT:
                    return status
            yield from self.emit(1, prog.output)
            return 0
        if prog.kind == "utility":
            return (yield from self.utilities[prog.name](self, argv))
        if prog.kind == "behaviour":
            b = prog.behaviour
            if b.native is not None:
                if b.serve:     # a serving program written in Python: its ports answer while it runs
                    self.world.listen(b.serves)
                return (yield from self._run_native(b.native, argv))
            script = b.without_device_script if b.needs_device and not self.world.files.exists(b.needs_device) \
                else b.script
            sub = self.child(argv0=argv[0], positional=argv[1:], flavour=self.world.image.shell or "dash",
                             is_pid1=self.is_pid1 and self.execing)
            try:
                status = yield from sub.run_seq(Parser(script).parse_script())
            except ExitShell as exc:   # the program ends here (`nginx -v`), serving or not
                return exc.status
            if b.serve and script is b.script:
                self.world.listen(b.serves)
                yield ("sleep", math.inf)
            return status
        if prog.kind == "script":
            path = self.world.files.normalize(argv[0], self.cwd)
            if not self.world.files.executable(path):
                yield from self.error(f"{argv[0]}: Permission denied")
                return 126
            text = self.world.files.read(path) or ""
            flavour = "bash" if text.startswith("#!/bin/bash") or text.startswith("#!/usr/bin/env bash") \
                else self.world.image.shell or "dash"
            sub = self.child(argv0=argv[0], positional=argv[1:], flavour=flavour)
            return (yield from sub.run_source(text))
        yield ("sleep", math.inf)  # an opaque program: it serves, silently, until stopped
        return 0

    def _run_native(self, program: NativeProgram, argv: list[str]) -> Gen:
        """A program written in Python: its writes go through this shell's descriptors, its sleeps to the driver."""
        steps = program(NativeProcess(self, argv))
        while True:
            try:
                kind, value = next(steps)
            except StopIteration as stop:
                return stop.value or 0
            if kind == "sleep":
                yield ("sleep", value)
            else:
                yield from self.emit(2 if kind == "stderr" else 1, str(value))

    def _not_found(self, command: str) -> Generator[Action, None, None]:
        template = self.world.catalog.shells.get(self.flavour, self.world.catalog.shells["dash"])
        yield from self.emit(2, template.format(shell=self.argv0, line=self.line, command=command) + "\n")

    # --- redirections -------------------------------------------------------
    def _with_redirects(self, redirects: list[Redirect], body: Callable[[], Gen]) -> Gen:
        if not redirects:
            return (yield from body())
        saved_fds, saved_stdin = dict(self.fds), self.stdin
        try:
            for redirect in redirects:
                if not (yield from self._redirect(redirect)):
                    return 2 if self.flavour == "dash" else 1
            return (yield from body())
        finally:
            self.fds, self.stdin = saved_fds, saved_stdin

    def _redirect(self, r: Redirect) -> Generator[Action, None, bool]:
        target = yield from self._expand_one(r.target)
        if r.op in (">&", "<&"):
            if target == "-":
                self._set_fd(r.fd, NullSink())
            elif target.isdigit():
                self._set_fd(r.fd, self.fds.get(int(target), LOG))
            return True
        files = self.world.files
        if r.op == "<":
            path = files.normalize(target, self.cwd)
            text = files.read(path)
            if text is None and path != "/dev/null":
                yield from self.error(f"cannot open {target}: No such file")
                return False
            self.stdin = text or ""
            return True
        if target == "/dev/null":
            self._set_fd(r.fd, NullSink())
        elif target in ("/dev/stdout", "/dev/stderr"):
            self._set_fd(r.fd, self.fds.get(1 if target == "/dev/stdout" else 2, LOG))
        else:
            path = files.normalize(target, self.cwd)
            if path.rsplit("/", 1)[0] not in files.dirs and path.rsplit("/", 1)[0] != "":
                yield from self.error(f"cannot create {target}: Directory nonexistent")
                return False
            self._set_fd(r.fd, FileSink(self.world, path, r.op == ">>"))
        return True

    def _set_fd(self, fd: int, sink) -> None:
        """Replace (never mutate) the descriptor table: enclosing commands keep references to the old one."""
        self.fds = {**self.fds, fd: sink}

    # --- expansions ---------------------------------------------------------
    def _expand_words(self, words: list[Word]) -> Generator[Action, None, list[str]]:
        out: list[str] = []
        for word in words:
            out.extend((yield from self._expand(word)))
        return out

    def _expand_one(self, word: Word) -> Generator[Action, None, str]:
        fields = yield from self._expand(word, split=False)
        return fields[0] if fields else ""

    def _expand(self, word: Word, split: bool = True) -> Generator[Action, None, list[str]]:
        fields: list[str] = []
        cur: list[str] = []
        started = False

        def close() -> None:
            nonlocal started
            if cur or started:
                fields.append(self._joined(cur))
            cur.clear()
            started = False

        for i, part in enumerate(word.parts):
            kind = part[0]
            if kind == "lit":
                text = part[1]
                if i == 0 and (text == "~" or text.startswith("~/")):
                    text = "/root" + text[1:]
                cur.append(text)
                started = True
            elif kind == "sq":
                cur.append(part[1])
                started = True
            elif kind == "dq":
                started = True
                for inner in part[1]:
                    if inner[0] == "param" and inner[1] == "@" and not inner[2]:
                        if self.positional:
                            cur.append(self.positional[0])
                            for extra in self.positional[1:]:
                                close()
                                cur.append(extra)
                                started = True
                        elif len(part[1]) == 1 and not cur:
                            started = False
                    else:
                        cur.append((yield from self._value(inner)))
            else:
                value = yield from self._value(part)
                if not split:
                    cur.append(value)
                    continue
                pieces = re.split(r"[ \t\n]+", value)
                for k, piece in enumerate(pieces):
                    if k > 0:
                        close()
                    if piece:
                        cur.append(piece)
                        started = True
        close()
        if not split:
            return [self._joined(fields)] if fields else [""]
        return fields

    def _joined(self, parts: list[str]) -> str:
        """The parts of a word as one value, built only if the container's memory holds it."""
        self.world.budget.allocate(sum(map(len, parts)))
        return "".join(parts)

    def _param(self, name: str) -> str | None:
        if name == "?":
            return str(self.status)
        if name == "#":
            return str(len(self.positional))
        if name in ("@", "*"):
            return " ".join(self.positional)
        if name == "$":
            return "1"
        if name == "!":
            return ""
        if name == "-":
            return ("e" if self.errexit else "") + ("x" if self.xtrace else "")
        if name.isdigit():
            n = int(name)
            if n == 0:
                return self.argv0
            return self.positional[n - 1] if n <= len(self.positional) else None
        return self.vars.get(name)

    def _value(self, part: tuple) -> Generator[Action, None, str]:
        kind = part[0]
        if kind == "lit" or kind == "sq":
            return part[1]
        if kind == "dq":
            out = []
            for inner in part[1]:
                out.append((yield from self._value(inner)))
            return self._joined(out)
        if kind == "cmd":
            buffer = Buffer(self.world)
            sub = self.child(fds={**self.fds, 1: buffer}, positional=self.positional)
            sub.vars, sub.exported = dict(self.vars), set(self.exported)
            try:
                self._substituted = yield from sub.run_seq(part[1])
            except ExitShell as exc:
                self._substituted = exc.status
            return buffer.text().rstrip("\n")
        if kind == "arith":
            expr = yield from self._expand_one(part[1])
            try:
                return str(_Arith(expr, self).evaluate())
            except (ValueError, ZeroDivisionError) as exc:
                yield from self.error(f"arithmetic expression: {exc}: \"{expr}\"")
                raise ExitShell(2) from None
        _, name, op, arg = part
        value = self._param(name)
        if op == "#" and arg is None:
            return str(len(self._param(name) or ""))
        if op in ("", None):
            return value if value is not None else ""
        unset = value is None or (op.startswith(":") and value == "")
        if op in (":-", "-"):
            return (yield from self._expand_one(arg)) if unset else value
        if op in (":=", "="):
            if unset:
                value = yield from self._expand_one(arg)
                self.vars[name] = value
            return value
        if op in (":+", "+"):
            return "" if unset else (yield from self._expand_one(arg))
        if op in (":?", "?"):
            if unset:
                message = (yield from self._expand_one(arg)) or "parameter not set"
                yield from self.error(f"{name}: {message}")
                raise ExitShell(2)
            return value
        pattern = yield from self._expand_one(arg)
        return _trim(value or "", op, pattern)


def _done() -> Gen:
    yield from ()
    return 0


def _single_command(seq: Seq) -> bool:
    """A script that is one simple command: dash and bash exec it instead of forking."""
    if len(seq.items) != 1 or seq.items[0].rest:
        return False
    pipeline = seq.items[0].first
    if pipeline.negate or len(pipeline.commands) != 1:
        return False
    cmd = pipeline.commands[0]
    return isinstance(cmd, Simple) and bool(cmd.words) and not cmd.assigns and not cmd.redirects


def _trim(value: str, op: str, pattern: str) -> str:
    """``${v%p}``, ``${v%%p}``, ``${v#p}``, ``${v##p}``: remove a matching suffix or prefix."""
    n = len(value)
    if op in ("%", "%%"):
        cuts = range(n, -1, -1) if op == "%" else range(0, n + 1)
        for k in cuts:
            if fnmatch.fnmatchcase(value[k:], pattern):
                return value[:k]
    else:
        cuts = range(0, n + 1) if op == "#" else range(n, -1, -1)
        for k in cuts:
            if fnmatch.fnmatchcase(value[:k], pattern):
                return value[k:]
    return value


def _xtrace_quote(arg: str) -> str:
    if arg and re.fullmatch(r"[\w@%+=:,./-]+", arg):
        return arg
    return "'" + arg.replace("'", "'\\''") + "'"


class _Arith:
    """Integer arithmetic of ``$(( ))`` with C precedence (XCU 2.6.4)."""

    _TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_]\w*)|(\*\*|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%()<>!~&|^?:=]))")
    _BINARY = [("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="), ("<<", ">>"),
               ("+", "-"), ("*", "/", "%")]

    def __init__(self, text: str, shell: Shell, depth: int = 0):
        if depth > 16:
            raise ValueError("expression recursion level exceeded")
        self.shell = shell
        self.depth = depth
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        text = text.strip()
        while pos < len(text):
            m = self._TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise ValueError("syntax error")
            pos = m.end()
            if m.group(1):
                self.tokens.append(("num", m.group(1)))
            elif m.group(2):
                self.tokens.append(("name", m.group(2)))
            else:
                self.tokens.append(("op", m.group(3)))
        self.i = 0

    def evaluate(self) -> int:
        if not self.tokens:
            return 0
        value = self._assign()
        if self.i != len(self.tokens):
            raise ValueError("syntax error")
        return value

    def _peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def _assign(self) -> int:
        tok = self._peek()
        nxt = self.tokens[self.i + 1] if self.i + 1 < len(self.tokens) else None
        if tok and tok[0] == "name" and nxt == ("op", "="):
            self.i += 2
            value = self._assign()
            self.shell.vars[tok[1]] = str(value)
            return value
        return self._ternary()

    def _ternary(self) -> int:
        cond = self._binary(0)
        if self._peek() == ("op", "?"):
            self.i += 1
            a = self._assign()
            if self._peek() != ("op", ":"):
                raise ValueError("syntax error")
            self.i += 1
            b = self._assign()
            return a if cond else b
        return cond

    def _binary(self, level: int) -> int:
        if level == len(self._BINARY):
            return self._unary()
        left = self._binary(level + 1)
        while self._peek() and self._peek()[0] == "op" and self._peek()[1] in self._BINARY[level]:
            op = self.tokens[self.i][1]
            self.i += 1
            right = self._binary(level + 1)
            left = _apply(op, left, right)
        return left

    def _unary(self) -> int:
        tok = self._peek()
        if tok is None:
            raise ValueError("syntax error")
        if tok[0] == "op" and tok[1] in ("-", "+", "!", "~"):
            self.i += 1
            v = self._unary()
            return _int64({"-": -v, "+": v, "!": int(not v), "~": ~v}[tok[1]])
        self.i += 1
        if tok == ("op", "("):
            v = self._assign()
            if self._peek() != ("op", ")"):
                raise ValueError("missing ')'")
            self.i += 1
            return v
        if tok[0] == "num":
            return _int64(int(tok[1]))
        if tok[0] == "name":
            raw = (self.shell.vars.get(tok[1]) or "0").strip() or "0"
            try:
                return _int64(int(raw))
            except ValueError:
                return _Arith(raw, self.shell, self.depth + 1).evaluate()
        raise ValueError("syntax error")


def _apply(op: str, a: int, b: int) -> int:
    """``a op b`` in the shell's 64-bit signed arithmetic (intmax_t: wrapping, shift counts taken modulo 64)."""
    if op in ("/", "%"):
        if b == 0:
            raise ZeroDivisionError("division by zero")
        q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
        return _int64(q if op == "/" else a - q * b)
    if op in ("<<", ">>"):
        b &= 63
    return _int64({
        "||": lambda: int(bool(a) or bool(b)), "&&": lambda: int(bool(a) and bool(b)), "|": lambda: a | b,
        "^": lambda: a ^ b, "&": lambda: a & b, "==": lambda: int(a == b), "!=": lambda: int(a != b),
        "<": lambda: int(a < b), "<=": lambda: int(a <= b), ">": lambda: int(a > b), ">=": lambda: int(a >= b),
        "<<": lambda: a << b, ">>": lambda: a >> b, "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
    }[op]())


def _int64(value: int) -> int:
    return (value + 2 ** 63) % 2 ** 64 - 2 ** 63
