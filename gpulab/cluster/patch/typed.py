"""Schema-aware walks over objects: field sets, merge, compare, remove, validate.

Port of sigs.k8s.io/structured-merge-diff typed/ (tofieldset.go, merge.go,
compare.go, remove.go, validate.go, helpers.go), the engine under server-side
apply and managedFields. Values are plain JSON; :data:`ABSENT` stands for Go's
nil ``value.Value`` (the field is not there), distinct from ``None`` (JSON null).
No Python library implements structured-merge-diff.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .fieldpath import FieldSet, PathElement, key_element
from .fieldpath import field as field_element
from .schema_walk import ASSOCIATIVE, ATOMIC, DEDUCED, Node, resolve


class _Absent:
    __slots__ = ()

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = _Absent()


class ItemError(Exception):
    """A list item that cannot be turned into a path element (helpers.go listItemToPathElement)."""


def list_item_element(node: Node, item, index: int) -> PathElement:
    if node.relationship != ASSOCIATIVE:
        raise ItemError("invalid indexing of non-associative list")
    if node.keys:
        if item is None:
            raise ItemError("associative list with keys may not have a null element")
        if not isinstance(item, dict):
            raise ItemError("associative list with keys may not have non-map elements")
        fields = {}
        for key in node.keys:
            if key in item:
                fields[key] = item[key]
            elif key in node.key_defaults:
                fields[key] = node.key_defaults[key]
            else:
                raise ItemError(f'associative list with keys has an element that omits key field "{key}" '
                                "(and doesn't have default value)")
        return key_element(fields)
    if isinstance(item, dict):
        raise ItemError("associative list without keys has an element that's a map type")
    if isinstance(item, list):
        raise ItemError("not supported: associative list with lists as elements")
    return PathElement("v", value=item)


def values_equal(a, b) -> bool:
    """value.Equals: ints and floats compare numerically, bools are not numbers, maps ignore key order."""
    a_num = isinstance(a, (int, float)) and not isinstance(a, bool)
    b_num = isinstance(b, (int, float)) and not isinstance(b, bool)
    if a_num or b_num:
        return a_num and b_num and a == b
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, list) or isinstance(b, list):
        return (isinstance(a, list) and isinstance(b, list) and len(a) == len(b)
                and all(values_equal(x, y) for x, y in zip(a, b)))
    if isinstance(a, dict) or isinstance(b, dict):
        return (isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys()
                and all(values_equal(a[k], b[k]) for k in a))
    return a is None and b is None


def _child(node: Node, key: str) -> Node:
    return node.child(key) or DEDUCED


# --- ToFieldSet --------------------------------------------------------------
def to_field_set(value, node: Node) -> FieldSet:
    """TypedValue.ToFieldSet: every leaf, every list item, every map entry that is not a struct field."""
    out = FieldSet()
    _to_field_set(value, node, (), out)
    return out


def _to_field_set(value, node, path, out: FieldSet) -> None:
    atom = resolve(node, value)
    if atom.kind in ("scalar", "untyped"):
        out.insert(path)
    elif atom.kind == "list":
        if atom.relationship == ATOMIC:
            out.insert(path)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                try:
                    pe = list_item_element(atom, item, i)
                except ItemError:
                    continue
                _to_field_set(item, atom.element(), path + (pe,), out)
                out.insert(path + (pe,))
    elif atom.relationship == ATOMIC:
        out.insert(path)
    elif isinstance(value, dict):
        for key, val in value.items():
            child_path = path + (field_element(key),)
            _to_field_set(val, _child(atom, key), child_path, out)
            if not atom.is_named_field(key):
                out.insert(child_path)


# --- Validate ---------------------------------------------------------------
def validate(value, node: Node, *, allow_duplicates: bool = False) -> list[str]:
    """validate.go: the errors ObjectToTyped reports (undeclared fields, bad list items, duplicates).

    Scalar type checks are left to the API's own validation.
    """
    errors: list[str] = []
    _validate(value, node, "", errors, allow_duplicates)
    return errors


def _validate(value, node, prefix: str, errors: list[str], allow_duplicates: bool) -> None:
    atom = resolve(node, value)
    if atom.kind == "list" and isinstance(value, list):
        seen = set()
        for i, item in enumerate(value):
            if atom.relationship != ASSOCIATIVE:
                pe = PathElement("i", index=i)
            else:
                try:
                    pe = list_item_element(atom, item, i)
                except ItemError as e:
                    errors.append(f"{prefix}: element {i}: {e}" if prefix else f"element {i}: {e}")
                    return
                if pe in seen and not allow_duplicates:
                    errors.append(f"{prefix}: duplicate entries for key {pe}")
                seen.add(pe)
            _validate(item, atom.element(), prefix + str(pe), errors, allow_duplicates)
    elif atom.kind == "map" and isinstance(value, dict):
        for key, val in value.items():
            child = atom.child(key)
            if child is None:
                errors.append(f"{prefix}.{key}: field not declared in schema")
                return
            _validate(val, child, f"{prefix}.{key}", errors, allow_duplicates)


# --- Merge ------------------------------------------------------------------
def merge(lhs, rhs, node: Node):
    """TypedValue.Merge with ruleKeepRHS: the applied configuration wins at every leaf."""
    return _merge(lhs, rhs, node)


def _leaf(lhs, rhs):
    return rhs if rhs is not ABSENT else lhs


def _merge(lhs, rhs, node):
    atom = resolve(node, rhs if rhs is not ABSENT else lhs)
    if atom.kind in ("scalar", "untyped"):
        return _leaf(lhs, rhs)
    if atom.kind == "list":
        ll = lhs if isinstance(lhs, list) else None
        rl = rhs if isinstance(rhs, list) else None
        if atom.relationship == ATOMIC or (not ll and not rl):
            return _leaf(lhs, rhs)
        return _merge_list(ll, rl, atom)
    lm = lhs if isinstance(lhs, dict) else None
    rm = rhs if isinstance(rhs, dict) else None
    if atom.relationship == ATOMIC or (not lm and not rm):
        return _leaf(lhs, rhs)
    out = {}
    for key in list(lm or ()) + [k for k in (rm or ()) if k not in (lm or ())]:
        value = _merge((lm or {}).get(key, ABSENT), (rm or {}).get(key, ABSENT), _child(atom, key))
        if value is not ABSENT:
            out[key] = value
    return out if out else ABSENT


def _index(items, node, allow_duplicates: bool):
    pes, observed = [], {}
    for i, item in enumerate(items or ()):
        try:
            pe = list_item_element(node, item, i)
        except ItemError:
            continue
        if pe in observed:
            if not allow_duplicates:
                continue
            observed[pe] = None
        else:
            observed[pe] = item
        pes.append(pe)
    return pes, observed


def _merge_list(lhs, rhs, node):
    """mergingWalker.visitListItems: keep both sides' relative order, merging shared items."""
    element = node.element()
    rhs_pes, observed_rhs = _index(rhs, node, False)
    lhs_pes, observed_lhs = _index(lhs, node, True)
    shared = [pe for pe in rhs_pes if pe in observed_lhs]
    next_shared = shared.pop(0) if shared else None
    merged_rhs = set()
    out = []
    li = ri = 0
    while li < len(lhs_pes) or ri < len(rhs_pes):
        if li < len(lhs_pes) and ri < len(rhs_pes):
            pe = lhs_pes[li]
            if pe == rhs_pes[ri]:
                merged_rhs.add(pe)
                value = _merge(observed_lhs[pe], observed_rhs[pe], element)
                if value is not ABSENT:
                    out.append(value)
                li += 1
                ri += 1
                next_shared = shared.pop(0) if shared else None
                continue
            if pe in observed_rhs and next_shared is not None and next_shared != pe:
                li += 1
                continue
        if li < len(lhs_pes):
            pe = lhs_pes[li]
            if pe not in observed_rhs:
                value = _merge(lhs[li] if li < len(lhs) else observed_lhs[pe], ABSENT, element)
                if value is not ABSENT:
                    out.append(value)
                li += 1
                continue
            if pe in merged_rhs:
                li += 1
                continue
        if ri < len(rhs_pes):
            pe = rhs_pes[ri]
            merged_rhs.add(pe)
            value = _merge(observed_lhs.get(pe, ABSENT), observed_rhs[pe], element)
            if value is not ABSENT:
                out.append(value)
            ri += 1
            if next_shared is not None and next_shared == pe:
                next_shared = shared.pop(0) if shared else None
    return out if out else ABSENT


# --- Compare ----------------------------------------------------------------
@dataclass
class Comparison:
    removed: FieldSet = field(default_factory=FieldSet)
    modified: FieldSet = field(default_factory=FieldSet)
    added: FieldSet = field(default_factory=FieldSet)

    def exclude(self, fields: FieldSet | None) -> "Comparison":
        """Comparison.ExcludeFields."""
        if fields is None or fields.empty():
            return self
        return Comparison(self.removed.recursive_difference(fields), self.modified.recursive_difference(fields),
                          self.added.recursive_difference(fields))


def compare(lhs, rhs, node: Node) -> Comparison:
    """TypedValue.Compare: leaves added/removed/modified, plus containers that appeared or vanished."""
    result = Comparison()
    _compare(lhs, rhs, node, (), result)
    return result


def _compare_leaf(lhs, rhs, path, result: Comparison) -> None:
    if lhs is ABSENT:
        result.added.insert(path)
    elif rhs is ABSENT:
        result.removed.insert(path)
    elif not values_equal(lhs, rhs):
        result.modified.insert(path)


def _compare(lhs, rhs, node, path, result: Comparison) -> None:
    atom = resolve(node, rhs if rhs is not ABSENT else lhs)
    leaf = False
    if atom.kind in ("scalar", "untyped"):
        leaf = True
    elif atom.kind == "list":
        ll = lhs if isinstance(lhs, list) else None
        rl = rhs if isinstance(rhs, list) else None
        if atom.relationship == ATOMIC or (not ll and not rl):
            leaf = True
        else:
            _compare_list(ll, rl, atom, path, result)
    else:
        lm = lhs if isinstance(lhs, dict) else None
        rm = rhs if isinstance(rhs, dict) else None
        if atom.relationship == ATOMIC or (not lm and not rm):
            leaf = True
        else:
            for key in list(lm or ()) + [k for k in (rm or ()) if k not in (lm or ())]:
                _compare((lm or {}).get(key, ABSENT), (rm or {}).get(key, ABSENT), _child(atom, key),
                         path + (field_element(key),), result)
    if leaf:
        _compare_leaf(lhs, rhs, path, result)
    elif lhs is ABSENT:
        result.added.insert(path)
    elif rhs is ABSENT:
        result.removed.insert(path)


def _compare_list(lhs, rhs, node, path, result: Comparison) -> None:
    """compareWalker.visitListItems: every item present on either side, first occurrence of a key only."""
    element = node.element()
    left, right = _first_items(lhs, node), _first_items(rhs, node)
    for pe in list(left) + [pe for pe in right if pe not in left]:
        _compare(left.get(pe, ABSENT), right.get(pe, ABSENT), element, path + (pe,), result)


def _first_items(items, node) -> dict:
    out = {}
    for i, item in enumerate(items or ()):
        try:
            out.setdefault(list_item_element(node, item, i), item)
        except ItemError:
            continue
    return out


# --- RemoveItems ------------------------------------------------------------
def remove_items(value, to_remove: FieldSet, node: Node):
    """TypedValue.RemoveItems: drop the listed paths; a container emptied by it disappears.

    Upstream leaves ``null`` where a container was emptied; typed decoding turns
    that into an absent field, which is what is returned here.
    """
    result = _remove(value, to_remove, node)
    return {} if result is ABSENT and isinstance(value, dict) else result


def _remove(value, to_remove: FieldSet, node):
    atom = resolve(node, value)
    if atom.kind in ("scalar", "untyped"):
        return value
    if atom.kind == "list":
        if not isinstance(value, list) or not value or atom.relationship == ATOMIC:
            return ABSENT
        items = []
        for i, item in enumerate(value):
            try:
                pe = list_item_element(atom, item, i)
            except ItemError:
                items.append(item)
                continue
            if to_remove.has((pe,)):
                continue
            subset = to_remove.with_prefix(pe)
            if not subset.empty():
                item = _remove(item, subset, atom.element())
                if item is ABSENT:
                    item = None
            items.append(item)
        return items if items else ABSENT
    if not isinstance(value, dict) or not value or atom.relationship == ATOMIC:
        return ABSENT
    out = {}
    for key, val in value.items():
        pe = field_element(key)
        if to_remove.has((pe,)):
            continue
        subset = to_remove.with_prefix(pe)
        if not subset.empty():
            val = _remove(val, subset, _child(atom, key))
            if val is ABSENT:
                continue
        out[key] = val
    return out if out else ABSENT

