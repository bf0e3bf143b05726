"""batch/v1 CronJobs: ports of ValidateCronJobCreate, ValidateCronJobUpdate, validateCronJobSpec,
validateScheduleFormat, validateTimeZone, validateConcurrencyPolicy and ValidateJobTemplateSpec in
pkg/apis/batch/validation/validation.go, with the strategy's WarningsOnCreate
(pkg/registry/batch/cronjob/strategy.go).

The job template's spec is checked by the Job validation's validateJobSpec
(its errors re-rooted under ``spec.jobTemplate.spec``).
"""
from __future__ import annotations

import re
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .. import cron
from ..errors import FieldError
from .apps import selector_json
from .batch import _job_spec_fields
from .field import invalid, non_negative, not_supported, required
from .formats import is_dns1123_label, name_is_dns_subdomain
from .meta import validate_object_meta, validate_object_meta_update
from .path import Path

SPEC = Path("spec")
_JOB_SPEC = "spec.jobTemplate.spec"
_CONCURRENCY = ["Allow", "Forbid", "Replace"]
_TZ_CHARS = re.compile(r"^[A-Za-z\.\-_0-9+]{1,14}$")
_MAX_NAME = 63 - 11  # the controller appends "-<minutes since the epoch>" to make a Job's name


def _schedule(schedule: str, allow_tz: bool, time_zone: str | None) -> list[FieldError]:
    path = SPEC.child("schedule")
    errs = []
    try:
        cron.parse_standard(schedule)
    except cron.CronError as exc:
        errs.append(invalid(path, schedule, str(exc)))
    if allow_tz and "TZ" in schedule and time_zone is not None:
        errs.append(invalid(path, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
    elif not allow_tz and "TZ" in schedule:
        errs.append(invalid(path, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
    return errs


def _time_zone(time_zone: str | None) -> list[FieldError]:
    path = SPEC.child("timeZone")
    if time_zone is None:
        return []
    if not time_zone:
        return [invalid(path, time_zone, "timeZone must be nil or non-empty string")]
    for part in time_zone.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TZ_CHARS.match(part):
            return [invalid(path, time_zone, f"unknown time zone {time_zone}")]
    errs = []
    if time_zone.lower() == "local":
        errs.append(invalid(path, time_zone, "timeZone must be an explicit time zone as defined in "
                                             "https://www.iana.org/time-zones"))
    try:
        ZoneInfo(time_zone)
    except (ZoneInfoNotFoundError, ValueError):
        errs.append(invalid(path, time_zone, f"unknown time zone {time_zone}"))
    return errs


def _reroot(errs: list[FieldError]) -> list[FieldError]:
    """The Job spec's errors, reported under the job template."""
    return [FieldError(e.type, _JOB_SPEC + e.field[len("spec"):], e.bad_value, e.detail) for e in errs]


def _spec(spec: dict, old_spec: dict | None) -> list[FieldError]:
    errs: list[FieldError] = []
    schedule = spec.get("schedule") or ""
    if not schedule:
        errs.append(required(SPEC.child("schedule")))
    else:
        allow_tz = old_spec is not None and "TZ" in (old_spec.get("schedule") or "")
        errs.extend(_schedule(schedule, allow_tz, spec.get("timeZone")))
    if spec.get("startingDeadlineSeconds") is not None:
        errs.extend(non_negative(int(spec["startingDeadlineSeconds"]), SPEC.child("startingDeadlineSeconds")))
    if old_spec is None or old_spec.get("timeZone") != spec.get("timeZone"):
        errs.extend(_time_zone(spec.get("timeZone")))
    policy = spec.get("concurrencyPolicy") or ""
    if not policy:
        errs.append(required(SPEC.child("concurrencyPolicy")))
    elif policy not in _CONCURRENCY:
        errs.append(not_supported(SPEC.child("concurrencyPolicy"), policy, _CONCURRENCY))
    job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    errs.extend(_reroot(_job_spec_fields(job_spec)))
    if job_spec.get("selector") is not None:
        errs.append(invalid(Path(_JOB_SPEC).child("selector"), selector_json(job_spec["selector"]),
                            "`selector` will be auto-generated"))
    if job_spec.get("manualSelector"):
        errs.append(not_supported(Path(_JOB_SPEC).child("manualSelector"), True, ["nil", "false"]))
    for field in ("successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        if spec.get(field) is not None:
            errs.extend(non_negative(int(spec[field]), SPEC.child(field)))
    return errs


def validate_cronjob(cj: dict) -> list[FieldError]:
    meta = cj.get("metadata") or {}
    errs = validate_object_meta(meta, True, name_is_dns_subdomain)
    errs.extend(_spec(cj.get("spec") or {}, None))
    if len(meta.get("name") or "") > _MAX_NAME:
        errs.append(invalid(Path("metadata").child("name"), meta.get("name"), "must be no more than 52 characters"))
    return errs


def validate_cronjob_update(new: dict, old: dict) -> list[FieldError]:
    """The 52-character name limit is not checked again, so old CronJobs with longer names stay editable."""
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    return errs + _spec(new.get("spec") or {}, old.get("spec") or {})


def cronjob_warnings(cj: dict) -> list[str]:
    """WarningsOnCreate: a name that is no DNS label, and a TZ in the schedule."""
    warnings = []
    msgs = is_dns1123_label((cj.get("metadata") or {}).get("name") or "")
    if msgs:
        warnings.append("metadata.name: this is used in Pod names and hostnames, which can result in surprising "
                        f"behavior; a DNS label is recommended: [{' '.join(msgs)}]")
    schedule = (cj.get("spec") or {}).get("schedule") or ""
    if "TZ" in schedule:
        warnings.append(f"cronjob.spec.schedule: CRON_TZ or TZ used in {schedule} is not officially supported, see "
                        "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details")
    return warnings
