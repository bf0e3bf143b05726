"""Files and folders only their owner can read, from the first byte on.

A cluster's state folder holds its CA key, its bearer token and (in ``state.db``) every Secret in clear, as
etcd keeps them without an encryption provider. A ``write_text`` followed by ``chmod`` leaves a moment in
which another user can open the file; these helpers create everything with its final mode instead.
"""
from __future__ import annotations

import os
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700


def private_dir(path: Path) -> Path:
    """Create ``path`` 0700, and so any missing parent; tighten ``path`` itself if it exists with wider
    permissions (parents that exist already are left as they are)."""
    missing = []
    for folder in (path, *path.parents):
        if folder.exists():
            break
        missing.append(folder)
    for folder in reversed(missing):
        folder.mkdir(mode=DIR_MODE, exist_ok=True)
    if path.stat().st_mode & 0o077:
        path.chmod(DIR_MODE)
    return path


def write_private(path: Path, data: str | bytes) -> None:
    """Replace ``path`` atomically with ``data``, the new file 0600 from its creation."""
    raw = data.encode() if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)  # O_CREAT's mode does not apply to a file left over from a crash
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)


def open_private_append(path: Path):
    """``path`` opened for appending in binary, created 0600 (a log handed to a child process)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
    os.fchmod(fd, FILE_MODE)
    return os.fdopen(fd, "ab")
