"""core/v1 ReplicationControllers and PodTemplates: ports of ValidateReplicationController(Update),
ValidateReplicationControllerSpec, ValidatePodTemplateSpecForRC, ValidateReplicationControllerStatusUpdate and
ValidatePodTemplate(Update) in pkg/apis/core/validation/validation.go."""
from __future__ import annotations

from ..errors import FieldError
from .field import forbidden, invalid, non_negative, not_supported, required
from .formats import name_is_dns_subdomain
from .meta import validate_object_meta, validate_object_meta_update
from .path import Path
from .pods import validate_pod_template_spec

SPEC = Path("spec")


def _template_for_rc(template: dict | None, selector: dict, path: Path) -> list[FieldError]:
    if template is None:
        return [required(path)]
    labels = (template.get("metadata") or {}).get("labels") or {}
    errs: list[FieldError] = []
    if selector and any(labels.get(k) != v for k, v in selector.items()):
        errs.append(invalid(path.child("metadata", "labels"), dict(sorted(labels.items())),
                            "`selector` does not match template `labels`"))
    errs.extend(validate_pod_template_spec(template, path))
    tspec = template.get("spec") or {}
    if tspec.get("restartPolicy", "") != "Always":
        errs.append(not_supported(path.child("spec", "restartPolicy"), tspec.get("restartPolicy", ""), ["Always"]))
    if tspec.get("activeDeadlineSeconds") is not None:
        errs.append(forbidden(path.child("spec", "activeDeadlineSeconds"),
                              "activeDeadlineSeconds in ReplicationController is not Supported"))
    return errs


def _spec(spec: dict) -> list[FieldError]:
    errs = non_negative(int(spec.get("minReadySeconds") or 0), SPEC.child("minReadySeconds"))
    selector = spec.get("selector") or {}
    if not selector:
        errs.append(required(SPEC.child("selector")))
    errs.extend(non_negative(int(spec.get("replicas") or 0), SPEC.child("replicas")))
    return errs + _template_for_rc(spec.get("template"), selector, SPEC.child("template"))


def validate_replication_controller(rc: dict) -> list[FieldError]:
    errs = validate_object_meta(rc.get("metadata") or {}, True, name_is_dns_subdomain)
    return errs + _spec(rc.get("spec") or {})


def validate_replication_controller_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    return errs + _spec(new.get("spec") or {})


def validate_replication_controller_status_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    status, path = new.get("status") or {}, Path("status")
    for field in ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"):
        errs.extend(non_negative(int(status.get(field) or 0), path.child(field)))
    replicas = int(status.get("replicas") or 0)
    for field in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"):
        if int(status.get(field) or 0) > replicas:
            errs.append(invalid(path.child(field), int(status.get(field) or 0),
                                "cannot be greater than status.replicas"))
    if int(status.get("availableReplicas") or 0) > int(status.get("readyReplicas") or 0):
        errs.append(invalid(path.child("availableReplicas"), int(status.get("availableReplicas") or 0),
                            "cannot be greater than readyReplicas"))
    return errs


def validate_pod_template(pt: dict) -> list[FieldError]:
    errs = validate_object_meta(pt.get("metadata") or {}, True, name_is_dns_subdomain)
    return errs + validate_pod_template_spec(pt.get("template"), Path("template"))


def validate_pod_template_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    return errs + validate_pod_template_spec(new.get("template"), Path("template"))
