"""JSON merge patch (RFC 7386), ``application/merge-patch+json``, as kube-apiserver applies it.

kube-apiserver uses gopkg.in/evanphx/json-patch.v4 ``MergePatch``
(staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go applyJSPatch),
whose quirks this port keeps and which generic RFC 7386 libraries do not share:
nulls are pruned from every value the patch adds (also inside arrays), an
array whose nulls were all pruned (or that was empty) becomes ``null``, a patch
that is an array replaces the whole document, and a patch that is ``null`` or a
scalar is refused with 400 ``Invalid JSON Patch``.
"""
from __future__ import annotations

from ..errors import bad_request
from ..objects import clone
from .patch_errors import undecodable

BAD_PATCH = "Invalid JSON Patch"   # jsonpatch.ErrBadJSONPatch


def apply_merge_patch(obj: dict, patch) -> dict:
    """Apply a merge patch to ``obj``; returns a new dict and never mutates its inputs."""
    if isinstance(patch, dict):
        return _merge_docs(clone(obj), clone(patch))
    if isinstance(patch, list):
        raise undecodable(_prune(clone(patch)))
    raise bad_request(BAD_PATCH)


def _merge_docs(doc: dict, patch: dict) -> dict:
    for key, value in patch.items():
        if value is None:
            doc.pop(key, None)
        elif key not in doc:
            doc[key] = _prune(value)
        else:
            doc[key] = _merge(doc[key], value)
    return doc


def _merge(current, patch):
    if not isinstance(current, dict):
        return _prune(patch)
    if not isinstance(patch, dict):
        return patch
    return _merge_docs(current, patch)


def _prune(value):
    """pruneNulls: drop null members and null array items; an array left empty marshals as null."""
    if isinstance(value, dict):
        return {k: _prune(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        items = [_prune(v) for v in value if v is not None]
        return items or None
    return value
