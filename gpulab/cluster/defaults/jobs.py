"""A Job's generated selector and labels, which need the Job's uid.

Port of generateSelector in pkg/registry/batch/job/strategy.go (run from the
strategy's PrepareForCreate unless ``spec.manualSelector`` is true). The
labels it adds to the pod template also appear on a Job that had no labels of
its own, because SetDefaults_Job copies the template's labels when the stored
object is read back.
"""
from __future__ import annotations

# (legacy, prefixed) label names: batch.LegacyJobNameLabel / batch.JobNameLabel and the uid pair.
JOB_NAME_LABELS = ("job-name", "batch.kubernetes.io/job-name")
CONTROLLER_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")


def job_prepare_for_create(job: dict) -> None:
    """Add the generated selector and template labels; call after ``metadata.uid`` is set."""
    spec = job.setdefault("spec", {})
    if spec.get("manualSelector"):
        return
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
