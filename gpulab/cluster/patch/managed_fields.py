"""metadata.managedFields: decoding, encoding and the bookkeeping of ordinary writes.

Port of k8s.io/apimachinery/pkg/util/managedfields/internal: managedfields.go
(decode/encode/sort, manager identifiers), fieldmanager.go (decodeLiveOrNew,
reset with ``[]`` or ``[{}]``), skipnonapplied.go, capmanagers.go,
buildmanagerinfo.go, managedfieldsupdater.go, stripmeta.go and
structuredmerge.go (Update), plus the per-strategy reset fields
(``GetResetFields`` in pkg/registry/*/strategy.go) and ``managerOrUserAgent``
from staging/src/k8s.io/apiserver/pkg/endpoints/handlers/rest.go. Entries keep
upstream's field order: manager, operation, apiVersion, time, fieldsType,
fieldsV1, subresource.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..objects import clone, parse_time
from .fieldpath import FieldSet
from .fieldpath import field as f
from .schema_walk import Node, root_node
from .updater import VersionedSet, record_update

CURRENT_OPERATION = "current-operation"
BEFORE_FIRST_APPLY = "before-first-apply"
ANCIENT_CHANGES = "ancient-changes"
MAX_UPDATE_MANAGERS = 10          # DefaultMaxUpdateManagers
FIELD_MANAGER_MAX_LENGTH = 128    # validation.FieldManagerMaxLength

# stripmeta.go: never part of anyone's managed fields.
STRIPPED = FieldSet.of(
    (f("apiVersion"),), (f("kind"),), (f("metadata"),),
    *((f("metadata"), f(name)) for name in ("name", "namespace", "creationTimestamp", "selfLink", "uid",
                                            "clusterName", "generation", "managedFields", "resourceVersion")))


class DecodeError(Exception):
    """A managedFields entry upstream's DecodeManagedFields rejects."""


@dataclass
class Managed:
    """Manager identifier -> owned set, and identifier -> time of its last change."""

    fields: dict[str, VersionedSet] = field(default_factory=dict)
    times: dict[str, str | None] = field(default_factory=dict)


# --- identifiers ----------------------------------------------------------------
def identifier(manager: str, operation: str, api_version: str = "", subresource: str = "") -> str:
    """BuildManagerIdentifier: the entry as JSON without time and fields; appliers drop apiVersion."""
    entry = {"manager": manager, "operation": operation}
    if api_version and operation != "Apply":
        entry["apiVersion"] = api_version
    if subresource:
        entry["subresource"] = subresource
    return json.dumps({k: v for k, v in entry.items() if v}, separators=(",", ":"))


def parse_identifier(ident: str) -> dict:
    return json.loads(ident)


def manager_or_user_agent(field_manager: str | None, user_agent: str | None) -> str:
    """managerOrUserAgent: ``?fieldManager=`` if given, else the user agent up to its first ``/``."""
    if field_manager:
        return field_manager
    prefix = (user_agent or "").split("/")[0]
    out = []
    size = 0
    for ch in prefix:
        if not ch.isprintable():   # unicode.IsPrint
            continue
        length = len(ch.encode())
        if size + length > FIELD_MANAGER_MAX_LENGTH:
            break
        out.append(ch)
        size += length
    return "".join(out)


# --- decode / encode --------------------------------------------------------------
def decode(entries) -> Managed:
    """DecodeManagedFields."""
    managed = Managed()
    for i, entry in enumerate(entries or ()):
        if not isinstance(entry, dict):
            raise DecodeError(f"managed fields entry {i} is not an object")
        operation = entry.get("operation") or ""
        if operation not in ("Apply", "Update"):
            raise DecodeError("operation must be `Apply` or `Update`")
        if not entry.get("apiVersion"):
            raise DecodeError("apiVersion must not be empty")
        fields_type = entry.get("fieldsType") or ""
        if fields_type == "":
            raise DecodeError(f"missing fieldsType in managed fields entry {i}")
        if fields_type != "FieldsV1":
            raise DecodeError(f'invalid fieldsType "{fields_type}" in managed fields entry {i}')
        ident = identifier(entry.get("manager") or "", operation, entry["apiVersion"], entry.get("subresource") or "")
        try:
            owned = FieldSet.from_fields_v1(entry.get("fieldsV1") or {})
        except (ValueError, TypeError) as e:
            raise DecodeError(f"error decoding set: {e}") from None
        managed.fields[ident] = VersionedSet(owned, entry["apiVersion"], operation == "Apply")
        managed.times[ident] = entry.get("time")
    return managed


def encode(managed: Managed) -> list[dict] | None:
    """encodeManagedFields + sortEncodedManagedFields; None when nobody owns anything."""
    if not managed.fields:
        return None
    entries = []
    for ident, versioned in managed.fields.items():
        info = parse_identifier(ident)
        entry = {"manager": info.get("manager", ""),
                 "operation": "Apply" if versioned.applied else info.get("operation", "Update"),
                 "apiVersion": versioned.api_version}
        if managed.times.get(ident):
            entry["time"] = managed.times[ident]
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = versioned.set.to_fields_v1()
        if info.get("subresource"):
            entry["subresource"] = info["subresource"]
        entries.append(entry)
    entries.sort(key=lambda e: (e["operation"], int(parse_time(e.get("time")) or 0), e["manager"],
                                e["apiVersion"], e.get("subresource", "")))
    return entries


def _is_reset(entries) -> bool:
    """isResetManagedFields: an explicit empty list, or one empty entry."""
    if isinstance(entries, list) and not entries:
        return True
    return isinstance(entries, list) and len(entries) == 1 and isinstance(entries[0], dict) and not any(
        v not in (None, "", {}) for v in entries[0].values())


def _decode_or_empty(entries) -> Managed:
    try:
        return decode(entries)
    except DecodeError:
        return Managed()


def _managed_fields(obj: dict | None):
    return ((obj or {}).get("metadata") or {}).get("managedFields")


def _decode_live_or_new(live: dict, new: dict, is_subresource: bool) -> Managed:
    """decodeLiveOrNew: honour managedFields sent by the client unless empty, undecodable or via a subresource."""
    if is_subresource:
        return _decode_or_empty(_managed_fields(live))
    sent = _managed_fields(new)
    if _is_reset(sent):
        return Managed()
    try:
        managed = decode(sent)
    except DecodeError:
        managed = Managed()
    return managed if managed.fields else _decode_or_empty(_managed_fields(live))


def set_managed_fields(obj: dict, managed: Managed) -> dict:
    meta = obj.setdefault("metadata", {})
    entries = encode(managed)
    if entries is None:
        meta.pop("managedFields", None)
    else:
        meta["managedFields"] = entries
    return obj


# --- what Compare sees ------------------------------------------------------------
def comparable_for(rt):
    """A function shaping objects of ``rt`` for Compare: managedFields removed and, for built-in
    kinds, the Go zero values a typed object always carries (value structs as ``{}``,
    required lists/maps/pointers as ``null``)."""
    root = root_node(rt)
    builtin = rt.crd is None

    def comparable(obj):
        if not isinstance(obj, dict):
            return obj
        out = dict(obj)
        if isinstance(out.get("metadata"), dict):
            out["metadata"] = {k: v for k, v in out["metadata"].items() if k != "managedFields"}
        return _zero_fill(out, root) if builtin else out
    return comparable


def _zero_fill(value, node: Node | None):
    if node is None:
        return value
    if node.kind == "map" and isinstance(value, dict):
        out = dict(value)
        for name in node.value_fields:
            out.setdefault(name, {})
        for name in node.nullable_required:
            out.setdefault(name, None)
        for key, val in out.items():
            if isinstance(val, (dict, list)):
                out[key] = _zero_fill(val, node.child(key))
        return out
    if node.kind == "list" and isinstance(value, list):
        element = node.element()
        return [_zero_fill(v, element) if isinstance(v, dict) else v for v in value]
    return value


# --- reset fields -------------------------------------------------------------------
ResetPaths = tuple[tuple[str, ...], ...] | None


def reset_field_set(reset: ResetPaths) -> FieldSet | None:
    """The kind strategy's GetResetFields for the endpoint written through (field-name paths such as
    ``("spec",)``), as a set no manager may own there; None when the strategy resets nothing."""
    if reset is None:
        return None
    return FieldSet.of(*(tuple(f(name) for name in path) for path in reset))


# --- the Update pipeline ------------------------------------------------------------
def record_write(live: dict, new: dict, managed: Managed, manager: str, rt, subresource: str | None,
                 now: str, reset: ResetPaths = None) -> Managed:
    """capManagers(buildManagerInfo(managedFieldsUpdater(stripMeta(structuredMerge.Update))))."""
    version = rt.group_version
    ident = identifier(manager or "unknown", "Update", version, subresource or "")
    comparable = comparable_for(rt)
    fields = record_update(comparable(live), comparable(new), version, managed.fields, CURRENT_OPERATION,
                           root_node(rt), reset_field_set(reset))
    times = dict(managed.times)
    current = fields.pop(CURRENT_OPERATION, None)
    if current is not None:
        owned = current.set.difference(STRIPPED)
        if not owned.empty():
            previous = fields.get(ident)
            if previous is not None:
                owned = owned.union(previous.set)
            fields[ident] = VersionedSet(owned, current.api_version, current.applied)
            times[ident] = now
    return _cap_update_managers(Managed(fields, times))


def _cap_update_managers(managed: Managed) -> Managed:
    """capmanagers.go: merge the oldest update entries into ``ancient-changes`` buckets."""
    updaters = [m for m, v in managed.fields.items() if not v.applied]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return managed
    updaters.sort(key=lambda m: (int(parse_time(managed.times.get(m)) or 0), m))
    fields, times = dict(managed.fields), dict(managed.times)
    first_by_version: dict[str, str] = {}
    length = len(updaters)
    for manager in updaters:
        if length <= MAX_UPDATE_MANAGERS:
            break
        versioned = fields[manager]
        bucket = identifier(ANCIENT_CHANGES, "Update", versioned.api_version)
        first = first_by_version.get(versioned.api_version)
        if first is None:
            first_by_version[versioned.api_version] = manager
            continue
        if bucket not in fields:
            fields[bucket] = fields.pop(first)
        fields[bucket] = VersionedSet(versioned.set.union(fields[bucket].set), versioned.api_version,
                                      versioned.applied)
        del fields[manager]
        times[bucket] = times.get(manager)
        length -= 1
    return Managed(fields, times)


def empty_object(rt) -> dict:
    """What ``creater.New(kind)`` gives: for custom resources an object with only its kind."""
    return {"apiVersion": rt.api_version, "kind": rt.kind} if rt.crd is not None else {}


def update_managed_fields(old: dict | None, new: dict, rt, *, manager: str, operation: str = "Update",
                          subresource: str | None = None, now: str, reset: ResetPaths = None) -> dict:
    """FieldManager.UpdateNoErrors for a create (``old is None``), update or non-apply patch.

    Returns a copy of ``new`` whose metadata.managedFields records ``manager``
    (``operation`` must be "Update"; applies go through :func:`server_side_apply`).
    ``reset`` is the kind strategy's reset fields for this endpoint (``Strategy.reset_fields``).
    """
    if operation != "Update":
        raise ValueError("update_managed_fields records Update operations; use server_side_apply for Apply")
    result = clone(new)
    live = old if old is not None else empty_object(rt)
    managed = _decode_live_or_new(live, result, bool(subresource))
    result.setdefault("metadata", {}).pop("managedFields", None)
    if not managed.fields and ((live.get("metadata") or {}).get("uid")):
        # skipnonapplied.go: an existing object nobody tracks stays untracked until its first apply
        return result
    managed = record_write(live, result, managed, manager, rt, subresource, now, reset)
    return set_managed_fields(result, managed)
