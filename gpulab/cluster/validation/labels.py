"""Labels, annotations and label selectors, as k8s.io/apimachinery validates them.

Ports of pkg/apis/meta/v1/validation/validation.go (ValidateLabels,
ValidateLabelName, ValidateLabelSelector) and pkg/api/validation/objectmeta.go
(ValidateAnnotations). Go walks maps in random order; here keys are walked
sorted so the same object always gives the same message.
"""
from __future__ import annotations

from ..errors import FieldError
from .field import invalid, forbidden, required, too_long
from .formats import is_qualified_name, is_valid_label_value
from .path import Path

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def validate_label_name(name: str, path: Path) -> list[FieldError]:
    return [invalid(path, name, msg) for msg in is_qualified_name(name)]


def validate_labels(labels: dict | None, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for key in sorted(labels or {}):
        errs.extend(validate_label_name(key, path))
        errs.extend(invalid(path, labels[key], msg) for msg in is_valid_label_value(str(labels[key])))
    return errs


def validate_annotations(annotations: dict | None, path: Path) -> list[FieldError]:
    """Keys are qualified names compared case-insensitively; keys plus values may not exceed 256 KiB."""
    annotations = annotations or {}
    errs = [invalid(path, key, msg) for key in sorted(annotations) for msg in is_qualified_name(key.lower())]
    total = sum(len(k.encode()) + len(str(v).encode()) for k, v in annotations.items())
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs


def validate_label_selector_requirement(req: dict, path: Path, allow_invalid_values: bool = False) -> list[FieldError]:
    errs: list[FieldError] = []
    operator, values = req.get("operator", ""), req.get("values") or []
    if operator in ("In", "NotIn"):
        if not values:
            errs.append(required(path.child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errs.append(forbidden(path.child("values"),
                                  "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    else:
        errs.append(invalid(path.child("operator"), operator, "not a valid selector operator"))
    errs.extend(validate_label_name(req.get("key", ""), path.child("key")))
    if not allow_invalid_values:
        for i, value in enumerate(values):
            errs.extend(invalid(path.child("values").index(i), value, msg) for msg in is_valid_label_value(value))
    return errs


def validate_label_selector(selector: dict | None, path: Path, allow_invalid_values: bool = False) -> list[FieldError]:
    if selector is None:
        return []
    errs = validate_labels(selector.get("matchLabels"), path.child("matchLabels"))
    for i, req in enumerate(selector.get("matchExpressions") or []):
        errs.extend(validate_label_selector_requirement(req, path.child("matchExpressions").index(i),
                                                        allow_invalid_values))
    return errs


def selector_matches(selector: dict | None, labels: dict | None) -> bool:
    """metav1.LabelSelectorAsSelector(...).Matches(labels); a nil selector matches nothing, an empty one all."""
    if selector is None:
        return False
    labels = labels or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for req in selector.get("matchExpressions") or []:
        key, op, values = req.get("key"), req.get("operator"), req.get("values") or []
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def selector_is_empty(selector: dict | None) -> bool:
    return not (selector or {}).get("matchLabels") and not (selector or {}).get("matchExpressions")


def selector_parse_error(selector: dict | None) -> bool:
    """True when LabelSelectorAsSelector would fail (bad operator, key or value)."""
    for req in (selector or {}).get("matchExpressions") or []:
        if req.get("operator") not in _SELECTOR_OPERATORS:
            return True
        if req.get("operator") in ("In", "NotIn") and not req.get("values"):
            return True
        if is_qualified_name(req.get("key", "")):
            return True
        if any(is_valid_label_value(v) for v in req.get("values") or []):
            return True
    for key, value in ((selector or {}).get("matchLabels") or {}).items():
        if is_qualified_name(key) or is_valid_label_value(value):
            return True
    return False
