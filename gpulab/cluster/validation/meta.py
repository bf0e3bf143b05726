"""``metadata`` validation on create and update.

Ports of k8s.io/apimachinery/pkg/api/validation/objectmeta.go
(ValidateObjectMetaAccessor, ValidateObjectMetaAccessorUpdate,
ValidateOwnerReferences, ValidateFinalizers) with the core additions of
pkg/apis/core/validation/validation.go (ValidateObjectMeta's
validateKubeFinalizerName) and the generic checks the registry runs on every
write (staging/src/k8s.io/apiserver/pkg/registry/rest/create.go BeforeCreate,
update.go validateCommonFields).
"""
from __future__ import annotations

from typing import Callable

from ..errors import FieldError
from .field import forbidden, immutable, invalid, non_negative, required, too_long
from .formats import is_qualified_name, name_is_dns_label, path_segment_name
from .labels import validate_annotations, validate_labels
from .path import Path

NameFn = Callable[[str, bool], list[str]]

METADATA = Path("metadata")
_STANDARD_FINALIZERS = ("kubernetes", "orphan", "foregroundDeletion")
_BANNED_OWNERS = {("", "v1", "Event")}
_FIELD_MANAGER_MAX = 128
_SUBRESOURCE_MAX = 256


def _parse_api_version(api_version: str) -> tuple[str, str]:
    """schema.ParseGroupVersion; an unparsable value gives an empty group/version."""
    if not api_version:
        return "", ""
    if api_version == "v1":
        return "", "v1"
    parts = api_version.split("/")
    if len(parts) == 1:
        return "", parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    return "", ""


def _owner_reference_json(ref: dict) -> dict:
    """metav1.OwnerReference as encoding/json writes it (declaration order, omitempty)."""
    out = {k: ref.get(k, "") for k in ("apiVersion", "kind", "name", "uid")}
    for k in ("controller", "blockOwnerDeletion"):
        if ref.get(k) is not None:
            out[k] = ref[k]
    return out


def validate_owner_references(refs: list | None, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    first_controller = ""
    for ref in refs or []:
        group, version = _parse_api_version(ref.get("apiVersion", ""))
        kind = ref.get("kind", "")
        if not version:
            errs.append(invalid(path.child("apiVersion"), ref.get("apiVersion", ""), "version must not be empty"))
        if not kind:
            errs.append(invalid(path.child("kind"), kind, "must not be empty"))
        if not ref.get("name"):
            errs.append(invalid(path.child("name"), ref.get("name", ""), "must not be empty"))
        if not ref.get("uid"):
            errs.append(invalid(path.child("uid"), ref.get("uid", ""), "must not be empty"))
        if (group, version, kind) in _BANNED_OWNERS:
            errs.append(invalid(path, _owner_reference_json(ref),
                                f"{group}/{version}, Kind={kind} is disallowed from being an owner"))
        if ref.get("controller"):
            current = f"{kind}/{ref.get('name', '')}"
            if first_controller:
                errs.append(invalid(path, [_owner_reference_json(r) for r in refs],
                                    'Only one reference can have Controller set to true. Found "true" in references '
                                    f"for {first_controller} and {current}"))
            else:
                first_controller = current
    return errs


def validate_finalizers(finalizers: list | None, path: Path) -> list[FieldError]:
    """ValidateFinalizers (generic) followed by core's validateKubeFinalizerName for each entry."""
    finalizers = finalizers or []
    errs = [invalid(path, f, msg) for f in finalizers for msg in is_qualified_name(f)]
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        errs.append(invalid(path, finalizers, "finalizer orphan and foregroundDeletion cannot be both set"))
    return errs


def validate_kube_finalizer_names(finalizers: list | None, path: Path) -> list[FieldError]:
    """validateKubeFinalizerName: a name without '/' must be one of the standard finalizers."""
    return [invalid(path.index(i), f, "name is neither a standard finalizer name nor is it fully qualified")
            for i, f in enumerate(finalizers or []) if "/" not in f and f not in _STANDARD_FINALIZERS]


def _go_quote_list(values: list[str]) -> str:
    """Go's %#v of a []string."""
    return "[]string{" + ", ".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values) + "}"


def validate_managed_fields(entries: list | None, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, entry in enumerate(entries or []):
        p = path.index(i)
        if entry.get("operation") not in ("Apply", "Update"):
            errs.append(invalid(p.child("operation"), entry.get("operation", ""), "must be `Apply` or `Update`"))
        if entry.get("fieldsType") and entry["fieldsType"] != "FieldsV1":
            errs.append(invalid(p.child("fieldsType"), entry["fieldsType"], "must be `FieldsV1`"))
        manager = entry.get("manager", "")
        if len(manager.encode()) > _FIELD_MANAGER_MAX:
            errs.append(too_long(p.child("manager"), _FIELD_MANAGER_MAX))
        for pos, char in enumerate(manager):
            if not char.isprintable():
                errs.append(invalid(p.child("manager"), manager,
                                    f"invalid character U+{ord(char):04X} (at position {pos})"))
        if len((entry.get("subresource") or "").encode()) > _SUBRESOURCE_MAX:
            errs.append(too_long(p.child("subresource"), _SUBRESOURCE_MAX))
    return errs


def _common(meta: dict, namespaced: bool, path: Path) -> list[FieldError]:
    """validateObjectMetaAccessorWithOptsCommon."""
    errs: list[FieldError] = []
    namespace = meta.get("namespace") or ""
    if namespaced:
        if not namespace:
            errs.append(required(path.child("namespace")))
        else:
            errs.extend(invalid(path.child("namespace"), namespace, m) for m in name_is_dns_label(namespace))
    elif namespace:
        errs.append(forbidden(path.child("namespace"), "not allowed on this type"))
    errs.extend(non_negative(int(meta.get("generation") or 0), path.child("generation")))
    errs.extend(validate_labels(meta.get("labels"), path.child("labels")))
    errs.extend(validate_annotations(meta.get("annotations"), path.child("annotations")))
    errs.extend(validate_owner_references(meta.get("ownerReferences"), path.child("ownerReferences")))
    errs.extend(validate_finalizers(meta.get("finalizers"), path.child("finalizers")))
    errs.extend(validate_managed_fields(meta.get("managedFields"), path.child("managedFields")))
    return errs


def validate_object_meta(meta: dict, namespaced: bool, name_fn: NameFn, path: Path = METADATA, *,
                         kube_finalizers: bool = True) -> list[FieldError]:
    """ValidateObjectMeta (core flavour when ``kube_finalizers``) for a new object."""
    errs: list[FieldError] = []
    generate_name = meta.get("generateName") or ""
    if generate_name:
        errs.extend(invalid(path.child("generateName"), generate_name, m) for m in name_fn(generate_name, True))
    name = meta.get("name") or ""
    if not name:
        errs.append(required(path.child("name"), "name or generateName is required"))
    else:
        errs.extend(invalid(path.child("name"), name, m) for m in name_fn(name, False))
    errs.extend(_common(meta, namespaced, path))
    if kube_finalizers:
        errs.extend(validate_kube_finalizer_names(meta.get("finalizers"), path.child("finalizers")))
    return errs


def validate_object_meta_update(new: dict, old: dict, path: Path = METADATA, *,
                                kube_finalizers: bool = True) -> list[FieldError]:
    """ValidateObjectMetaUpdate.

    The resourceVersion check is left out: the registry fills a missing
    resourceVersion in before validation runs, so it cannot fail there.
    """
    errs: list[FieldError] = []
    if old.get("deletionTimestamp"):
        extra = sorted(set(new.get("finalizers") or []) - set(old.get("finalizers") or []))
        if extra:
            errs.append(forbidden(path.child("finalizers"), "no new finalizers can be added if the object is being "
                                                            f"deleted, found new finalizers {_go_quote_list(extra)}"))
    if int(new.get("generation") or 0) < int(old.get("generation") or 0):
        errs.append(invalid(path.child("generation"), int(new.get("generation") or 0), "must not be decremented"))
    for key, default in (("name", ""), ("namespace", ""), ("uid", ""), ("creationTimestamp", None),
                         ("deletionTimestamp", None), ("deletionGracePeriodSeconds", None)):
        errs.extend(immutable(path.child(key), new.get(key, default), old.get(key, default)))
    errs.extend(validate_labels(new.get("labels"), path.child("labels")))
    errs.extend(validate_annotations(new.get("annotations"), path.child("annotations")))
    errs.extend(validate_owner_references(new.get("ownerReferences"), path.child("ownerReferences")))
    errs.extend(validate_managed_fields(new.get("managedFields"), path.child("managedFields")))
    if kube_finalizers:
        errs.extend(validate_kube_finalizer_names(new.get("finalizers"), path.child("finalizers")))
    return errs


def validate_generic_create(meta: dict, namespaced: bool) -> list[FieldError]:
    """BeforeCreate's ValidateObjectMetaAccessor with ValidatePathSegmentName, run after the kind's own checks."""
    return validate_object_meta(meta, namespaced, path_segment_name, kube_finalizers=False)


def validate_generic_update(new: dict, old: dict, namespaced: bool) -> list[FieldError]:
    """validateCommonFields: run before the kind's own update checks on every update."""
    return (validate_object_meta(new, namespaced, path_segment_name, kube_finalizers=False)
            + validate_object_meta_update(new, old, kube_finalizers=False))
