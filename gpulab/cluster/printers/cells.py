"""Cell formatting shared by the printers: ages, timestamps, labels, selectors, containers.

Each helper names the upstream function it reproduces (printers.go's
translateTimestampSince, k8s.io/apimachinery's labels.FormatLabels and
metav1.FormatLabelSelector, ...). Times are handled as integer microseconds
since the epoch so that unit boundaries land exactly where Go's do.
"""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from ..humanize import human_duration

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})$", re.ASCII)
GO_ZERO_TIME = "0001-01-01T00:00:00Z"


def parse_rfc3339(text: str) -> int | None:
    """time.Parse(time.RFC3339, text) as microseconds since the epoch; None if it does not parse."""
    m = _RFC3339.match(text)
    if m is None:
        return None
    year, month, day, hour, minute, second, frac, zone = m.groups()
    tz = timezone.utc
    if zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        tz = timezone(sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
    try:
        when = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second),
                        int((frac or "0")[:6].ljust(6, "0")), tzinfo=tz)
    except ValueError:
        return None
    return (when - _EPOCH) // timedelta(microseconds=1)


ZERO_TIME_US = parse_rfc3339(GO_ZERO_TIME)


def time_of(value) -> int | None:
    """A metav1.Time / MicroTime field as microseconds; None when unset (Go's zero time)."""
    if not isinstance(value, str) or not value:
        return None
    micros = parse_rfc3339(value)
    return None if micros == ZERO_TIME_US else micros


def format_rfc3339(micros: int | None) -> str:
    """Time.UTC().Format(time.RFC3339), whole seconds; Go's zero time for an unset one."""
    if micros is None:
        return GO_ZERO_TIME
    return datetime.fromtimestamp(micros // 1_000_000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def to_micros(now: float) -> int:
    return round(now * 1_000_000)


def duration(micros: int) -> str:
    """duration.HumanDuration of a span given in microseconds."""
    return human_duration(timedelta(microseconds=micros))


def since(value, now_us: int) -> str:
    """translateTimestampSince / translateMicroTimestampSince: ``<unknown>`` for an unset time."""
    when = time_of(value)
    return "<unknown>" if when is None else duration(now_us - when)


def age(obj: dict, now_us: int) -> str:
    return since((obj.get("metadata") or {}).get("creationTimestamp"), now_us)


def name(obj: dict) -> str:
    return (obj.get("metadata") or {}).get("name", "")


def format_labels(labels: dict | None) -> str:
    """labels.FormatLabels: ``k=v`` sorted by key, comma separated; ``<none>`` when empty."""
    text = ",".join(f"{k}={v}" for k, v in sorted((labels or {}).items()))
    return text or "<none>"


def selector_string(selector: dict | None) -> str:
    """metav1.LabelSelectorAsSelector(selector).String(): requirements sorted by key."""
    if not selector:
        return ""
    requirements = [(k, f"{k}={v}") for k, v in (selector.get("matchLabels") or {}).items()]
    for expr in selector.get("matchExpressions") or ():
        key, op, values = expr.get("key", ""), expr.get("operator"), ",".join(sorted(expr.get("values") or ()))
        text = {"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})", "Exists": key,
                "DoesNotExist": f"!{key}"}.get(op)
        if text is None:
            raise ValueError(f"{op!r} is not a valid label selector operator")
        requirements.append((key, text))
    return ",".join(text for _, text in sorted(requirements, key=lambda r: r[0]))


def format_label_selector(selector: dict | None) -> str:
    """metav1.FormatLabelSelector: ``<none>`` for an empty selector, ``<error>`` for an invalid one."""
    try:
        return selector_string(selector) or "<none>"
    except ValueError:
        return "<error>"


def container_cells(pod_spec: dict | None) -> list[str]:
    """layoutContainerCells: the containers' names and images, each comma separated."""
    containers = (pod_spec or {}).get("containers") or []
    return [",".join(c.get("name", "") for c in containers), ",".join(c.get("image", "") for c in containers)]
