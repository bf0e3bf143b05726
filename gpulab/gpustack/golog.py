"""How the Go logging libraries of NVIDIA's operands print a line: logrus's and log/slog's text formats.

klog's is in :mod:`.configmanager` (``klog``). Both formats here quote a value only where the library does:
logrus (``TextFormatter`` without a terminal) when it holds a character outside ``[A-Za-z0-9-._/@^+]``, slog's text
handler when it is empty or holds a space, ``=``, ``"`` or an unprintable character.
"""
from __future__ import annotations

import re
from datetime import datetime, timezone

_LOGRUS_PLAIN = re.compile(r"^[A-Za-z0-9\-._/@^+]+$")


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def logrus_line(now: float, level: str, msg: str) -> tuple[str, str]:
    """``time="2026-12-03T21:10:59Z" level=info msg="..."`` on stderr (RFC 3339 seconds, UTC)."""
    at = datetime.fromtimestamp(now, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    value = msg if _LOGRUS_PLAIN.match(msg) else _quote(msg)
    return ("stderr", f'time="{at}" level={level} msg={value}\n')


def slog_line(now: float, msg: str, **attrs: str) -> tuple[str, str]:
    """``time=2026-12-03T21:10:59.123Z level=INFO msg="..." key=value`` on stderr (RFC 3339 milliseconds)."""
    stamp = datetime.fromtimestamp(now, tz=timezone.utc)
    at = stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"
    parts = [f"time={at}", "level=INFO", f"msg={_slog_value(msg)}"]
    parts += [f"{k}={_slog_value(v)}" for k, v in attrs.items()]
    return ("stderr", " ".join(parts) + "\n")


def _slog_value(text: str) -> str:
    if not text or any(c in text for c in ' ="') or not text.isprintable():
        return _quote(text)
    return text
