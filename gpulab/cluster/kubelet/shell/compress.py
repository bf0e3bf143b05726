"""``gzip``, ``gunzip`` and ``zcat``: the one binary filter scripts commonly pipe through.

The interpreter passes text between commands; binary data travels as text that keeps every byte
(octets.py), so that the exec and attach streams deliver the bytes unchanged:
``sh -c 'echo -n hi | gzip'`` through ``kubectl exec`` yields a gzip stream ``gzip -d`` accepts.
Options: ``-c`` (to stdout), ``-d`` (decompress), ``-k`` (keep the input), ``-f``, ``-1``..``-9``;
without ``-c`` a named FILE is replaced by FILE.gz (and back), as both GNU gzip and BusyBox do. Errors
are worded as GNU gzip words them in Debian-based images, as BusyBox does in busybox and alpine.
"""
from __future__ import annotations

import gzip as _gzip
import zlib

from .interpreter import Gen, Shell
from .octets import to_bytes, to_text

_OS_UNIX = 3     # the OS byte of the gzip header (RFC 1952) that both implementations write on Linux


def _compress(data: bytes, level: int, mtime: float) -> bytes:
    packed = bytearray(_gzip.compress(data, compresslevel=level, mtime=int(mtime)))
    packed[9] = _OS_UNIX
    return bytes(packed)


def _decompress(data: bytes) -> bytes | None:
    """The concatenated members of a gzip stream; None when it is not one."""
    try:
        return _gzip.decompress(data)
    except (OSError, EOFError, zlib.error):
        return None


def _busybox(sh: Shell) -> bool:
    return sh.world.image.shell == "ash"


def _complain(sh: Shell, prog: str, message: str) -> Gen:
    yield from sh.emit(2, f"{prog}: {message}\n")
    return 1


def _not_gzip(sh: Shell, prog: str, name: str) -> Gen:
    if _busybox(sh):
        return (yield from _complain(sh, prog, "invalid magic"))
    return (yield from _complain(sh, "gzip", f"{name}: not in gzip format"))


def _run(sh: Shell, argv: list[str], decompress: bool, to_stdout: bool) -> Gen:
    prog, level, keep, files = argv[0].rsplit("/", 1)[-1], 6, False, []
    for arg in argv[1:]:
        if arg.startswith("-") and arg != "-":
            for flag in arg[1:]:
                decompress = decompress or flag == "d"
                to_stdout = to_stdout or flag == "c"
                keep = keep or flag == "k"
                level = int(flag) if flag.isdigit() and flag != "0" else level
        else:
            files.append(arg)
    if not files or files == ["-"]:
        data = to_bytes((yield from sh.read_stdin()))
        result = _decompress(data) if decompress else _compress(data, level, sh.world.time)
        if result is None:
            return (yield from _not_gzip(sh, prog, "stdin"))
        yield from sh.emit(1, to_text(result))
        return 0
    status = 0
    for name in files:
        status = max(status, (yield from _one_file(sh, prog, name, decompress, to_stdout, keep, level)))
    return status


def _one_file(sh: Shell, prog: str, name: str, decompress: bool, to_stdout: bool, keep: bool, level: int) -> Gen:
    fs = sh.world.files
    path = fs.normalize(name, sh.cwd)
    text = fs.read(path)
    if text is None:
        reason = "Is a directory" if path in fs.dirs else "No such file or directory"
        return (yield from _complain(sh, prog, f"can't open '{name}': {reason}" if _busybox(sh)
                                     else f"{name}: {reason}"))
    if decompress and not to_stdout and not path.endswith(".gz"):
        if _busybox(sh):
            return (yield from _complain(sh, prog, f"{name}: unknown suffix - ignored"))
        yield from sh.emit(2, f"gzip: {name}: unknown suffix -- ignored\n")
        return 2
    data = to_bytes(text)
    result = _decompress(data) if decompress else _compress(data, level, sh.world.time)
    if result is None:
        return (yield from _not_gzip(sh, prog, name))
    if to_stdout:
        yield from sh.emit(1, to_text(result))
        return 0
    fs.add_file(path[:-3] if decompress else path + ".gz", to_text(result), fs.modes.get(path, 0o644))
    if not keep:
        fs.files.pop(path, None)
        fs.modes.pop(path, None)
    return 0


def gzip(sh: Shell, argv: list[str]) -> Gen:
    return (yield from _run(sh, argv, decompress=False, to_stdout=False))


def gunzip(sh: Shell, argv: list[str]) -> Gen:
    return (yield from _run(sh, argv, decompress=True, to_stdout=False))


def zcat(sh: Shell, argv: list[str]) -> Gen:
    return (yield from _run(sh, argv, decompress=True, to_stdout=True))
