"""Jobs: pkg/registry/batch/job/strategy.go.

PrepareForCreate runs generateSelector (unless ``spec.manualSelector``): the
pod template gets the job-name and controller-uid labels and the selector
matches the uid. The labels also appear on a Job that had none of its own,
because SetDefaults_Job copies the template's labels when the stored object is
read back.
"""
from __future__ import annotations

from ..defaults import workloads as defaults
from ..printers import Printer
from ..printers import workloads as printers
from ..registry import ResourceType
from ..validation import batch as validation
from ..validation import pod_warnings
from ..validation.batch import CONTROLLER_UID_LABELS, JOB_NAME_LABELS
from .strategy import Context, Strategy


class JobStrategy(Strategy):
    resource = ResourceType("batch", "v1", "jobs", "Job", True, categories=("all",), subresources=("status",))
    has_generation = True
    printer = Printer(printers.job_columns, printers.job_cells)
    selectable_fields = {"status.successful": None}

    def default(self, obj: dict) -> None:
        defaults.default_job(self.resource, obj)

    def prepare_for_create(self, obj: dict, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        obj["status"] = {}
        if not (obj.get("spec") or {}).get("manualSelector"):
            generate_selector(obj)

    def validate(self, obj: dict) -> list:
        return validation.validate_job(obj)

    def warnings_on_create(self, obj: dict) -> list[str]:
        return pod_warnings.template_warnings(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        if subresource == "status":
            return validation.validate_job_status_update(new, old)
        return validation.validate_job_update(new, old)


def generate_selector(job: dict) -> None:
    """generateSelector: the template labels and the selector, from the job's name and uid."""
    spec = job.setdefault("spec", {})
    meta = job.setdefault("metadata", {})
    name, uid = meta.get("name", ""), meta.get("uid", "")
    template_meta = spec.setdefault("template", {}).setdefault("metadata", {})
    labels = template_meta.get("labels")
    if labels is None:
        labels = template_meta["labels"] = {}
    job_labels_follow_template = not meta.get("labels") or meta.get("labels") == labels
    for key in JOB_NAME_LABELS:
        labels.setdefault(key, name)
    for key in CONTROLLER_UID_LABELS:
        labels.setdefault(key, uid)
    selector = spec.get("selector")
    if selector is None:
        selector = spec["selector"] = {}
    match_labels = selector.get("matchLabels")
    if match_labels is None:
        match_labels = selector["matchLabels"] = {}
    match_labels.setdefault(CONTROLLER_UID_LABELS[1], uid)
    if job_labels_follow_template:
        meta["labels"] = dict(labels)
