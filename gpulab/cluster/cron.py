"""Cron schedules as kube-controller-manager and kube-apiserver read them: github.com/robfig/cron/v3.

Both the CronJob validation (``cron.ParseStandard``) and the CronJob
controller (``Schedule.Next``) use robfig/cron; this is a port of its
parser.go (five fields, ranges, steps, month and weekday names, ``@hourly``
and the other descriptors, ``@every <duration>``, a ``TZ=``/``CRON_TZ=``
prefix) and spec.go (``SpecSchedule.Next`` with its day-of-month / day-of-week
rule: both must match when either is ``*``, else either may). Why
hand-written: the Python cron libraries (croniter and friends) word their
errors differently and disagree with robfig on edge cases (``?``, the
star bit, ``N/step``), and the API must answer with robfig's exact messages,
e.g. ``expected exactly 5 fields, found 1: [foo]``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_STAR_BIT = 1 << 63


class CronError(ValueError):
    """A schedule robfig/cron refuses; ``str()`` is its error text."""


@dataclass(frozen=True)
class _Bounds:
    low: int
    high: int
    names: dict[str, int] | None = None


_MINUTES, _HOURS, _DOM = _Bounds(0, 59), _Bounds(0, 23), _Bounds(1, 31)
_MONTHS = _Bounds(1, 12, {m: i + 1 for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))})
_DOW = _Bounds(0, 6, {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))})
_DESCRIPTORS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
                "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}


def _atoi(text: str) -> int:
    """strconv.Atoi with its error text."""
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise CronError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax')
    value = int(text)
    if not -2 ** 63 <= value < 2 ** 63:
        raise CronError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": value out of range')
    if value < 0:
        raise CronError(f"negative number ({value}) not allowed: {text}")
    return value


def _int_or_name(text: str, names: dict[str, int] | None) -> int:
    if names and text.lower() in names:
        return names[text.lower()]
    return _atoi(text)


def _range(expr: str, bounds: _Bounds) -> int:
    """getRange: the bits of ``low-high/step`` (a bare ``*`` also sets the star bit)."""
    range_and_step = expr.split("/")
    low_high = range_and_step[0].split("-")
    extra = 0
    if low_high[0] in ("*", "?"):
        start, end, extra = bounds.low, bounds.high, _STAR_BIT
    else:
        start = _int_or_name(low_high[0], bounds.names)
        if len(low_high) == 1:
            end = start
        elif len(low_high) == 2:
            end = _int_or_name(low_high[1], bounds.names)
        else:
            raise CronError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _atoi(range_and_step[1])
        if len(low_high) == 1:  # "N/step" means "N-max/step"
            end = bounds.high
        if step > 1:
            extra = 0
    else:
        raise CronError(f"too many slashes: {expr}")
    if start < bounds.low:
        raise CronError(f"beginning of range ({start}) below minimum ({bounds.low}): {expr}")
    if end > bounds.high:
        raise CronError(f"end of range ({end}) above maximum ({bounds.high}): {expr}")
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise CronError(f"step of range should be a positive number: {expr}")
    bits = 0
    for i in range(start, end + 1, step):
        bits |= 1 << i
    return bits | extra


def _field(text: str, bounds: _Bounds) -> int:
    bits = 0
    for expr in (part for part in text.split(",") if part):
        bits |= _range(expr, bounds)
    return bits


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule: minute/hour/day/month/weekday bits, or a constant delay (``@every``)."""

    minute: int = 0
    hour: int = 0
    dom: int = 0
    month: int = 0
    dow: int = 0
    every: timedelta | None = None
    zone: str | None = None

    def _day_matches(self, t: datetime) -> bool:
        dom = bool(1 << t.day & self.dom)
        dow = bool(1 << ((t.weekday() + 1) % 7) & self.dow)
        if self.dom & _STAR_BIT or self.dow & _STAR_BIT:
            return dom and dow
        return dom or dow

    def next(self, after: float) -> float | None:
        """Schedule.Next: the first activation strictly after ``after`` (epoch seconds); None past five years."""
        if self.every is not None:  # ConstantDelaySchedule: the delay after the whole second
            return int(after) + self.every.total_seconds()
        zone = ZoneInfo(self.zone) if self.zone else timezone.utc
        t = datetime.fromtimestamp(int(after) + 1, zone).replace(second=0)
        if int(after) + 1 > t.timestamp():
            t += timedelta(minutes=1)
        year_limit = t.year + 5
        while t.year <= year_limit:
            if not 1 << t.month & self.month:
                t = (t.replace(day=1, hour=0, minute=0) + timedelta(days=32)).replace(day=1)
                continue
            if not self._day_matches(t):
                t = (t.replace(hour=0, minute=0) + timedelta(days=1))
                continue
            if not 1 << t.hour & self.hour:
                t = t.replace(minute=0) + timedelta(hours=1)
                continue
            if not 1 << t.minute & self.minute:
                t += timedelta(minutes=1)
                continue
            return t.timestamp()
        return None


def _go_duration(text: str) -> timedelta:
    """time.ParseDuration for the units a schedule uses (h, m, s, ms, us, ns); ValueError with Go's text."""
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
    if not text:
        raise ValueError(f'time: invalid duration "{text}"')
    parts = re.findall(r"([0-9]*\.?[0-9]+)(ns|us|µs|ms|s|m|h)", text)
    if not parts or "".join(n + u for n, u in parts) != text.lstrip("+"):
        raise ValueError(f'time: invalid duration "{text}"')
    return timedelta(seconds=sum(float(n) * units[u] for n, u in parts))


def parse_standard(spec: str) -> Schedule:
    """cron.ParseStandard: five fields or a descriptor, an optional ``TZ=``/``CRON_TZ=`` prefix."""
    if not spec:
        raise CronError("empty spec string")
    zone = None
    if spec.startswith("TZ=") or spec.startswith("CRON_TZ="):
        space, eq = spec.find(" "), spec.find("=")
        name = spec[eq + 1:space] if space >= 0 else spec[eq + 1:]
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise CronError(f"provided bad location {name}: unknown time zone {name}") from None
        zone = name
        spec = spec[space:].strip() if space >= 0 else ""
    if spec.startswith("@"):
        if spec in _DESCRIPTORS:
            return _fields(_DESCRIPTORS[spec].split(), zone)
        if spec.startswith("@every "):
            try:
                delay = _go_duration(spec[len("@every "):])
            except ValueError as exc:
                raise CronError(f"failed to parse duration {spec}: {exc}") from None
            return Schedule(every=max(timedelta(seconds=int(delay.total_seconds())), timedelta(seconds=1)),
                            zone=zone)
        raise CronError(f"unrecognized descriptor: {spec}")
    fields = spec.split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    return _fields(fields, zone)


def _fields(fields: list[str], zone: str | None) -> Schedule:
    return Schedule(minute=_field(fields[0], _MINUTES), hour=_field(fields[1], _HOURS), dom=_field(fields[2], _DOM),
                    month=_field(fields[3], _MONTHS), dow=_field(fields[4], _DOW), zone=zone)
