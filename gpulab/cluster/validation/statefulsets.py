"""apps/v1 StatefulSets: ports of ValidateStatefulSet, ValidateStatefulSetUpdate and
ValidateStatefulSetStatusUpdate in pkg/apis/apps/validation/validation.go.

Upstream validates a StatefulSet's pod template only for its selector match,
labels and annotations (a TODO there: the template's volume mounts may name
claim templates, which full pod validation would refuse), so a bad container
shows only when the controller creates the pod. A StatefulSet's name must be
a DNS label: its pods are named ``NAME-ORDINAL``.
"""
from __future__ import annotations

from ..errors import FieldError
from .apps import (_int_or_percent_value, _labels_json, is_not_more_than_100_percent, selector_json,
                   validate_positive_int_or_percent)
from .field import forbidden, invalid, non_negative, not_supported, required
from .formats import name_is_dns_label
from .labels import (selector_is_empty, selector_matches, selector_parse_error, validate_annotations,
                     validate_label_selector, validate_labels)
from .meta import validate_object_meta, validate_object_meta_update
from .path import Path
from .pods import validate_pod_specific_annotations

SPEC = Path("spec")
_RETENTION = ["Retain", "Delete"]
# The fields ValidateStatefulSetUpdate lets change.
_MUTABLE = ("replicas", "ordinals", "template", "updateStrategy", "persistentVolumeClaimRetentionPolicy",
            "minReadySeconds")


def _go_rolling(rolling: dict | None):
    """A *RollingUpdateStatefulSetStrategy as encoding/json writes the internal type (no json tags)."""
    if rolling is None:
        return None
    return {"Partition": rolling.get("partition", 0), "MaxUnavailable": rolling.get("maxUnavailable")}


def _rolling_update(rolling: dict, path: Path) -> list[FieldError]:
    """validateRollingUpdateStatefulSet."""
    errs = non_negative(int(rolling.get("partition") or 0), path.child("partition"))
    unavailable = rolling.get("maxUnavailable")
    if unavailable is not None:
        p = path.child("maxUnavailable")
        errs.extend(validate_positive_int_or_percent(unavailable, p))
        if _int_or_percent_value(unavailable) == 0:
            errs.append(invalid(p, unavailable, "cannot be 0"))
        errs.extend(is_not_more_than_100_percent(unavailable, p))
    return errs


def _update_strategy(strategy: dict, path: Path) -> list[FieldError]:
    kind, rolling = strategy.get("type", ""), strategy.get("rollingUpdate")
    if kind == "":
        return [required(path)]
    if kind == "OnDelete":
        if rolling is not None:
            return [invalid(path.child("rollingUpdate"), _go_rolling(rolling),
                            "only allowed for updateStrategy 'RollingUpdate'")]
        return []
    if kind == "RollingUpdate":
        return _rolling_update(rolling, path.child("rollingUpdate")) if rolling is not None else []
    return [invalid(path, {"Type": kind, "RollingUpdate": _go_rolling(rolling)},
                    "must be 'RollingUpdate' or 'OnDelete'")]


def _template(template: dict, selector: dict | None, path: Path) -> list[FieldError]:
    """ValidatePodTemplateSpecForStatefulSet."""
    meta, spec = template.get("metadata") or {}, template.get("spec") or {}
    errs: list[FieldError] = []
    if not selector_is_empty(selector) and not selector_matches(selector, meta.get("labels")):
        errs.append(invalid(path.child("metadata", "labels"), _labels_json(meta.get("labels")) or {},
                            "`selector` does not match template `labels`"))
    errs.extend(validate_labels(meta.get("labels"), path.child("labels")))
    errs.extend(validate_annotations(meta.get("annotations"), path.child("annotations")))
    errs.extend(validate_pod_specific_annotations(meta.get("annotations"), spec, path.child("annotations")))
    return errs


def _spec(spec: dict) -> list[FieldError]:
    """ValidateStatefulSetSpec."""
    errs: list[FieldError] = []
    policy = spec.get("podManagementPolicy", "")
    if policy == "":
        errs.append(required(SPEC.child("podManagementPolicy")))
    elif policy not in ("OrderedReady", "Parallel"):
        errs.append(invalid(SPEC.child("podManagementPolicy"), policy, "must be 'OrderedReady' or 'Parallel'"))
    errs.extend(_update_strategy(spec.get("updateStrategy") or {}, SPEC.child("updateStrategy")))
    retention = spec.get("persistentVolumeClaimRetentionPolicy")
    if retention is not None:
        for field in ("whenDeleted", "whenScaled"):
            if retention.get(field, "") not in _RETENTION:
                errs.append(not_supported(SPEC.child("persistentVolumeClaimRetentionPolicy", field),
                                          retention.get(field, ""), _RETENTION))
    errs.extend(non_negative(int(spec.get("replicas") or 0), SPEC.child("replicas")))
    errs.extend(non_negative(int(spec.get("minReadySeconds") or 0), SPEC.child("minReadySeconds")))
    if spec.get("ordinals") is not None:
        errs.extend(non_negative(int(spec["ordinals"].get("start") or 0), SPEC.child("ordinals.start")))
    selector = spec.get("selector")
    if selector is None:
        errs.append(required(SPEC.child("selector")))
    else:
        errs.extend(validate_label_selector(selector, SPEC.child("selector")))
        if selector_is_empty(selector):
            errs.append(invalid(SPEC.child("selector"), selector_json(selector),
                                "empty selector is invalid for statefulset"))
    if selector_parse_error(selector):
        errs.append(invalid(SPEC.child("selector"), selector_json(selector), ""))
    else:
        errs.extend(_template(spec.get("template") or {}, selector, SPEC.child("template")))
    tspec = (spec.get("template") or {}).get("spec") or {}
    if tspec.get("restartPolicy", "") != "Always":
        errs.append(not_supported(SPEC.child("template", "spec", "restartPolicy"), tspec.get("restartPolicy", ""),
                                  ["Always"]))
    if tspec.get("activeDeadlineSeconds") is not None:
        errs.append(forbidden(SPEC.child("template", "spec", "activeDeadlineSeconds"),
                              "activeDeadlineSeconds in StatefulSet is not Supported"))
    return errs


def validate_statefulset(sts: dict) -> list[FieldError]:
    errs = validate_object_meta(sts.get("metadata") or {}, True, name_is_dns_label)
    return errs + _spec(sts.get("spec") or {})


def validate_statefulset_update(new: dict, old: dict) -> list[FieldError]:
    """The name is not checked again; only the listed spec fields may change."""
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    errs.extend(_spec(spec))
    frozen = {k: v for k, v in spec.items() if k not in _MUTABLE}
    if frozen != {k: v for k, v in old_spec.items() if k not in _MUTABLE}:
        errs.append(forbidden(SPEC, "updates to statefulset spec for fields other than 'replicas', 'ordinals', "
                                    "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
                                    "'minReadySeconds' are forbidden"))
    return errs


def validate_statefulset_status_update(new: dict, old: dict) -> list[FieldError]:
    status, path = new.get("status") or {}, Path("status")
    errs = [e for f in ("replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas")
            for e in non_negative(int(status.get(f) or 0), path.child(f))]
    for f in ("observedGeneration", "collisionCount"):
        if status.get(f) is not None:
            errs.extend(non_negative(int(status[f]), path.child(f)))
    replicas = int(status.get("replicas") or 0)
    for f in ("readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"):
        if int(status.get(f) or 0) > replicas:
            errs.append(invalid(path.child(f), int(status.get(f) or 0), "cannot be greater than status.replicas"))
    if int(status.get("availableReplicas") or 0) > int(status.get("readyReplicas") or 0):
        errs.append(invalid(path.child("availableReplicas"), int(status.get("availableReplicas") or 0),
                            "cannot be greater than status.readyReplicas"))
    errs.extend(validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {}))
    old_cc, new_cc = (old.get("status") or {}).get("collisionCount"), status.get("collisionCount")
    if old_cc is not None and (new_cc is None or new_cc < old_cc):
        errs.append(invalid(path.child("collisionCount"), new_cc or 0, "cannot be decremented"))
    return errs
