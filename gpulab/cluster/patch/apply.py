"""Server-side apply: ``PATCH`` with ``application/apply-patch+yaml``.

Port of the apply half of kube-apiserver's field manager
(k8s.io/apimachinery/pkg/util/managedfields/internal): versioncheck.go,
lastappliedupdater.go, lastappliedmanager.go (kubectl's client-side
annotation upgrade), skipnonapplied.go (``before-first-apply``),
managedfieldsupdater.go, stripmeta.go, structuredmerge.go (the typed-patch
errors) and conflict.go (the 409 message and causes), over the structured-merge
engine in :mod:`updater`.
"""
from __future__ import annotations

import json

from ..errors import ApiError, bad_request
from ..objects import clone
from .fieldpath import path_string
from ..gofmt import go_json, go_quote, json_kind
from .managed_fields import (BEFORE_FIRST_APPLY, STRIPPED, DecodeError, Managed, comparable_for, decode,
                             ResetPaths, empty_object, identifier, parse_identifier, record_write, reset_field_set,
                             set_managed_fields)
from .schema_walk import root_node
from .typed import compare, to_field_set, validate
from .typed_decode import decode_like_go
from .updater import Conflicts, VersionedSet, apply_config

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# lastappliedmanager.go / lastappliedupdater.go only act for kubectl's own server-side apply.
KUBECTL_MANAGER = "kubectl"


def server_side_apply(live: dict | None, applied: dict, rt, *, manager: str, force: bool, now: str,
                      subresource: str | None = None, reset: ResetPaths = None) -> dict:
    """Merge ``applied`` into ``live`` (None: the object does not exist yet) as ``manager``.

    ``reset`` is the kind strategy's reset fields for the endpoint (``Strategy.reset_fields``).

    Returns the new object with metadata.managedFields updated. Raises ApiError
    409 Conflict when fields owned by other managers would change and ``force``
    is False, and upstream's 400/500 errors for bad configurations.
    """
    if not isinstance(applied, dict):
        raise bad_request("error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot "
                          f"unmarshal {json_kind(applied)} into Go value of type map[string]interface {{}}")
    gvk = _gvk_text(applied)
    if gvk != _gvk_text({"apiVersion": rt.api_version, "kind": rt.kind}):
        raise bad_request(f"invalid object type: {gvk}")
    if (applied.get("metadata") or {}).get("managedFields") is not None:
        raise bad_request("metadata.managedFields must be nil")
    root = root_node(rt)
    errors = validate(applied, root)
    if errors:
        meta = applied.get("metadata") or {}
        detail = errors[0] if len(errors) == 1 else "errors:\n" + "\n".join("  " + e for e in errors)
        raise _internal(f"failed to create typed patch object ({meta.get('namespace', '')}/{meta.get('name', '')}; "
                        f"{gvk}): {detail}")
    live_obj = clone(live) if live is not None else empty_object(rt)
    try:
        managed = decode((live_obj.get("metadata") or {}).get("managedFields"))
    except DecodeError as e:
        raise _internal(f"failed to decode managed fields: {e}") from None
    try:
        obj, managed = _apply_upgrading_last_applied(live_obj, applied, managed, manager, force, rt, subresource,
                                                     now, reset)
    except Conflicts as conflicts:
        raise conflict_error(conflicts) from None
    if manager == KUBECTL_MANAGER and _last_applied(obj):
        obj.setdefault("metadata", {}).setdefault("annotations", {})[LAST_APPLIED] = _build_last_applied(applied)
    set_managed_fields(obj, managed)
    return decode_like_go(rt, obj)


def _gvk_text(obj: dict) -> str:
    """schema.GroupVersionKind.String(): ``apps/v1, Kind=Deployment``, ``/v1, Kind=Pod``."""
    api_version = obj.get("apiVersion") or ""
    group, _, version = api_version.rpartition("/") if api_version.count("/") <= 1 else ("", "", "")
    return f"{group}/{version}, Kind={obj.get('kind') or ''}"


def _internal(message: str) -> ApiError:
    """A plain Go error reaching the handler: 500 with no reason (responsewriters ErrorToAPIStatus)."""
    return ApiError(500, "", message)


def _apply_upgrading_last_applied(live, applied, managed, manager, force, rt, subresource, now, reset):
    """lastAppliedManager: kubectl may take over fields its client-side apply annotation shows it set."""
    try:
        return _apply(live, applied, managed, manager, force, rt, subresource, now, reset)
    except Conflicts as conflicts:
        if manager != KUBECTL_MANAGER:
            raise
        allowed = _allowed_from_last_applied(live, rt)
        if allowed is None:
            raise
        if any(not allowed.has(path) for _, path in conflicts.items()):
            remaining = {m: s.difference(allowed) for m, s in conflicts.by_manager.items()}
            raise Conflicts({m: s for m, s in remaining.items() if not s.empty()}) from None
        return _apply(live, applied, managed, manager, True, rt, subresource, now, reset)


def _apply(live, applied, managed: Managed, manager, force, rt, subresource, now, reset):
    """skipNonApplied, buildManagerInfo, managedFieldsUpdater, stripMeta and structuredMerge for Apply."""
    if not managed.fields:
        managed = record_write(empty_object(rt), live, managed, BEFORE_FIRST_APPLY, rt, subresource, now, reset)
    ident = identifier(manager or "unknown", "Apply", rt.group_version, subresource or "")
    base = clone(live)
    if isinstance(base.get("metadata"), dict):
        base["metadata"].pop("managedFields", None)
    new, fields = apply_config(base, applied, rt.group_version, managed.fields, ident, force, root_node(rt),
                               reset_field_set(reset), comparable_for(rt))
    owned = fields.get(ident)
    if owned is not None:
        stripped = owned.set.difference(STRIPPED)
        if stripped.empty():
            del fields[ident]
        else:
            fields[ident] = VersionedSet(stripped, owned.api_version, owned.applied)
    times = dict(managed.times)
    if new is None:
        return base, Managed(fields, times)
    times[ident] = now
    return new, Managed(fields, times)


def _last_applied(obj: dict) -> str:
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED) or ""


def _allowed_from_last_applied(live: dict, rt):
    """allowedConflictsFromLastApplied: fields whose live value still matches the annotation."""
    text = _last_applied(live)
    if not text:
        return None
    try:
        last = json.loads(text)
    except ValueError:
        return None
    if not isinstance(last, dict) or last.get("apiVersion") != rt.group_version:
        return None
    root = root_node(rt)
    if validate(last, root):
        return None
    comparable = comparable_for(rt)
    comparison = compare(comparable(last), comparable(live), root)
    return (to_field_set(last, root).difference(comparison.modified).difference(comparison.added)
            .difference(comparison.removed))


def _build_last_applied(applied: dict) -> str:
    """buildLastApplied: the applied object without the annotation, as UnstructuredJSONScheme encodes it."""
    obj = clone(applied)
    annotations = (obj.get("metadata") or {}).get("annotations")
    if isinstance(annotations, dict):
        annotations.pop(LAST_APPLIED, None)
    return go_json(obj) + "\n"


def print_manager(ident: str) -> str:
    """conflict.go printManager: ``"kubectl-client-side-apply" using apps/v1``."""
    info = parse_identifier(ident)
    text = go_quote(info.get("manager", ""))
    if info.get("subresource"):
        text += f" with subresource {go_quote(info['subresource'])}"
    if info.get("operation") == "Update":
        text += f" using {info.get('apiVersion', '')}"
    return text


def conflict_error(conflicts: Conflicts) -> ApiError:
    """NewConflictError: 409 Conflict, one FieldManagerConflict cause per conflicting path."""
    pairs = list(conflicts.items())
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {print_manager(m)}",
               "field": path_string(p)} for m, p in pairs]
    if len(pairs) == 1:
        manager, path = pairs[0]
        message = f"Apply failed with 1 conflict: conflict with {print_manager(manager)}: {path_string(path)}"
    else:
        lines = []
        for manager in sorted({m for m, _ in pairs}):
            lines.append(f"conflicts with {print_manager(manager)}:")
            lines.extend(f"- {path_string(p)}" for m, p in pairs if m == manager)
        message = f"Apply failed with {len(pairs)} conflicts: " + "\n".join(lines)
    return ApiError(409, "Conflict", message, {"causes": causes})
