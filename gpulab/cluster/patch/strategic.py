"""Strategic merge patch, ``application/strategic-merge-patch+json``: the apply half.

Port of k8s.io/apimachinery/pkg/util/strategicpatch/patch.go v0.36
(StrategicMergeMapPatch: mergeMap, mergeSlice, the ``$patch``,
``$retainKeys``, ``$deleteFromPrimitiveList/<f>`` and ``$setElementOrder/<f>``
directives, the order normalisation) with the errors of
k8s.io/apimachinery/pkg/util/mergepatch/errors.go mapped to Status codes as
staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go
interpretStrategicMergePatchError does. Patch strategies and merge keys come
from the schema (:mod:`schema_walk`). Custom resources are refused with 415,
like the CRD handler whose accepted patch types leave this one out. No Python
library implements strategic merge patch.

Go compares ``interface{}`` values by dynamic type, so ``1`` and ``1.0`` (int64
and float64 after kube-apiserver's int-preserving decoding) and ``True`` and
``1`` are different here too.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ApiError, bad_request
from ..objects import clone
from ..validation import go_decode
from .go_sort import slice_stable
from ..gofmt import go_s, go_type, go_v, json_kind
from .patch_errors import internal, unprocessable
from .schema_walk import DEDUCED, Node, root_node
from .typed_decode import decode_like_go

DIRECTIVE = "$patch"
DELETE, REPLACE, MERGE = "delete", "replace", "merge"
RETAIN_KEYS_STRATEGY = "retainKeys"
RETAIN_KEYS = "$retainKeys"
DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList"
SET_ELEMENT_ORDER = "$setElementOrder"

# mergepatch/errors.go sentinels that interpretStrategicMergePatchError turns into 400 or 422
BAD_PRIMITIVE_LIST = "invalid patch format of primitive list"
BAD_RETAIN_KEYS = "invalid patch format of retainKeys"
BAD_SET_ELEMENT_ORDER = "invalid patch format of setElementOrder list"

# customresource_handler.go: the patch types served for custom resources (CBOR apply is alpha and off).
CUSTOM_RESOURCE_PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
                               "application/apply-patch+yaml")


class _PatchError(Exception):
    def __init__(self, api_error: ApiError):
        super().__init__(api_error.message)
        self.api_error = api_error


def _bad(message: str) -> _PatchError:
    return _PatchError(bad_request(message))


def _error(message: str) -> _PatchError:
    return _PatchError(internal(message))


@dataclass(frozen=True)
class _Options:
    merge_parallel_list: bool = True     # StrategicMergeMapPatch: server side
    ignore_unmatched_nulls: bool = True


_SERVER = _Options()


def apply_strategic_merge_patch(obj: dict, patch, rt) -> dict:
    """Apply a strategic merge patch to ``obj`` (a built-in kind); returns a new dict."""
    if rt.crd is not None:
        raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted "
                       "media types include: " + ", ".join(CUSTOM_RESOURCE_PATCH_TYPES))
    if patch is None:
        patch = {}
    if not isinstance(patch, dict):
        raise bad_request(f"json: cannot unmarshal {json_kind(patch)} into Go value of type map[string]interface {{}}")
    try:
        result = _merge_map(clone(obj), clone(patch), root_node(rt), _SERVER)
    except _PatchError as e:
        raise e.api_error from None
    return decode_like_go(rt, go_decode.from_unstructured(rt, result, patch))


# --- Go value semantics ------------------------------------------------------------------
def _same(a, b) -> bool:
    """``a == b`` on interface{} values: same dynamic type and value; maps and slices never match."""
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return False
    return go_type(a) == go_type(b) and a == b


def _hashable(value):
    return (go_type(value), value) if not isinstance(value, (dict, list)) else (go_type(value), id(value))


def _no_merge_key(m: dict, key: str) -> str:
    return f"map: {go_v(m)} does not contain declared merge key: {key}"


def _bad_arg_type(expected: str, actual) -> str:
    return f"expected a {expected}, but received a {'%!s(<nil>)' if actual is None else go_type(actual)}"


MAP_TYPE, SLICE_TYPE = "map[string]interface {}", "[]interface {}"


# --- maps ---------------------------------------------------------------------------------
def _merge_map(original: dict | None, patch: dict, node: Node, opts: _Options):
    if DIRECTIVE in patch:
        return _directive_in_map(patch[DIRECTIVE], patch)
    if original is None:
        original = {}
    _apply_retain_keys(original, patch, opts)
    _merge_patch_into_original(original, patch, node, opts)
    for key, patch_value in list(patch.items()):
        skip, is_delete_list, plain_key = _preprocess_deletion_list(key, original, patch_value, opts)
        if skip:
            continue
        if plain_key:
            key = plain_key
        if patch_value is None:
            original.pop(key, None)
            if opts.ignore_unmatched_nulls:
                continue
        if key not in original or go_type(original[key]) != go_type(patch_value):
            if not is_delete_list:
                _take_patch_value(original, key, patch_value, opts)
            continue
        current = original[key]
        if isinstance(current, dict):
            sub, strategies, _ = node.patch_meta(key)
            strategy = _patch_strategy(strategies)
            original[key] = patch_value if strategy == REPLACE else _merge_map(current, patch_value, sub, opts)
        elif isinstance(current, list):
            element, strategies, merge_key = _slice_meta(node, key)
            original[key] = _merge_slice_handler(current, patch_value, element, _patch_strategy(strategies),
                                                 merge_key, is_delete_list, opts)
        else:
            _take_patch_value(original, key, patch_value, opts)
    return original


def _take_patch_value(original: dict, key: str, value, opts: _Options) -> None:
    if opts.ignore_unmatched_nulls:
        _discard_nulls(value)
    value, keep = _remove_directives(value)
    if keep:
        original[key] = value
    else:
        original.pop(key, None)


def _directive_in_map(directive, patch: dict) -> dict:
    """handleDirectiveInMergeMap."""
    if _same(directive, REPLACE):
        del patch[DIRECTIVE]
        return patch
    if _same(directive, DELETE):
        return {}
    raise _error(f"unknown patch type: {go_s(directive)} in map: {go_v(patch)}")


def _patch_strategy(strategies: tuple[str, ...]) -> str:
    """extractRetainKeysPatchStrategy: the strategy besides retainKeys."""
    if len(strategies) <= 2:
        others = [s for s in strategies if s != RETAIN_KEYS_STRATEGY]
        if len(strategies) < 2 or len(others) == 1:
            return others[0] if others else ""
    raise _error(f"unexpected patch strategy: [{' '.join(strategies)}]")


def _slice_meta(node: Node, key: str) -> tuple[Node, tuple[str, ...], str]:
    """LookupPatchMetadataForSlice: the item schema of a list field."""
    sub, strategies, merge_key = node.patch_meta(key)
    element = sub.element() if sub.kind == "list" else DEDUCED
    return element or DEDUCED, strategies, merge_key


def _discard_nulls(value) -> None:
    """discardNullValuesFromPatch (in place)."""
    if isinstance(value, dict):
        for k in [k for k, v in value.items() if v is None]:
            del value[k]
        for v in value.values():
            _discard_nulls(v)
    elif isinstance(value, list):
        for v in value:
            _discard_nulls(v)


def _remove_directives(value):
    """removeDirectives: a map holding ``$patch`` is dropped, everywhere inside the value."""
    if isinstance(value, dict):
        if DIRECTIVE in value:
            return None, False
        for k in list(value):
            v, keep = _remove_directives(value[k])
            if keep:
                value[k] = v
            else:
                del value[k]
        return value, True
    if isinstance(value, list):
        out = []
        for v in value:
            v, keep = _remove_directives(v)
            if keep:
                out.append(v)
        return out, True
    return value, True


def _apply_retain_keys(original: dict, patch: dict, opts: _Options) -> None:
    """applyRetainKeysDirective: clear the fields the ``$retainKeys`` list does not name."""
    if RETAIN_KEYS not in patch:
        return
    retain = patch.pop(RETAIN_KEYS)
    if not isinstance(retain, list):
        raise _bad(BAD_RETAIN_KEYS)
    keep = {_hashable(v) for v in retain}
    for key, value in patch.items():
        if value is None or key.startswith(DELETE_FROM_PRIMITIVE_LIST) or key.startswith(SET_ELEMENT_ORDER):
            continue
        if _hashable(key) not in keep:
            raise _bad(BAD_RETAIN_KEYS)
    for key in [k for k in original if _hashable(k) not in keep]:
        del original[key]


def _extract_key(text: str, prefix: str) -> str:
    head, sep, rest = text.partition("/")
    if not sep or head != prefix:
        if prefix == DELETE_FROM_PRIMITIVE_LIST:
            raise _bad(BAD_PRIMITIVE_LIST)
        raise _bad(BAD_SET_ELEMENT_ORDER)
    return rest


def _preprocess_deletion_list(key: str, original: dict, patch_value, opts: _Options):
    """preprocessDeletionListForMerging -> (skip, is delete list, key without prefix)."""
    if not key.startswith(DELETE_FROM_PRIMITIVE_LIST):
        return False, False, ""
    if not opts.merge_parallel_list:
        original[key] = patch_value
        return True, False, ""
    return False, True, _extract_key(key, DELETE_FROM_PRIMITIVE_LIST)


def _merge_patch_into_original(original: dict, patch: dict, node: Node, opts: _Options) -> None:
    """mergePatchIntoOriginal: lists with ``$setElementOrder`` are merged here and put in that order."""
    for key, order in list(patch.items()):
        if not key.startswith(SET_ELEMENT_ORDER):
            continue
        if not opts.merge_parallel_list:
            if key in original and original[key] != order:
                raise _bad(BAD_SET_ELEMENT_ORDER)
            original.setdefault(key, order)
        del patch[key]
        if not isinstance(order, list):
            raise _error(_bad_arg_type(SLICE_TYPE, order))
        list_key = _extract_key(key, SET_ELEMENT_ORDER)
        found_original, found_patch = list_key in original, list_key in patch
        original_list = original.get(list_key) if found_original else None
        patch_list = patch.get(list_key) if found_patch else None
        if found_original and not isinstance(original_list, list):
            raise _error(_bad_arg_type(SLICE_TYPE, original_list))
        if found_patch and not isinstance(patch_list, list):
            raise _error(_bad_arg_type(SLICE_TYPE, patch_list))
        element, strategies, merge_key = _slice_meta(node, list_key)
        strategy = _patch_strategy(strategies)
        _validate_patch_with_set_order(patch_list or [], order, merge_key)
        if found_original and found_patch:
            merged = _merge_slice_handler(original_list, patch_list, element, strategy, merge_key, False, opts)
        elif found_patch:
            merged, _ = _remove_directives(patch_list)
        elif found_original:
            merged = original_list
        else:
            continue
        if not merge_key:
            patch_items, server_only = _partition_primitives(merged, order)
        else:
            patch_items, server_only = _partition_maps(merged, order, merge_key)
        kind = _slice_element_kind(original_list or [], patch_list or [])
        original[list_key] = _normalize_element_order(patch_items, server_only, order, original_list or [],
                                                      merge_key, kind)
        patch.pop(list_key, None)


def _validate_patch_with_set_order(patch_list: list, order: list, merge_key: str) -> None:
    """validatePatchWithSetOrderList: the patch items appear in ``$setElementOrder``, in that order."""
    if not order or not patch_list:
        return
    non_delete = _extract_to_delete(patch_list)[0] if merge_key else patch_list
    p = s = 0
    while p < len(non_delete) and s < len(order):
        if isinstance(non_delete[p], dict) and DIRECTIVE in non_delete[p]:
            p += 1
            continue
        if _merge_key_equal(non_delete[p], order[s], merge_key):
            p += 1
        s += 1
    if p < len(non_delete) and s >= len(order):
        raise _error(f"the order in patch list:\n{go_v(patch_list)}\n doesn't match {SET_ELEMENT_ORDER} list:\n"
                     f"{go_v(order)}")


def _merge_key_equal(left, right, merge_key: str) -> bool:
    if not merge_key:
        return _same(left, right)
    for item in (left, right):
        if not isinstance(item, dict):
            raise _error(_bad_arg_type(MAP_TYPE, item))
        if merge_key not in item:
            raise _error(_no_merge_key(item, merge_key))
    return _same(left[merge_key], right[merge_key])


# --- lists ---------------------------------------------------------------------------------
def _merge_slice_handler(original: list, patch: list, element: Node, strategy: str, merge_key: str,
                         is_delete_list: bool, opts: _Options) -> list:
    if strategy == MERGE or is_delete_list:
        return _merge_slice(original, patch, element, merge_key, opts, is_delete_list)
    return patch


def _merge_slice(original: list, patch: list, element: Node, merge_key: str, opts: _Options,
                 is_delete_list: bool) -> list:
    if not original and not patch:
        return original
    kind = _slice_element_kind(original, patch)
    if kind != MAP_TYPE:
        if opts.merge_parallel_list and is_delete_list:
            doomed = {_hashable(v) for v in patch}
            return [v for v in original if _hashable(v) not in doomed]
        merged = _deduplicate(original + patch)
    else:
        if not merge_key:
            raise _error("cannot merge lists without merge key for struct")
        original, patch = _merge_special_elements(original, patch, merge_key)
        merged = _merge_plain_elements(original, patch, merge_key, element, opts)
    if not merge_key:
        patch_items, server_only = _partition_primitives(merged, patch)
    else:
        patch_items, server_only = _partition_maps(merged, patch, merge_key)
    return _normalize_element_order(patch_items, server_only, patch, original, merge_key, kind)


def _slice_element_kind(*lists) -> str:
    """sliceElementType: every item has the same Go type, and no item is a list."""
    kind = None
    for items in lists:
        for v in items:
            t = go_type(v)
            if kind is None:
                kind = t
                if t == SLICE_TYPE:
                    raise _PatchError(unprocessable())
            elif kind != t:
                raise _error(f"list element types are not identical: {go_v(list(lists))}")
    if kind is None:
        raise _error("no elements in any of the given slices")
    return kind


def _deduplicate(items: list) -> list:
    """deduplicateScalars, including its swap-with-last order."""
    s = list(items)
    length = len(s) - 1
    i = 0
    while i < length:
        j = i + 1
        while j <= length:
            if _same(s[i], s[j]):
                s[j] = s[length]
                s = s[:length]
                length -= 1
                j -= 1
            j += 1
        i += 1
    return s


def _merge_special_elements(original: list, patch: list, merge_key: str) -> tuple[list, list]:
    """mergeSliceWithSpecialElements: ``$patch: delete`` items, ``$patch: replace``."""
    plain, replace = [], False
    for item in patch:
        if DIRECTIVE not in item:
            plain.append(item)
            continue
        directive = item[DIRECTIVE]
        if _same(directive, DELETE):
            if merge_key not in item:
                raise _error(_no_merge_key(item, merge_key))
            original = _delete_matching(original, merge_key, item[merge_key])
        elif _same(directive, REPLACE):
            replace = True
        elif _same(directive, MERGE):
            raise _error("merging lists cannot yet be specified in the patch")
        else:
            raise _error(f"unknown patch type: {go_s(directive)} in map: {go_v(item)}")
    if replace:
        return plain, []
    return original, plain


def _find_map(items: list, key: str, value):
    """findMapInSliceBasedOnKeyValue -> index or -1."""
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise _error(f"value for key {i} is not a map")
        if key in item and _same(item[key], value):
            return i
    return -1


def _delete_matching(original: list, key: str, value) -> list:
    original = list(original)
    while (i := _find_map(original, key, value)) >= 0:
        del original[i]
    return original


def _merge_plain_elements(original: list, patch: list, merge_key: str, element: Node, opts: _Options) -> list:
    """mergeSliceWithoutSpecialElements: merge items with the same key, append the others."""
    original = list(original)
    for item in patch:
        if merge_key not in item:
            raise _error(_no_merge_key(item, merge_key))
        i = _find_map(original, merge_key, item[merge_key])
        if i >= 0:
            original[i] = _merge_map(original[i], item, element, opts)
        else:
            original.append(item)
    return original


def _partition_primitives(items: list, partition_by: list) -> tuple[list, list]:
    wanted = {_hashable(v) for v in partition_by}
    return [v for v in items if _hashable(v) in wanted], [v for v in items if _hashable(v) not in wanted]


def _partition_maps(items: list, partition_by: list, merge_key: str) -> tuple[list, list]:
    in_patch, server_only = [], []
    for item in items:
        if not isinstance(item, dict):
            raise _error(_bad_arg_type(MAP_TYPE, item))
        if merge_key not in item:
            raise _error(_no_merge_key(item, merge_key))
        (in_patch if _find_map(partition_by, merge_key, item[merge_key]) >= 0 else server_only).append(item)
    return in_patch, server_only


# --- order ---------------------------------------------------------------------------------
def _normalize_element_order(patch_items: list, server_only: list, patch_order: list, server_order: list,
                             merge_key: str, kind: str) -> list:
    """normalizeElementOrder: patch items in patch order, server-only items in live order, interleaved."""
    patch_items = _normalize_slice_order(patch_items, patch_order, merge_key, kind)
    server_only = _normalize_slice_order(server_only, server_order, merge_key, kind)
    return _merge_sorted(server_only, patch_items, server_order, merge_key, kind)


def _index(items: list, value, merge_key: str, kind: str) -> int:
    def key_of(item):
        if kind == MAP_TYPE:
            return item.get(merge_key) if isinstance(item, dict) else None
        return item
    wanted = key_of(value)
    for i, item in enumerate(items):
        got = key_of(item)
        if (wanted is None and got is None) or _same(wanted, got):
            return i
    return -1


def _extract_to_delete(items: list) -> tuple[list, list]:
    keep, doomed = [], []
    for item in items:
        if not isinstance(item, dict):
            raise _error(_bad_arg_type(MAP_TYPE, item))
        (doomed if _same(item.get(DIRECTIVE), DELETE) else keep).append(item)
    return keep, doomed


def _normalize_slice_order(to_sort: list, order: list, merge_key: str, kind: str) -> list:
    doomed: list = []
    if kind == MAP_TYPE:
        for item in list(to_sort) + list(order):
            if not isinstance(item, dict):
                raise _error(_bad_arg_type(MAP_TYPE, item))
            if merge_key not in item:
                raise _error(_no_merge_key(item, merge_key))
        to_sort, doomed = _extract_to_delete(to_sort)

    def less(a, b) -> bool:
        ia = _index(order, a, merge_key, kind)
        if ia >= 0:
            ib = _index(order, b, merge_key, kind)
            if ib >= 0:
                return ia < ib
        return True
    return slice_stable(list(to_sort), less) + doomed


def _merge_sorted(left: list, right: list, server_order: list, merge_key: str, kind: str) -> list:
    """mergeSortedSlice: insert server-only items among patch items by their live order."""
    out, i, j = [], 0, 0
    while i < len(left) and j < len(right):
        li = _index(server_order, left[i], merge_key, kind)
        ri = _index(server_order, right[j], merge_key, kind)
        if li >= 0 and ri >= 0 and li < ri:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    return out + left[i:] + right[j:]
