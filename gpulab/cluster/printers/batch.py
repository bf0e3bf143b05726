"""The CronJob printer: printCronJob in kubernetes/pkg/printers/internalversion/printers.go (descriptions from
the served batch/v1 types where upstream reads batch/v1beta1)."""
from __future__ import annotations

from .cells import age, container_cells, format_label_selector, name, since
from .columns import BATCH, age_column, column, doc, name_column, template_columns


def cronjob_columns() -> list[dict]:
    spec = BATCH + "CronJobSpec"
    return [name_column(), column("Schedule", description=doc(spec, "schedule")),
            column("Timezone", description=doc(spec, "timeZone")),
            column("Suspend", "boolean", doc(spec, "suspend")),
            column("Active", "integer", doc(BATCH + "CronJobStatus", "active")),
            column("Last Schedule", description=doc(BATCH + "CronJobStatus", "lastScheduleTime")), age_column(),
            *template_columns(doc(BATCH + "JobSpec", "selector"))]


def _bool_ptr(value) -> str:
    """printBoolPtr."""
    return "<unset>" if value is None else ("True" if value else "False")


def cronjob_cells(cj: dict, now_us: int) -> list:
    spec, status = cj.get("spec") or {}, cj.get("status") or {}
    job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    last = status.get("lastScheduleTime")
    return [name(cj), spec.get("schedule", ""), spec.get("timeZone") or "<none>", _bool_ptr(spec.get("suspend")),
            len(status.get("active") or []), "<none>" if last is None else since(last, now_us), age(cj, now_us),
            *container_cells((job_spec.get("template") or {}).get("spec")),
            format_label_selector(job_spec.get("selector"))]
