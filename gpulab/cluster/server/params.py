"""Query parameters as kube-apiserver's parameter codec reads them, and the option checks that follow.

Decoding follows k8s.io/apimachinery/pkg/runtime/conversion.go and the
generated ``url.Values`` conversions of pkg/apis/meta/v1: the first value of a
repeated parameter counts; a bool is false only for ``0`` or ``false`` in any
case (so ``watch=True``, what the Python client before v37 sends, and even
``watch=`` mean true); an integer goes through ``strconv.ParseInt``, whose
error (``strconv.ParseInt: parsing "abc": invalid syntax``) the handlers answer
as 400 BadRequest. ``dryRun`` is a list. The decoded options are then checked
as pkg/apis/meta/v1/validation (Create/Update/Patch/DeleteOptions) and
pkg/apis/meta/internalversion/validation (ListOptions) do, refused with 422
``CreateOptions.meta.k8s.io "" is invalid: ...``.
"""
from __future__ import annotations

import re
import unicodedata
from typing import Mapping

from ..errors import ApiError, FieldError, bad_request, forbidden, invalid, invalid_object, not_supported, too_long
from ..gofmt import go_quote

DRY_RUN_ALL = "All"
FIELD_MANAGER_MAX_LENGTH = 128  # validation.FieldManagerMaxLength
FIELD_VALIDATION_VALUES = ["", "Ignore", "Strict", "Warn"]  # sets.List order
_INT64 = re.compile(r"[+-]?[0-9]+\Z")
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _first(query: Mapping, name: str) -> str | None:
    getall = getattr(query, "getall", None)
    if getall is not None:
        values = getall(name, [])
        return values[0] if values else None
    return query.get(name)


def go_bool(query: Mapping, name: str) -> bool | None:
    """Convert_Slice_string_To_bool: None when absent, False for ``0``/``false`` (any case), else True."""
    value = _first(query, name)
    if value is None:
        return None
    return not (value == "0" or value.lower() == "false")


def go_int64(query: Mapping, name: str) -> int | None:
    """Convert_Slice_string_To_int64: None when absent; strconv.ParseInt's error as a 400 otherwise."""
    value = _first(query, name)
    if value is None:
        return None
    if not _INT64.match(value):
        raise bad_request(f"strconv.ParseInt: parsing {go_quote(value)}: invalid syntax")
    number = int(value)
    if not _INT64_MIN <= number <= _INT64_MAX:
        raise bad_request(f"strconv.ParseInt: parsing {go_quote(value)}: value out of range")
    return number


def dry_run_values(query: Mapping) -> list[str]:
    getall = getattr(query, "getall", None)
    if getall is not None:
        return list(getall("dryRun", []))
    value = query.get("dryRun")
    return [] if value is None else [value]


def _dry_run_errors(values: list[str]) -> list[FieldError]:
    """ValidateDryRun: every value must be ``All``."""
    if all(v == DRY_RUN_ALL for v in values):
        return []
    return [not_supported("dryRun", values, [DRY_RUN_ALL])]


def _field_manager_errors(manager: str) -> list[FieldError]:
    """ValidateFieldManager: at most 128 bytes, printable characters only."""
    errs = []
    if len(manager.encode()) > FIELD_MANAGER_MAX_LENGTH:
        errs.append(too_long("fieldManager", FIELD_MANAGER_MAX_LENGTH))
    position = 0
    for ch in manager:
        if not _printable(ch):
            errs.append(invalid("fieldManager", manager, f"invalid character {_go_sharp_u(ch)} (at position "
                                                         f"{position})"))
        position += len(ch.encode())
    return errs


def _printable(ch: str) -> bool:
    """unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space."""
    return ch == " " or unicodedata.category(ch)[0] in "LMNPS"


def _go_sharp_u(ch: str) -> str:
    """``%#U``: U+0007 alone for an unprintable rune."""
    return f"U+{ord(ch):04X}"


def _options_error(kind: str, errs: list[FieldError]) -> ApiError:
    return invalid_object(kind, "meta.k8s.io", "", errs)


def write_options(query: Mapping, kind: str, *, patch_type: str | None = None) -> tuple[bool, str | None, str]:
    """Create/Update/PatchOptions from the query: (dry run, field manager or None, field validation).

    ``kind`` is ``CreateOptions``, ``UpdateOptions`` or ``PatchOptions``; the checks run in
    ValidateCreateOptions' order (patch-only checks first, as ValidatePatchOptions has them).
    """
    errs: list[FieldError] = []
    manager = _first(query, "fieldManager") or ""
    force = go_bool(query, "force")
    if kind == "PatchOptions":
        if patch_type != "apply" and force is not None:
            errs.append(forbidden("force", "may not be specified for non-apply patch"))
    errs += _field_manager_errors(manager)
    dry_run = dry_run_values(query)
    errs += _dry_run_errors(dry_run)
    field_validation = _first(query, "fieldValidation") or ""
    if field_validation not in FIELD_VALIDATION_VALUES:
        errs.append(not_supported("fieldValidation", field_validation, FIELD_VALIDATION_VALUES))
    if errs:
        raise _options_error(kind, errs)
    return bool(dry_run), manager or None, field_validation


def delete_options(query: Mapping, body: dict | None) -> dict:
    """DeleteOptions from the body when there is one, else from the query (handlers/delete.go), validated.

    Returns ``{"gracePeriodSeconds", "propagationPolicy", "preconditions", "dryRun"}`` with the policy
    resolved from the deprecated ``orphanDependents``.
    """
    if body is not None:
        grace = body.get("gracePeriodSeconds")
        policy = body.get("propagationPolicy")
        orphan = body.get("orphanDependents")
        dry_run = body.get("dryRun") or []
        preconditions = body.get("preconditions")
    else:
        grace = go_int64(query, "gracePeriodSeconds")
        policy = _first(query, "propagationPolicy")
        orphan = go_bool(query, "orphanDependents")
        dry_run = dry_run_values(query)
        preconditions = None
    errs: list[FieldError] = []
    if orphan is not None and policy is not None:
        errs.append(invalid("propagationPolicy", policy, "orphanDependents and deletionPropagation cannot be both "
                                                         "set"))
    if policy is not None and policy not in ("Foreground", "Background", "Orphan"):
        errs.append(not_supported("propagationPolicy", policy, ["Foreground", "Background", "Orphan", "nil"]))
    errs += _dry_run_errors(list(dry_run))
    if errs:
        raise _options_error("DeleteOptions", errs)
    if policy is None and orphan is not None:
        policy = "Orphan" if orphan else "Background"
    return {"gracePeriodSeconds": grace, "propagationPolicy": policy, "preconditions": preconditions,
            "dryRun": bool(dry_run)}


def list_options(query: Mapping) -> dict:
    """ListOptions (watch included) decoded and checked as metainternalversion's validation does.

    ``resourceVersion`` is returned as given; its format is checked by the storage layer (:mod:`.watch`,
    ``ApiServer._list``), as upstream's is.
    """
    watch = bool(go_bool(query, "watch"))
    opts = {
        "watch": watch,
        "allowWatchBookmarks": bool(go_bool(query, "allowWatchBookmarks")),
        "resourceVersion": _first(query, "resourceVersion") or "",
        "resourceVersionMatch": _first(query, "resourceVersionMatch") or "",
        "timeoutSeconds": go_int64(query, "timeoutSeconds"),
        "limit": go_int64(query, "limit") or 0,
        "continue": _first(query, "continue") or "",
        "sendInitialEvents": go_bool(query, "sendInitialEvents"),
    }
    errs = _watch_errors(opts) if watch else _list_errors(opts)
    if errs:
        raise _options_error("ListOptions", errs)
    return opts


def _list_errors(opts: dict) -> list[FieldError]:
    errs: list[FieldError] = []
    match = opts["resourceVersionMatch"]
    if match:
        if not opts["resourceVersion"]:
            errs.append(forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion "
                                                          "is provided"))
        if opts["continue"]:
            errs.append(forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is "
                                                          "provided"))
        if match not in ("Exact", "NotOlderThan"):
            errs.append(not_supported("resourceVersionMatch", match, ["Exact", "NotOlderThan", ""]))
        if match == "Exact" and opts["resourceVersion"] == "0":
            errs.append(forbidden("resourceVersionMatch", 'resourceVersionMatch "exact" is forbidden for '
                                                          'resourceVersion "0"'))
    if opts["sendInitialEvents"] is not None:
        errs.append(forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    return errs


def _watch_errors(opts: dict) -> list[FieldError]:
    errs: list[FieldError] = []
    match = opts["resourceVersionMatch"]
    if opts["sendInitialEvents"] is not None and match != "NotOlderThan":
        errs.append(forbidden("resourceVersionMatch", "sendInitialEvents requires setting resourceVersionMatch to "
                                                      "NotOlderThan"))
    if match:
        if opts["sendInitialEvents"] is None:
            errs.append(forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden for watch unless "
                                                          "sendInitialEvents is provided"))
        if match != "NotOlderThan":
            errs.append(not_supported("resourceVersionMatch", match, ["NotOlderThan"]))
        if opts["continue"]:
            errs.append(forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is "
                                                          "provided"))
    return errs
