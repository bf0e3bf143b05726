"""JSON patch (RFC 6902), ``application/json-patch+json``, as kube-apiserver applies it.

The operations run on the ``jsonpatch`` library, adjusted where
gopkg.in/evanphx/json-patch.v4 (what kube-apiserver uses, see
staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go applyJSPatch)
departs from the RFC: ``replace`` of a missing object member adds it, ``copy``
from a missing member copies ``null``, ``test`` of a missing member passes when
the value is ``null``, and an operation without ``value`` uses ``null``.
Errors follow patch.go: a body that is not a list of objects is 400 with the
Go decoder's message, more than 10000 operations is 413, and any operation that
fails is the generic 422.
"""
from __future__ import annotations

import copy
from collections.abc import MutableMapping
from types import MappingProxyType

import jsonpatch
from jsonpointer import JsonPointerException

from ..errors import ApiError, bad_request
from ..objects import clone
from ..gofmt import go_json, json_kind
from .patch_errors import undecodable, unprocessable

MAX_OPERATIONS = 10000   # maxJSONPatchOperations


class _Add(jsonpatch.AddOperation):
    def _apply(self, obj, journal):
        if "value" not in self.operation:
            return self._add(obj, None, journal)
        return super()._apply(obj, journal)


class _Replace(jsonpatch.ReplaceOperation):
    """v4 only checks that the container exists: a missing object member is simply set."""

    def _apply(self, obj, journal):
        value = copy.deepcopy(self.operation.get("value"))
        subobj, part = self.pointer.to_last(obj)
        if part is None and not isinstance(value, (dict, list)):
            raise jsonpatch.JsonPatchConflict("replace operation value must be object or array", op=self)
        if part is not None and isinstance(subobj, MutableMapping) and part not in subobj:
            journal.setitem(subobj, part, value)
            return obj
        if "value" not in self.operation:
            self.operation = dict(self.operation, value=None)
        return super()._apply(obj, journal)


class _Test(jsonpatch.TestOperation):
    """v4 lazyNode.equal: a missing member equals null; object members of the document must all match."""

    def _apply(self, obj, journal):
        subobj, part = self.pointer.to_last(obj)
        expected = self.operation.get("value")
        if part is None:
            actual = subobj
        elif isinstance(subobj, MutableMapping) and part not in subobj:
            actual = None
        else:
            try:
                actual = self.pointer.walk(subobj, part)
            except JsonPointerException as e:
                raise jsonpatch.JsonPatchTestFailed(str(e), op=self) from None
        if actual is None:
            if expected is None:
                return obj
            raise jsonpatch.JsonPatchTestFailed("test failed", op=self)
        if "value" not in self.operation or not _v4_equal(actual, expected):
            raise jsonpatch.JsonPatchTestFailed("test failed", op=self)
        return obj


class _Copy(jsonpatch.CopyOperation):
    def _apply(self, obj, journal):
        source = self._from_pointer()
        subobj, part = source.to_last(obj)
        if part is not None and isinstance(subobj, MutableMapping) and part not in subobj:
            return jsonpatch.AddOperation({"op": "add", "path": self.location},
                                          pointer_cls=self.pointer_cls)._add(obj, None, journal)
        return super()._apply(obj, journal)


class _V4Patch(jsonpatch.JsonPatch):
    operations = MappingProxyType(dict(jsonpatch.JsonPatch.operations, add=_Add, replace=_Replace, test=_Test,
                                       copy=_Copy))


def _v4_equal(actual, expected) -> bool:
    if isinstance(actual, dict):
        return isinstance(expected, dict) and all(
            k in expected and ((v is None and expected[k] is None) or _v4_equal(v, expected[k]))
            for k, v in actual.items())
    if isinstance(actual, list):
        return isinstance(expected, list) and len(actual) == len(expected) and all(
            _v4_equal(a, e) for a, e in zip(actual, expected))
    return not isinstance(expected, (dict, list)) and go_json(actual) == go_json(expected)


def check_strict_ops(ops) -> None:
    """The strict decode a JSON patch gets first under ``fieldValidation=Strict`` or ``Warn`` (kubectl's default):
    into ``[]jsonPatchOp``, whose type the error names (handlers/patch.go applyJSPatch)."""
    if ops is not None and not isinstance(ops, list):
        raise bad_request(f"error decoding patch: json: cannot unmarshal {json_kind(ops)} into Go value of type "
                          "[]handlers.jsonPatchOp")
    for op in ops or []:
        if op is not None and not isinstance(op, dict):
            raise bad_request(f"error decoding patch: json: cannot unmarshal {json_kind(op)} into Go value of type "
                              "handlers.jsonPatchOp")


def apply_json_patch(obj: dict, ops) -> dict:
    """Apply the operations in order to a copy of ``obj``; all or nothing."""
    if ops is None:
        ops = []
    if not isinstance(ops, list):
        raise bad_request(f"json: cannot unmarshal {json_kind(ops)} into Go value of type jsonpatch.Patch")
    for op in ops:
        if op is not None and not isinstance(op, dict):
            raise bad_request(f"json: cannot unmarshal {json_kind(op)} into Go value of type jsonpatch.Operation")
    if len(ops) > MAX_OPERATIONS:
        raise ApiError(413, "RequestEntityTooLarge", "Request entity too large: The allowed maximum operations in "
                       f"a JSON patch is {MAX_OPERATIONS}, got {len(ops)}")
    try:
        result = _V4Patch([op or {} for op in ops]).apply(clone(obj), in_place=True)
    except (jsonpatch.JsonPatchException, JsonPointerException, KeyError, IndexError, TypeError, ValueError):
        raise unprocessable() from None
    if not isinstance(result, dict):
        raise undecodable(result)
    return result
