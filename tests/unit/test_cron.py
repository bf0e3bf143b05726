"""robfig/cron's parser and Next (gpulab.cluster.cron), as the CronJob validation and controller use them."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from gpulab.cluster import cron


def _t(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M")


@pytest.mark.parametrize("spec, message", [
    ("", "empty spec string"),
    ("foo", "expected exactly 5 fields, found 1: [foo]"),
    ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
    ("61 * * * *", "end of range (61) above maximum (59): 61"),
    ("* 24 * * *", "end of range (24) above maximum (23): 24"),
    ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
    ("5-2 * * * *", "beginning of range (5) beyond end of range (2): 5-2"),
    ("*/0 * * * *", "step of range should be a positive number: */0"),
    ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
    ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
    ("@fortnightly", "unrecognized descriptor: @fortnightly"),
    ("@every 5x", 'failed to parse duration @every 5x: time: invalid duration "5x"'),
])
def test_refused_schedules_say_what_robfig_says(spec, message):
    with pytest.raises(cron.CronError) as err:
        cron.parse_standard(spec)
    assert str(err.value) == message


@pytest.mark.parametrize("spec, after, expected", [
    ("*/15 * * * *", "2026-03-01 10:07", "2026-03-01 10:15"),
    ("0 3 * * *", "2026-03-01 03:00", "2026-03-02 03:00"),
    ("30 9 * * mon-fri", "2026-03-06 10:00", "2026-03-09 09:30"),  # a Friday: next is Monday
    ("0 0 1 jan *", "2026-03-01 00:00", "2027-01-01 00:00"),
    ("0 12 13 * 5", "2026-03-01 00:00", "2026-03-06 12:00"),  # day-of-month OR day-of-week when both set
    ("0 12 13 * *", "2026-03-01 00:00", "2026-03-13 12:00"),
    ("@hourly", "2026-03-01 10:30", "2026-03-01 11:00"),
    ("5/20 * * * *", "2026-03-01 10:30", "2026-03-01 10:45"),
])
def test_next_activation(spec, after, expected):
    assert _iso(cron.parse_standard(spec).next(_t(after))) == expected


def test_time_zone_prefix_and_constant_delay():
    schedule = cron.parse_standard("TZ=Europe/Berlin 0 9 * * *")
    assert _iso(schedule.next(_t("2026-01-10 00:00"))) == "2026-01-10 08:00"  # 09:00 CET
    assert cron.parse_standard("@every 90s").next(_t("2026-01-10 00:00")) == _t("2026-01-10 00:00") + 90
    with pytest.raises(cron.CronError, match="provided bad location Nowhere/City"):
        cron.parse_standard("TZ=Nowhere/City * * * * *")
