"""Whom a submission's kernel runs as when grading as root: a uid of its own, which no account and no other
submission being graded uses.

With one shared account (``nobody``), every sandbox's processes counted
against one ``RLIMIT_NPROC``, so one fork bomb stopped every kernel graded
beside it. Here each sandbox leases the first free uid of a range
(``c.HermeticExecute.sandbox_uids``): a lock file named after it, held with
``flock`` while its notebook is graded. The kernel releases the lock when the
holder ends however it ends, so concurrent gradings (``gpulab grade`` processes,
or separate ``nbgrader autograde`` runs) never share a uid. No process may
run as a leased uid but the sandbox's: any left over (a sandbox whose grading
process was killed a moment ago) is killed when the uid is taken and again
when it is given back. The uid is also the kernel's gid.

Grading as an ordinary user needs none of this: each sandbox is a user
namespace of its own, and Linux counts processes per namespace.
"""
from __future__ import annotations

import fcntl
import grp
import os
import pwd
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

DEFAULT_UIDS = "1900000000-1900000999"    # above the ranges distributions, systemd and container runtimes use
LOCK_DIRECTORY = Path("/run/gpulab-sandbox-uids")   # root's alone; one place whatever TMPDIR says


class IdentityError(RuntimeError):
    """No uid can be given to a sandbox; the message says what to do."""


def parse_uids(text: str) -> range:
    """``FIRST-LAST`` as a range of uids no account or group owns, or ValueError saying what is wrong."""
    setting = "c.HermeticExecute.sandbox_uids"
    try:
        first, last = (int(part) for part in str(text).split("-"))
    except ValueError:
        raise ValueError(f"{setting} {text!r} is not a range of uids: write FIRST-LAST, e.g. {DEFAULT_UIDS}") from None
    if not 0 < first <= last < 2**32 - 1:
        raise ValueError(f"{setting} {text!r}: the uids must be above 0 (root) and below 4294967295, FIRST <= LAST")
    uids = range(first, last + 1)
    taken = sorted({f"{p.pw_name} ({p.pw_uid})" for p in pwd.getpwall() if p.pw_uid in uids} |
                   {f"group {g.gr_name} ({g.gr_gid})" for g in grp.getgrall() if g.gr_gid in uids})
    if taken:
        raise ValueError(f"{setting} {text!r} holds uids or gids of this system's accounts: {', '.join(taken)}. "
                         "Learner kernels need uids nothing else uses: choose a range without them")
    return uids


@contextmanager
def lease(uids: range) -> Iterator[int]:
    """The first uid of ``uids`` no other sandbox holds, held until the block ends."""
    directory = _lock_directory()
    for uid in uids:
        fd = os.open(directory / str(uid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            kill_processes_of(uid)
            yield uid
        finally:
            kill_processes_of(uid)
            os.close(fd)
        return
    raise IdentityError(f"all {len(uids)} uids of c.HermeticExecute.sandbox_uids are being used by sandboxes "
                        "graded now: give it a larger range, or grade fewer submissions at once")


def kill_processes_of(uid: int) -> None:
    for process in psutil.process_iter(["uids"]):
        if process.info["uids"] is not None and process.info["uids"].real == uid:
            try:
                process.kill()
            except psutil.Error:
                pass


def _lock_directory() -> Path:
    """Root's own folder for the leases (a folder of that name that is anyone else's is refused, not used)."""
    directory = LOCK_DIRECTORY
    try:
        directory.mkdir(mode=0o700)
    except FileExistsError:
        pass
    found = os.lstat(directory)
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != 0 or found.st_mode & 0o022:
        raise IdentityError(f"{directory} is not a folder root alone may write: remove it, and grade again")
    return directory
