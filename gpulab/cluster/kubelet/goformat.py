"""Go's ``time.Duration.String`` and RFC3339Nano, the two formats the kubelet's messages and logs print.

Kubelet messages embed durations formatted by Go (``Successfully pulled image "x" in 1.393s``,
``back-off 1m20s restarting failed container=...``) and ``kubectl logs --timestamps`` prefixes lines
with ``time.RFC3339Nano`` (trailing zeros of the fraction trimmed). Python's ``timedelta`` and
``isoformat`` print neither form, hence these two short ports of Go's time package.
"""
from __future__ import annotations

from datetime import datetime, timezone


def go_duration(seconds: float) -> str:
    """time.Duration(seconds).String(): ``0s``, ``313ms``, ``1.5s``, ``1m20s``, ``5m0s``, ``1h0m0s``."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns < 1_000:
        return f"{sign}{ns}ns"
    if ns < 1_000_000:
        return sign + _fraction(ns, 1_000) + "µs"
    if ns < 1_000_000_000:
        return sign + _fraction(ns, 1_000_000) + "ms"
    hours, rem = divmod(ns, 3_600_000_000_000)
    minutes, rem = divmod(rem, 60_000_000_000)
    secs = _fraction(rem, 1_000_000_000) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{secs}"
    if minutes:
        return f"{sign}{minutes}m{secs}"
    return sign + secs


def _fraction(value: int, unit: int) -> str:
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{frac:0{digits}d}".rstrip("0")


def truncate_ms(seconds: float) -> float:
    """Duration.Truncate(time.Millisecond)."""
    return int(seconds * 1000) / 1000


def rfc3339_nano(ns: int) -> str:
    """time.RFC3339Nano in UTC: ``2026-03-01T12:00:00.12345Z`` (fraction without trailing zeros)."""
    secs, frac = divmod(ns, 1_000_000_000)
    stamp = datetime.fromtimestamp(secs, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    if frac:
        stamp += "." + f"{frac:09d}".rstrip("0")
    return stamp + "Z"
