"""batch/v1 Jobs: spec rules, the generated selector, and what may change after creation.

Ports of pkg/apis/batch/validation/validation.go (ValidateJob,
validateGeneratedSelector, validateJobSpec, ValidateJobSpecUpdate,
validatePodTemplateUpdate) with the options of
pkg/registry/batch/job/strategy.go (validationOptionsForJob): prefixed
``batch.kubernetes.io/`` labels required, elastic indexed jobs, and mutable
scheduling directives for suspended jobs that never started.
"""
from __future__ import annotations

from ..errors import FieldError
from .apps import selector_json
from .field import immutable, invalid, non_negative, not_supported, required, too_many
from .formats import is_dns1123_label, is_qualified_name, name_is_dns_subdomain
from .labels import selector_matches, selector_parse_error, validate_label_selector
from .meta import validate_object_meta, validate_object_meta_update
from .path import Path
from .pods import normalized, validate_pod_template_spec

# (legacy, prefixed) label names: batch.LegacyJobNameLabel / batch.JobNameLabel and the uid pair, which the job
# strategy's generateSelector adds.
JOB_NAME_LABELS = ("job-name", "batch.kubernetes.io/job-name")
CONTROLLER_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")

SPEC = Path("spec")
_TEMPLATE_META = SPEC.child("template", "metadata")
_MAX_PARALLELISM_INDEXED = 100000
_MAX_FAILED_INDEXES = 100000
_POD_FAILURE_ACTIONS = ["Count", "FailIndex", "FailJob", "Ignore"]
_CONDITION_STATUSES = ["False", "True", "Unknown"]


def _has_label(labels: dict, key: str, expected: str) -> list[FieldError]:
    """ValidateHasLabel."""
    path = _TEMPLATE_META.child("labels").key(key)
    if key not in labels:
        return [required(path, f"must be '{expected}'")]
    if labels[key] != expected:
        return [invalid(path, dict(sorted(labels.items())), f"must be '{expected}'")]
    return []


def _generated_selector(job: dict, require_prefixed: bool) -> list[FieldError]:
    spec, meta = job.get("spec") or {}, job.get("metadata") or {}
    if spec.get("manualSelector") or spec.get("selector") is None:
        return []
    uid, name = meta.get("uid") or "", meta.get("name") or ""
    errs = [] if uid else [required(Path("metadata").child("uid"))]
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    legacy_uid, prefixed_uid = CONTROLLER_UID_LABELS
    legacy_name, prefixed_name = JOB_NAME_LABELS
    errs.extend(_has_label(labels, legacy_uid, uid))
    errs.extend(_has_label(labels, legacy_name, name))
    expected = {legacy_uid: uid, legacy_name: name}
    if require_prefixed:
        errs.extend(_has_label(labels, prefixed_uid, uid))
        errs.extend(_has_label(labels, prefixed_name, name))
        expected.update({prefixed_uid: uid, prefixed_name: name})
    if not selector_parse_error(spec["selector"]) and not selector_matches(spec["selector"], expected):
        errs.append(invalid(SPEC.child("selector"), selector_json(spec["selector"]), "`selector` not auto-generated"))
    return errs


def _pod_failure_policy(spec: dict, path: Path) -> list[FieldError]:
    rules = (spec.get("podFailurePolicy") or {}).get("rules") or []
    errs = [too_many(path.child("rules"), len(rules), 20)] if len(rules) > 20 else []
    containers = {c.get("name") for c in ((spec.get("template") or {}).get("spec") or {}).get("containers") or []}
    containers |= {c.get("name") for c in ((spec.get("template") or {}).get("spec") or {}).get("initContainers") or []}
    for i, rule in enumerate(rules):
        p = path.child("rules").index(i)
        action = rule.get("action") or ""
        if not action:
            errs.append(required(p.child("action"), 'valid values: ["Count" "FailIndex" "FailJob" "Ignore"]'))
        elif action == "FailIndex":
            if spec.get("backoffLimitPerIndex") is None:
                errs.append(invalid(p.child("action"), action, "requires the backoffLimitPerIndex to be set"))
        elif action not in _POD_FAILURE_ACTIONS:
            errs.append(not_supported(p.child("action"), action, _POD_FAILURE_ACTIONS))
        on_codes, on_conditions = rule.get("onExitCodes"), rule.get("onPodConditions") or []
        if on_codes is not None:
            cp = p.child("onExitCodes")
            op = on_codes.get("operator") or ""
            if not op:
                errs.append(required(cp.child("operator"), 'valid values: ["In" "NotIn"]'))
            elif op not in ("In", "NotIn"):
                errs.append(not_supported(cp.child("operator"), op, ["In", "NotIn"]))
            if on_codes.get("containerName") is not None and on_codes["containerName"] not in containers:
                errs.append(invalid(cp.child("containerName"), on_codes["containerName"],
                                    "must be one of the container or initContainer names in the pod template"))
            values = on_codes.get("values") or []
            if not values:
                errs.append(invalid(cp.child("values"), values, "at least one value is required"))
            for j, code in enumerate(values):
                if op == "In" and code == 0:
                    errs.append(invalid(cp.child("values").index(j), code, "must not be 0 for the In operator"))
            if values != sorted(values):
                errs.append(invalid(cp.child("values"), values, "must be ordered"))
        for j, pattern in enumerate(on_conditions):
            pp = p.child("onPodConditions").index(j)
            errs.extend(invalid(pp.child("type"), pattern.get("type", ""), m)
                        for m in is_qualified_name(pattern.get("type", "")))
            status = pattern.get("status") or ""
            if not status:
                errs.append(required(pp.child("status"), 'valid values: ["False" "True" "Unknown"]'))
            elif status not in _CONDITION_STATUSES:
                errs.append(not_supported(pp.child("status"), status, _CONDITION_STATUSES))
        if on_codes is not None and on_conditions:
            errs.append(invalid(p, None, "specifying both OnExitCodes and OnPodConditions is not supported"))
        if on_codes is None and not on_conditions:
            errs.append(invalid(p, None, "specifying one of OnExitCodes and OnPodConditions is required"))
    return errs


def _job_spec_fields(spec: dict) -> list[FieldError]:
    """validateJobSpec."""
    errs: list[FieldError] = []
    for field in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished",
                  "backoffLimitPerIndex", "maxFailedIndexes"):
        if spec.get(field) is not None:
            errs.extend(non_negative(spec[field], SPEC.child(field)))
            if field == "maxFailedIndexes" and spec.get("backoffLimitPerIndex") is None:
                errs.append(required(SPEC.child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
    mode = spec.get("completionMode")
    if mode is not None:
        if mode not in ("NonIndexed", "Indexed"):
            errs.append(not_supported(SPEC.child("completionMode"), mode, ["NonIndexed", "Indexed"]))
        if mode == "Indexed":
            if spec.get("completions") is None:
                errs.append(required(SPEC.child("completions"), "when completion mode is Indexed"))
            if (spec.get("parallelism") or 0) > _MAX_PARALLELISM_INDEXED:
                errs.append(invalid(SPEC.child("parallelism"), spec["parallelism"],
                                    f"must be less than or equal to {_MAX_PARALLELISM_INDEXED} when completion mode "
                                    "is Indexed"))
            failed = spec.get("maxFailedIndexes")
            if spec.get("completions") is not None and failed is not None and failed > spec["completions"]:
                errs.append(invalid(SPEC.child("maxFailedIndexes"), failed,
                                    "must be less than or equal to completions"))
    if mode in (None, "NonIndexed"):
        for field in ("backoffLimitPerIndex", "maxFailedIndexes"):
            if spec.get(field) is not None:
                errs.append(invalid(SPEC.child(field), spec[field], "requires indexed completion mode"))
    if spec.get("podFailurePolicy") is not None:
        errs.extend(_pod_failure_policy(spec, SPEC.child("podFailurePolicy")))
    replacement = spec.get("podReplacementPolicy")
    if replacement is not None:
        allowed = ["Failed"] if spec.get("podFailurePolicy") is not None else ["Failed", "TerminatingOrFailed"]
        if replacement not in allowed:
            errs.append(not_supported(SPEC.child("podReplacementPolicy"), replacement, allowed))
    errs.extend(validate_pod_template_spec(spec.get("template"), SPEC.child("template")))
    restart = ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy", "")
    restart_path = SPEC.child("template", "spec", "restartPolicy")
    if restart in ("Always", ""):
        errs.append(required(restart_path, 'valid values: "OnFailure", "Never"'))
    elif restart not in ("OnFailure", "Never"):
        errs.append(not_supported(restart_path, restart, ["OnFailure", "Never"]))
    elif spec.get("podFailurePolicy") is not None and restart != "Never":
        errs.append(invalid(restart_path, restart, 'only "Never" is supported when podFailurePolicy is specified'))
    return errs


def _job_spec(spec: dict) -> list[FieldError]:
    """ValidateJobSpec."""
    errs = _job_spec_fields(spec)
    selector = spec.get("selector")
    if selector is None:
        errs.append(required(SPEC.child("selector")))
    else:
        errs.extend(validate_label_selector(selector, SPEC.child("selector")))
    if selector is not None and not selector_parse_error(selector):
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
        if not selector_matches(selector, labels):
            errs.append(invalid(SPEC.child("template", "metadata", "labels"), dict(sorted((labels or {}).items())),
                                "`selector` does not match template `labels`"))
    return errs


def validate_job(job: dict, require_prefixed_labels: bool = True) -> list[FieldError]:
    meta, spec = job.get("metadata") or {}, job.get("spec") or {}
    errs = validate_object_meta(meta, True, name_is_dns_subdomain)
    errs.extend(_generated_selector(job, require_prefixed_labels))
    errs.extend(_job_spec(spec))
    completions = spec.get("completions")
    if spec.get("completionMode") == "Indexed" and completions is not None and completions > 0:
        hostname = f"{meta.get('name', '')}-{completions - 1}"
        if is_dns1123_label(hostname):
            errs.append(invalid(Path("metadata").child("name"), meta.get("name", ""),
                                f"will not able to create pod with invalid DNS label: {hostname}"))
    return errs


def _template_for_comparison(spec: dict, old_spec: dict, mutable_scheduling: bool) -> dict:
    """validatePodTemplateUpdate: the old template with the fields a suspended job may change taken from new."""
    old_template = dict(old_spec.get("template") or {})
    if not mutable_scheduling:
        return old_template
    new_template = spec.get("template") or {}
    new_meta, new_tspec = new_template.get("metadata") or {}, new_template.get("spec") or {}
    meta = dict(old_template.get("metadata") or {})
    tspec = dict(old_template.get("spec") or {})
    for key in ("labels", "annotations"):
        meta.pop(key, None)
        if key in new_meta:
            meta[key] = new_meta[key]
    for key in ("nodeSelector", "tolerations", "schedulingGates"):
        tspec.pop(key, None)
        if key in new_tspec:
            tspec[key] = new_tspec[key]
    new_affinity, old_affinity = new_tspec.get("affinity"), tspec.get("affinity")
    if new_affinity is None and old_affinity is not None:
        rest = {k: v for k, v in old_affinity.items() if k != "nodeAffinity"}
        if rest:
            tspec["affinity"] = rest
        else:
            tspec.pop("affinity")
    elif new_affinity is not None:
        merged = {k: v for k, v in (old_affinity or {}).items() if k != "nodeAffinity"}
        if "nodeAffinity" in new_affinity:
            merged["nodeAffinity"] = new_affinity["nodeAffinity"]
        tspec["affinity"] = merged
    return {**old_template, "metadata": meta, "spec": tspec}


def validate_job_update(new: dict, old: dict) -> list[FieldError]:
    """The job strategy's ValidateUpdate: ValidateJob plus ValidateJobUpdate."""
    old_spec, spec = old.get("spec") or {}, new.get("spec") or {}
    old_labels = ((old_spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    require_prefixed = all(label in old_labels for label in (CONTROLLER_UID_LABELS[1], JOB_NAME_LABELS[1]))
    mutable_scheduling = bool(old_spec.get("suspend")) and not (old.get("status") or {}).get("startTime")
    errs = validate_job(new, require_prefixed)
    errs.extend(validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {}))
    errs.extend(_job_spec(spec))
    if spec.get("completionMode") == "Indexed":
        if spec.get("completions") != old_spec.get("completions") and spec.get("completions") is not None \
                and spec.get("completions") != spec.get("parallelism"):
            errs.append(invalid(SPEC.child("completions"), spec["completions"],
                                "can only be modified in tandem with spec.parallelism"))
    else:
        errs.extend(immutable(SPEC.child("completions"), spec.get("completions"), old_spec.get("completions")))
    errs.extend(immutable(SPEC.child("selector"), selector_json(spec.get("selector")),
                          selector_json(old_spec.get("selector"))))
    # Upstream renders the internal PodTemplateSpec here; the v1 JSON is shown instead.
    if normalized(spec.get("template")) != normalized(_template_for_comparison(spec, old_spec, mutable_scheduling)):
        errs.append(invalid(SPEC.child("template"), spec.get("template"), "field is immutable"))
    for field in ("completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy"):
        errs.extend(immutable(SPEC.child(field), spec.get(field), old_spec.get(field)))
    return errs


def validate_job_status_update(new: dict, old: dict) -> list[FieldError]:
    """ValidateJobUpdateStatus: metadata plus the non-negative counters."""
    status, path = new.get("status") or {}, Path("status")
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    for field in ("active", "succeeded", "failed", "ready", "terminating"):
        if status.get(field) is not None:
            errs.extend(non_negative(status[field], path.child(field)))
    return errs
