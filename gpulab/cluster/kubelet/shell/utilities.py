"""The commands the interpreter implements: shell built-ins and the common Unix utilities.

Each is a generator ``fn(shell, argv)`` (see interpreter.py) that writes with ``shell.emit`` and
returns its exit status. Behaviour and error wording follow GNU coreutils in Debian-based images and
BusyBox in BusyBox/Alpine images (the image's shell flavour tells them apart); only the options
lab scripts commonly use are implemented, listed in docs/images.md.
"""
from __future__ import annotations

import math
import posixpath
import re
from datetime import datetime, timezone
from typing import Callable, Generator

from . import interactive
from .compress import gunzip, gzip, zcat
from .octets import to_bytes
from .interpreter import ExitShell, Gen, Shell
from .limits import BUSY
from .parse import Parser
from .terminal import InputStream

Utility = Callable[[Shell, list[str]], Gen]


def _busybox(sh: Shell) -> bool:
    return sh.world.image.shell == "ash"


def _out(sh: Shell, text: str) -> Generator:
    return sh.emit(1, text)


def _err(sh: Shell, prog: str, message: str) -> Generator:
    return sh.emit(2, f"{prog}: {message}\n")


def _input_of(sh: Shell, prog: str, files: list[str]) -> Generator[tuple, None, tuple[str, int]]:
    """The concatenated text of ``files`` (stdin when none), and 1 if one could not be read."""
    if not files or files == ["-"]:
        return (yield from sh.read_stdin()), 0
    chunks, status = [], 0
    for name in files:
        path = sh.world.files.normalize(name, sh.cwd)
        text = sh.world.files.read(path)
        if text is None:
            status = 1
            if path in sh.world.files.dirs:
                yield from _err(sh, prog, "read error: Is a directory" if _busybox(sh) else f"{name}: Is a directory")
            elif _busybox(sh):
                yield from _err(sh, prog, f"can't open '{name}': No such file or directory")
            else:
                yield from _err(sh, prog, f"{name}: No such file or directory")
            continue
        chunks.append(text)
    return "".join(chunks), status


# --- output -----------------------------------------------------------------
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", "e": "\x1b"}


def _unescape(text: str) -> tuple[str, bool]:
    """Backslash escapes of echo -e / printf %b; True when ``\\c`` asked to stop output."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            n = text[i + 1]
            if n == "c":
                return "".join(out), True
            if n in _ESCAPES:
                out.append(_ESCAPES[n])
                i += 2
                continue
            if n == "0":
                m = re.match(r"0([0-7]{0,3})", text[i + 1:])
                out.append(chr(int(m.group(1) or "0", 8)))
                i += 1 + len(m.group(0))
                continue
        out.append(c)
        i += 1
    return "".join(out), False


def echo(sh: Shell, argv: list[str], interpret: bool = False) -> Gen:
    args = argv[1:]
    newline = True
    while args and re.fullmatch(r"-[neE]+", args[0]) and not (sh.flavour == "dash" and args[0] != "-n"):
        for flag in args[0][1:]:
            if flag == "n":
                newline = False
            else:
                interpret = flag == "e"
        args = args[1:]
    text = " ".join(args)
    stop = False
    if interpret:
        text, stop = _unescape(text)
    yield from _out(sh, text + ("\n" if newline and not stop else ""))
    return 0


def _builtin_echo(sh: Shell, argv: list[str]) -> Gen:
    return (yield from echo(sh, argv, interpret=sh.flavour == "dash"))


_FORMAT = re.compile(r"%([-+ #0]*)(\d+|\*)?(?:\.(\d+|\*))?([diouxXeEfgGcsb%])")


def printf(sh: Shell, argv: list[str]) -> Gen:
    if len(argv) < 2:
        yield from _err(sh, "printf", "usage: printf format [arg ...]")
        return 2
    fmt, args = argv[1], list(argv[2:])
    status = 0
    out: list[str] = []
    while True:
        pos, used = 0, False
        for m in _FORMAT.finditer(fmt):
            out.append(_unescape(fmt[pos:m.start()])[0])
            pos = m.end()
            flags, width, precision, conv = m.groups()
            if conv == "%":
                out.append("%")
                continue
            used = True
            arg = args.pop(0) if args else ""
            spec = "%" + flags + (width or "") + (f".{precision}" if precision else "")
            sh.world.budget.allocate(sum(int(n) for n in (width, precision) if n and n.isdigit()) + len(arg))
            if conv in "diouxX":
                try:
                    number = int(arg, 0) if arg else 0
                except ValueError:
                    yield from _err(sh, "printf", f"{arg}: expected numeric value" if sh.flavour == "dash"
                                    else f"invalid number '{arg}'")
                    status, number = 1, 0
                out.append((spec + ("d" if conv in "diu" else conv)) % number)
            elif conv in "eEfgG":
                try:
                    out.append((spec + conv) % (float(arg) if arg else 0.0))
                except ValueError:
                    status = 1
                    out.append((spec + conv) % 0.0)
            elif conv == "c":
                out.append((spec + "s") % arg[:1])
            elif conv == "b":
                out.append((spec + "s") % _unescape(arg)[0])
            else:
                out.append((spec + "s") % arg)
        out.append(_unescape(fmt[pos:])[0])
        if not args or not used:
            break
    yield from _out(sh, "".join(out))
    return status


# --- time ---------------------------------------------------------------------
_DURATION = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)([smhd]?)$")


def sleep(sh: Shell, argv: list[str]) -> Gen:
    if len(argv) < 2:
        yield from _err(sh, "sleep", "missing operand" if not _busybox(sh) else "usage: sleep [N]...")
        if not _busybox(sh):
            yield from sh.emit(2, "Try 'sleep --help' for more information.\n")
        return 1
    total = 0.0
    for arg in argv[1:]:
        if arg in ("inf", "infinity"):
            total = math.inf
            continue
        m = _DURATION.match(arg)
        if not m:
            yield from _err(sh, "sleep", f"invalid number '{arg}'" if _busybox(sh) else f"invalid time interval '{arg}'")
            if not _busybox(sh):
                yield from sh.emit(2, "Try 'sleep --help' for more information.\n")
            return 1
        total += float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    if total > 0:
        yield ("sleep", total)
    return 0


def date(sh: Shell, argv: list[str]) -> Gen:
    now = datetime.fromtimestamp(sh.world.time, tz=timezone.utc)
    fmt = "%a %b %e %H:%M:%S %Z %Y"
    for arg in argv[1:]:
        if arg.startswith("+"):
            fmt = arg[1:]
        elif arg in ("-u", "--utc", "-R", "-I", "-Iseconds", "--iso-8601=seconds", "--rfc-3339=seconds"):
            fmt = {"-R": "%a, %d %b %Y %H:%M:%S +0000", "-I": "%Y-%m-%d", "-Iseconds": "%Y-%m-%dT%H:%M:%S+00:00",
                   "--iso-8601=seconds": "%Y-%m-%dT%H:%M:%S+00:00",
                   "--rfc-3339=seconds": "%Y-%m-%d %H:%M:%S+00:00"}.get(arg, fmt)
        else:
            yield from _err(sh, "date", f"invalid date '{arg}'")
            return 1
    fmt = fmt.replace("%N", f"{int(round((sh.world.time % 1) * 1e9)):09d}").replace("%s", str(int(sh.world.time)))
    yield from _out(sh, now.strftime(fmt) + "\n")
    return 0


# --- environment and identity -------------------------------------------------
def env(sh: Shell, argv: list[str]) -> Gen:
    args = argv[1:]
    extra = []
    while args and re.match(r"^[A-Za-z_]\w*=", args[0]):
        name, _, value = args.pop(0).partition("=")
        extra.append((name, value))
    if args:
        saved = dict(sh.vars), set(sh.exported)
        for name, value in extra:
            sh.vars[name] = value
            sh.exported.add(name)
        try:
            return (yield from sh.run_argv(args))
        finally:
            sh.vars, sh.exported = saved
    for name, value in sh.environ() + extra:
        yield from _out(sh, f"{name}={value}\n")
    return 0


def printenv(sh: Shell, argv: list[str]) -> Gen:
    if len(argv) == 1:
        return (yield from env(sh, ["env"]))
    environ = dict(sh.environ())
    status = 0
    for name in argv[1:]:
        if name in environ:
            yield from _out(sh, environ[name] + "\n")
        else:
            status = 1
    return status


def hostname(sh: Shell, argv: list[str]) -> Gen:
    if "-i" in argv[1:]:
        for line in (sh.world.files.read("/etc/hosts") or "").splitlines():
            fields = line.split()
            if len(fields) > 1 and sh.world.hostname in fields[1:]:
                yield from _out(sh, fields[0] + "\n")
                return 0
    yield from _out(sh, sh.world.hostname + "\n")
    return 0


def whoami(sh: Shell, argv: list[str]) -> Gen:
    yield from _out(sh, "root\n")
    return 0


def id_(sh: Shell, argv: list[str]) -> Gen:
    groups = "0(root),10(wheel)" if _busybox(sh) else "0(root)"
    yield from _out(sh, f"uid=0(root) gid=0(root) groups={groups}\n")
    return 0


def uname(sh: Shell, argv: list[str]) -> Gen:
    w = sh.world
    parts = {"s": "Linux", "n": w.hostname, "r": w.kernel, "v": "#1 SMP PREEMPT_DYNAMIC", "m": "x86_64",
             "o": "GNU/Linux"}
    flags = "".join(a[1:] for a in argv[1:] if a.startswith("-")) or "s"
    if "a" in flags:
        flags = "snrvmo"
    yield from _out(sh, " ".join(parts[f] for f in "snrvmo" if f in flags) + "\n")
    return 0


def uptime(sh: Shell, argv: list[str]) -> Gen:
    """BusyBox's uptime (procps/uptime.c, utmp support on as in the busybox image): the node's time since it
    booted, no logged-in users, and a load average of nothing (no real process runs on an emulated node)."""
    now = datetime.fromtimestamp(sh.world.time, tz=timezone.utc)
    up = max(0, int(sh.world.time - sh.world.boot_time))
    days, hours, minutes = up // 86400, up // 3600 % 24, up // 60 % 60
    since = f"{days} day{'s' if days != 1 else ''}, " if days else ""
    since += f"{hours:2d}:{minutes:02d}" if hours else f"{minutes} min"
    yield from _out(sh, f" {now:%H:%M:%S} up {since},  0 users,  load average: 0.00, 0.00, 0.00\n")
    return 0


def nproc(sh: Shell, argv: list[str]) -> Gen:
    yield from _out(sh, f"{sh.world.nproc}\n")
    return 0


def pwd(sh: Shell, argv: list[str]) -> Gen:
    yield from _out(sh, sh.cwd + "\n")
    return 0


def true(sh: Shell, argv: list[str]) -> Gen:
    yield from ()
    return 0


def false(sh: Shell, argv: list[str]) -> Gen:
    yield from ()
    return 1


# --- files --------------------------------------------------------------------
def cat(sh: Shell, argv: list[str]) -> Gen:
    files = [a for a in argv[1:] if a != "-u"]
    if not files and isinstance(sh.stdin, InputStream):   # a live stdin is copied as it arrives, line by line
        while (line := (yield from sh.read_stdin_line())) is not None:
            yield from _out(sh, line)
        return 0
    text, status = yield from _input_of(sh, "cat", files)
    yield from _out(sh, text)
    return status


def _lines_option(argv: list[str], default: int) -> tuple[int, bool, list[str]]:
    """-n N / -N / -nN and -f, as head and tail take them."""
    count, follow, files, args = default, False, [], argv[1:]
    while args:
        a = args.pop(0)
        if a == "-n" and args:
            count = int(args.pop(0).lstrip("+-") or default)
        elif re.fullmatch(r"-n[+-]?\d+", a):
            count = int(a[2:].lstrip("+-"))
        elif re.fullmatch(r"-\d+", a):
            count = int(a[1:])
        elif a in ("-f", "-F", "--follow"):
            follow = True
        elif a.startswith("-") and a != "-":
            continue
        else:
            files.append(a)
    return count, follow, files


def head(sh: Shell, argv: list[str]) -> Gen:
    count, _, files = _lines_option(argv, 10)
    text, status = yield from _input_of(sh, "head", files)
    yield from _out(sh, "".join(text.splitlines(keepends=True)[:count]))
    return status


def tail(sh: Shell, argv: list[str]) -> Gen:
    count, follow, files = _lines_option(argv, 10)
    text, status = yield from _input_of(sh, "tail", [f for f in files if f != "/dev/null"])
    lines = text.splitlines(keepends=True)
    yield from _out(sh, "".join(lines[-count:] if count else []))
    if follow:
        yield ("sleep", math.inf)
    return status


def grep(sh: Shell, argv: list[str]) -> Gen:
    flags, rest = set(), []
    for a in argv[1:]:
        if re.fullmatch(r"-[ivcqEFnwx]+", a):
            flags.update(a[1:])
        else:
            rest.append(a)
    if not rest:
        yield from _err(sh, "grep", "usage: grep [OPTION]... PATTERNS [FILE]...")
        return 2
    pattern, files = rest[0], rest[1:]
    text, status = yield from _input_of(sh, "grep", files)
    source = re.escape(pattern) if "F" in flags else (pattern if "E" in flags else
                                                      pattern.replace(r"\|", "|").replace(r"\(", "(").replace(r"\)", ")"))
    if "w" in flags:
        source = rf"\b(?:{source})\b"
    if "x" in flags:
        source = rf"^(?:{source})$"
    try:
        regex = re.compile(source, re.IGNORECASE if "i" in flags else 0)
    except re.error:
        regex = re.compile(re.escape(pattern), re.IGNORECASE if "i" in flags else 0)
    matched = [(n, line) for n, line in enumerate(text.splitlines(), 1) if bool(regex.search(line)) != ("v" in flags)]
    if "q" in flags:
        return 0 if matched else (status or 1)
    if "c" in flags:
        yield from _out(sh, f"{len(matched)}\n")
    else:
        yield from _out(sh, "".join((f"{n}:" if "n" in flags else "") + line + "\n" for n, line in matched))
    return 0 if matched else (2 if status else 1)


def wc(sh: Shell, argv: list[str]) -> Gen:
    flags = "".join(a[1:] for a in argv[1:] if a.startswith("-") and a != "-")
    files = [a for a in argv[1:] if not a.startswith("-") or a == "-"]
    text, status = yield from _input_of(sh, "wc", files)
    counts = {"l": text.count("\n"), "w": len(text.split()), "c": len(to_bytes(text))}
    chosen = [counts[f] for f in "lwc" if f in flags] or [counts["l"], counts["w"], counts["c"]]
    suffix = f" {files[0]}" if files else ""
    if len(chosen) == 1:
        yield from _out(sh, f"{chosen[0]}{suffix}\n")
    else:
        width = 9 if _busybox(sh) else 7
        yield from _out(sh, " ".join(f"{c:{width}d}" for c in chosen) + suffix + "\n")
    return status


def sort(sh: Shell, argv: list[str]) -> Gen:
    flags = "".join(a[1:] for a in argv[1:] if a.startswith("-"))
    text, status = yield from _input_of(sh, "sort", [a for a in argv[1:] if not a.startswith("-")])
    lines = text.splitlines()
    key = (lambda s: float(re.match(r"\s*-?\d*\.?\d*", s).group() or 0) if "n" in flags else s)
    lines.sort(key=key, reverse="r" in flags)
    if "u" in flags:
        lines = list(dict.fromkeys(lines))
    yield from _out(sh, "".join(line + "\n" for line in lines))
    return status


def _tr_set(spec: str) -> str:
    spec = spec.replace("[:lower:]", "a-z").replace("[:upper:]", "A-Z").replace("[:digit:]", "0-9")
    spec = spec.replace("[:space:]", " \t\n\r\f\v")
    spec = _unescape(spec)[0]
    out, i = [], 0
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == "-":
            out.extend(chr(c) for c in range(ord(spec[i]), ord(spec[i + 2]) + 1))
            i += 3
        else:
            out.append(spec[i])
            i += 1
    return "".join(out)


def tr(sh: Shell, argv: list[str]) -> Gen:
    """tr SET1 SET2 and tr -d SET1 (ranges, escapes and the lower/upper/digit/space classes)."""
    args = argv[1:]
    delete = bool(args) and args[0] == "-d"
    if delete:
        args = args[1:]
    if not args or (not delete and len(args) < 2):
        yield from _err(sh, "tr", "missing operand")
        return 1
    text = yield from sh.read_stdin()
    first = _tr_set(args[0])
    if delete:
        out = "".join(c for c in text if c not in first)
    else:
        second = _tr_set(args[1])
        second = second + second[-1:] * max(0, len(first) - len(second))
        out = text.translate(str.maketrans(first, second[:len(first)]))
    yield from _out(sh, out)
    return 0


def _fields(spec: str, count: int) -> list[int]:
    chosen: list[int] = []
    for part in spec.split(","):
        start, dash, end = part.partition("-")
        lo = int(start) if start else 1
        hi = (int(end) if end else count) if dash else lo
        chosen.extend(i for i in range(lo, hi + 1) if i <= count and i not in chosen)
    return chosen


def cut(sh: Shell, argv: list[str]) -> Gen:
    """cut -d DELIM -f LIST and cut -c LIST."""
    args, delim, fields, chars, files = argv[1:], "\t", None, None, []
    while args:
        a = args.pop(0)
        if a.startswith("-d"):
            delim = a[2:] or (args.pop(0) if args else "\t")
        elif a.startswith("-f"):
            fields = a[2:] or (args.pop(0) if args else "")
        elif a.startswith("-c"):
            chars = a[2:] or (args.pop(0) if args else "")
        else:
            files.append(a)
    if fields is None and chars is None:
        yield from _err(sh, "cut", "you must specify a list of bytes, characters, or fields")
        return 1
    text, status = yield from _input_of(sh, "cut", files)
    out = []
    for line in text.splitlines():
        if chars is not None:
            out.append("".join(line[i - 1] for i in _fields(chars, len(line))))
        elif delim not in line:
            out.append(line)
        else:
            parts = line.split(delim)
            out.append(delim.join(parts[i - 1] for i in _fields(fields, len(parts))))
    yield from _out(sh, "".join(line + "\n" for line in out))
    return status


def tee(sh: Shell, argv: list[str]) -> Gen:
    append = "-a" in argv[1:]
    text = yield from sh.read_stdin()
    for name in (a for a in argv[1:] if not a.startswith("-")):
        path = sh.world.files.normalize(name, sh.cwd)
        old = sh.world.files.read(path) if append else None
        sh.world.files.add_file(path, (old or "") + text)
    yield from _out(sh, text)
    return 0


def touch(sh: Shell, argv: list[str]) -> Gen:
    status = 0
    for name in (a for a in argv[1:] if not a.startswith("-")):
        path = sh.world.files.normalize(name, sh.cwd)
        if posixpath.dirname(path) not in sh.world.files.dirs:
            yield from _err(sh, "touch", f"{name}: No such file or directory" if _busybox(sh)
                            else f"cannot touch '{name}': No such file or directory")
            status = 1
        elif sh.world.files.read(path) is None and path not in sh.world.files.dirs:
            sh.world.files.add_file(path, "")
    return status


def mkdir(sh: Shell, argv: list[str]) -> Gen:
    parents = any(a.startswith("-") and "p" in a for a in argv[1:])
    status = 0
    for name in (a for a in argv[1:] if not a.startswith("-")):
        path = sh.world.files.normalize(name, sh.cwd)
        if path in sh.world.files.dirs and not parents:
            yield from _err(sh, "mkdir", f"can't create directory '{name}': File exists" if _busybox(sh)
                            else f"cannot create directory '{name}': File exists")
            status = 1
        elif not parents and posixpath.dirname(path) not in sh.world.files.dirs:
            yield from _err(sh, "mkdir", f"can't create directory '{name}': No such file or directory" if _busybox(sh)
                            else f"cannot create directory '{name}': No such file or directory")
            status = 1
        else:
            sh.world.files.mkdirs(path)
    return status


def rm(sh: Shell, argv: list[str]) -> Gen:
    flags = "".join(a[1:] for a in argv[1:] if a.startswith("-"))
    files = sh.world.files
    status = 0
    for name in (a for a in argv[1:] if not a.startswith("-")):
        path = files.normalize(name, sh.cwd)
        if path in files.files:
            del files.files[path]
        elif path in files.dirs and "r" in flags.lower():
            files.dirs = {d for d in files.dirs if d != path and not d.startswith(path + "/")}
            files.files = {p: t for p, t in files.files.items() if not p.startswith(path + "/")}
        elif "f" not in flags:
            yield from _err(sh, "rm", f"can't remove '{name}': No such file or directory" if _busybox(sh)
                            else f"cannot remove '{name}': No such file or directory")
            status = 1
    return status


def ls(sh: Shell, argv: list[str]) -> Gen:
    flags = "".join(a[1:] for a in argv[1:] if a.startswith("-"))
    targets = [a for a in argv[1:] if not a.startswith("-")] or ["."]
    files = sh.world.files
    status = 0
    for name in targets:
        path = files.normalize(name, sh.cwd)
        if path in files.dirs:
            entries = files.listdir(path)
            if "a" in flags:
                entries = [".", ".."] + entries
            if len(targets) > 1:
                yield from _out(sh, f"{name}:\n")
            yield from _out(sh, "".join(e + "\n" for e in entries))
        elif path in files.files:
            yield from _out(sh, name + "\n")
        else:
            yield from _err(sh, "ls", f"{name}: No such file or directory" if _busybox(sh)
                            else f"cannot access '{name}': No such file or directory")
            status = 1 if _busybox(sh) else 2
    return status


def basename(sh: Shell, argv: list[str]) -> Gen:
    if len(argv) < 2:
        yield from _err(sh, "basename", "missing operand")
        return 1
    name = posixpath.basename(argv[1].rstrip("/")) or "/"
    if len(argv) > 2 and name.endswith(argv[2]) and name != argv[2]:
        name = name[: -len(argv[2])]
    yield from _out(sh, name + "\n")
    return 0


def dirname(sh: Shell, argv: list[str]) -> Gen:
    if len(argv) < 2:
        yield from _err(sh, "dirname", "missing operand")
        return 1
    yield from _out(sh, (posixpath.dirname(argv[1].rstrip("/")) or ".") + "\n")
    return 0


def seq(sh: Shell, argv: list[str]) -> Gen:
    sep, args = "\n", []
    rest = argv[1:]
    while rest:
        a = rest.pop(0)
        if a == "-s" and rest:
            sep = rest.pop(0)
        else:
            args.append(a)
    try:
        nums = [float(a) for a in args]
    except ValueError:
        bad = next(a for a in args if not re.fullmatch(r"-?\d+(\.\d+)?", a))
        yield from _err(sh, "seq", f"invalid floating point argument: '{bad}'" if not _busybox(sh)
                        else f"invalid number '{bad}'")
        return 1
    if not 1 <= len(nums) <= 3:
        yield from _err(sh, "seq", "missing operand")
        return 1
    first, step, last = (1.0, 1.0, nums[0]) if len(nums) == 1 else \
        (nums[0], 1.0, nums[1]) if len(nums) == 2 else (nums[0], nums[1], nums[2])
    integral = all(n == int(n) for n in (first, step, last))
    values = []
    v = first
    while (step > 0 and v <= last + 1e-9) or (step < 0 and v >= last - 1e-9):
        values.append(str(int(v)) if integral else f"{v:g}")
        v += step
        if len(values) > 1_000_000:
            break
        if sh.world.budget.spend():
            yield BUSY
    if values:
        yield from _out(sh, sep.join(values) + "\n")
    return 0


# --- tests and control --------------------------------------------------------
def test(sh: Shell, argv: list[str]) -> Gen:
    args = argv[1:]
    if argv[0] == "[":
        if not args or args[-1] != "]":
            yield from sh.error("[: missing ]")
            return 2
        args = args[:-1]
    try:
        return 0 if _test(sh, args) else 1
    except ValueError as exc:
        yield from sh.error(f"{argv[0]}: {exc}")
        return 2


def _test(sh: Shell, args: list[str]) -> bool:
    if not args:
        return False
    if args[0] == "!":
        return not _test(sh, args[1:])
    for joiner in ("-o", "-a"):
        if joiner in args[1:-1]:
            i = args.index(joiner, 1)
            left, right = _test(sh, args[:i]), _test(sh, args[i + 1:])
            return (left or right) if joiner == "-o" else (left and right)
    if len(args) == 1:
        return args[0] != ""
    if len(args) == 2:
        op, value = args
        files = sh.world.files
        path = files.normalize(value, sh.cwd) if value else ""
        if op == "-z":
            return value == ""
        if op == "-n":
            return value != ""
        if op == "-e":
            return files.exists(path) or path.startswith("/dev/null")
        if op == "-f":
            return path in files.files
        if op == "-d":
            return path in files.dirs
        if op == "-s":
            return bool(files.read(path))
        if op in ("-r", "-w"):
            return files.exists(path)
        if op == "-x":
            return files.executable(path) if path in files.files else path in files.dirs
        raise ValueError(f"{op}: unexpected operator")
    if len(args) == 3:
        a, op, b = args
        if op in ("=", "=="):
            return a == b
        if op == "!=":
            return a != b
        if op in ("-eq", "-ne", "-lt", "-le", "-gt", "-ge"):
            try:
                x, y = int(a), int(b)
            except ValueError:
                raise ValueError(f"Illegal number: {a if not re.fullmatch(r'-?[0-9]+', a) else b}") from None
            return {"-eq": x == y, "-ne": x != y, "-lt": x < y, "-le": x <= y, "-gt": x > y, "-ge": x >= y}[op]
        raise ValueError(f"{op}: unexpected operator")
    raise ValueError("too many arguments")


def kill(sh: Shell, argv: list[str]) -> Gen:
    """Signals are not delivered between emulated processes; ``kill`` reports success."""
    yield from ()
    return 0


# --- shells -------------------------------------------------------------------
def shell(sh: Shell, argv: list[str]) -> Gen:
    """``sh``/``bash``/``ash``/``dash`` run as a program: ``-c SCRIPT [NAME [ARGS]]``, ``FILE [ARGS]`` or stdin."""
    invoked = posixpath.basename(argv[0])
    flavour = {"bash": "bash", "ash": "ash", "dash": "dash"}.get(invoked, sh.world.image.shell or "dash")
    args = argv[1:]
    errexit = xtrace = forced = False
    script = None
    while args and args[0].startswith("-") and args[0] not in ("-", "--"):
        opts = args.pop(0)[1:]
        errexit |= "e" in opts
        xtrace |= "x" in opts
        forced |= "i" in opts
        if "c" in opts:
            if not args:
                yield from sh.emit(2, f"{argv[0]}: -c: option requires an argument\n" if flavour == "bash"
                                   else f"{argv[0]}: 0: -c requires an argument\n")
                return 2
            script = args.pop(0)
    if args and args[0] == "--":
        args.pop(0)
    child = sh.child(flavour=flavour, argv0=argv[0], is_pid1=sh.is_pid1 and sh.execing)
    child.errexit, child.xtrace = errexit, xtrace
    if script is not None:
        if args:
            child.argv0, child.positional = args[0], args[1:]
        return (yield from child.run_source(script))
    if args:
        path = sh.world.files.normalize(args[0], sh.cwd)
        text = sh.world.files.read(path)
        if text is None:
            message = {"bash": f"{argv[0]}: {args[0]}: No such file or directory",
                       "ash": f"{argv[0]}: can't open '{args[0]}': No such file or directory"}.get(
                flavour, f"{argv[0]}: 0: cannot open {args[0]}: No such file")
            yield from sh.emit(2, message + "\n")
            return 127 if flavour != "dash" else 2
        child.argv0, child.positional = args[0], args[1:]
        child.is_pid1 = False
        return (yield from child.run_source(text))
    if isinstance(sh.stdin, InputStream):
        return (yield from interactive.run_commands(child, sh.stdin, interactive=forced or sh.stdin.terminal))
    if sh.stdin:
        return (yield from child.run_source(sh.stdin))
    return 0


UTILITIES: dict[str, Utility] = {
    "echo": echo, "printf": printf, "sleep": sleep, "date": date, "env": env, "printenv": printenv,
    "hostname": hostname, "whoami": whoami, "id": id_, "uname": uname, "nproc": nproc, "uptime": uptime, "pwd": pwd,
    "true": true, "false": false, "cat": cat, "head": head, "tail": tail, "grep": grep, "wc": wc, "sort": sort,
    "tee": tee, "tr": tr, "cut": cut, "touch": touch, "mkdir": mkdir, "rm": rm, "ls": ls, "basename": basename, "dirname": dirname,
    "seq": seq, "test": test, "[": test, "kill": kill, "sh": shell, "bash": shell, "ash": shell, "dash": shell,
    "gzip": gzip, "gunzip": gunzip, "zcat": zcat,
}


# --- special built-ins (only inside a shell) ------------------------------------
def run_builtin(sh: Shell, argv: list[str]) -> Gen:
    name, args = argv[0], argv[1:]
    if name in (":", "wait", "trap"):
        return 0
    if name == "exit":
        try:
            status = int(args[0]) & 0xFF if args else sh.status
        except ValueError:
            yield from sh.error(f"exit: Illegal number: {args[0]}")
            status = 2
        raise ExitShell(status)
    if name in ("export", "readonly"):
        for arg in (a for a in args if not a.startswith("-")):
            var, eq, value = arg.partition("=")
            if eq:
                sh.vars[var] = value
            sh.exported.add(var)
        return 0
    if name == "unset":
        for var in (a for a in args if not a.startswith("-")):
            sh.vars.pop(var, None)
            sh.exported.discard(var)
        return 0
    if name == "set":
        return _set(sh, args)
    if name == "shift":
        n = int(args[0]) if args else 1
        if n > len(sh.positional):
            yield from sh.error("shift: can't shift that many")
            return 2
        sh.positional = sh.positional[n:]
        return 0
    if name == "cd":
        target = sh.world.files.normalize(args[0] if args else "/root", sh.cwd)
        if target not in sh.world.files.dirs:
            yield from sh.error(f"cd: can't cd to {args[0] if args else '/root'}")
            return 2
        sh.cwd = target
        return 0
    if name == "exec":
        prog = sh.world.find_program(args, sh.utilities)
        if prog is None:
            yield from sh.error(f"exec: {args[0]}: not found")
            raise ExitShell(127)
        if sh.is_pid1:
            sh.world.pid1_stop = prog.stop
        sh.execing = True
        raise ExitShell((yield from sh.run_program(prog, args)))
    if name == "eval":
        return (yield from sh.run_seq(Parser(" ".join(args)).parse_script()))
    if name in (".", "source"):
        text = sh.world.files.read(sh.world.files.normalize(args[0], sh.cwd)) if args else None
        if text is None:
            yield from sh.error(f"{name}: cannot open {args[0] if args else ''}: No such file")
            return 2
        return (yield from sh.run_seq(Parser(text).parse_script()))
    if name == "read":
        line = yield from sh.read_stdin_line()
        if line is None:
            return 1
        line = line.removesuffix("\n")
        names = [a for a in args if not a.startswith("-")] or ["REPLY"]
        values = line.split(None, len(names) - 1)
        for i, var in enumerate(names):
            sh.vars[var] = values[i] if i < len(values) else ""
        return 0
    if name == "return":
        yield from sh.error("return: not in a function")
        return 2
    if name == "echo":
        return (yield from _builtin_echo(sh, argv))
    return (yield from UTILITIES[name](sh, argv))


def _set(sh: Shell, args: list[str]) -> int:
    while args:
        arg = args.pop(0)
        if arg == "--":
            sh.positional = list(args)
            return 0
        if arg in ("-o", "+o"):
            if args:
                args.pop(0)  # pipefail, nounset...: accepted
            continue
        if arg[:1] in ("-", "+"):
            on = arg[0] == "-"
            if "e" in arg:
                sh.errexit = on
            if "x" in arg:
                sh.xtrace = on
            continue
        sh.positional = [arg] + list(args)
        return 0
    return 0
