"""Sets of field paths and their FieldsV1 encoding, as sigs.k8s.io/structured-merge-diff keeps them.

Server-side apply records who owns what as sets of paths such as
``.spec.template.spec.containers[name="app"].image``; ``metadata.managedFields``
stores each set in the FieldsV1 JSON form (``{"f:spec": {"f:replicas": {}}}``,
``k:{"name":"app"}``, ``v:"finalizer"``, ``i:0`` and ``.`` for a node that is
itself a member). Port of fieldpath/element.go, path.go, set.go,
serialize.go and serialize-pe.go; no Python library implements this format.
"""
from __future__ import annotations

import functools
import json

from ..gofmt import go_float, go_json, go_quote

_TYPE_RANK = {"f": 0, "k": 1, "v": 2, "i": 3}


def value_key(value):
    """A hashable, total-order key following value.Compare: numbers < strings < bools < lists < maps < null."""
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, (int, float)):
        return (0, value)
    if isinstance(value, str):
        return (1, value)
    if isinstance(value, list):
        return (3, tuple(value_key(v) for v in value))
    if isinstance(value, dict):
        return (4, tuple((k, value_key(value[k])) for k in sorted(value)))
    return (5,)


def value_text(value) -> str:
    """value.ToString: strings quoted, numbers and bools bare."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, list):
        return "[" + ",".join(value_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "".join(f"{k}={value_text(value[k])}" for k in value)
    return str(value)


class PathElement:
    """One step: a field name (f), an associative-list key (k), a set value (v) or an index (i).

    Immutable; its identity (what equality and hashing use) is computed once.
    """

    __slots__ = ("type", "name", "key", "value", "index", "_identity", "_hash")

    def __init__(self, type: str, name: str = "", key: tuple = (), value=None, index: int = 0):
        self.type, self.name, self.key, self.value, self.index = type, name, key, value, index
        if type == "f":
            self._identity = ("f", name)
        elif type == "k":
            self._identity = ("k", tuple((n, value_key(v)) for n, v in key))
        elif type == "v":
            self._identity = ("v", value_key(value))
        else:
            self._identity = ("i", index)
        self._hash = hash(self._identity)

    def __eq__(self, other):
        return isinstance(other, PathElement) and self._identity == other._identity

    def __hash__(self):
        return self._hash

    def __repr__(self) -> str:
        return f"PathElement({self.serialize()})"

    def sort_key(self):
        return (_TYPE_RANK[self.type],) + self._identity[1:]

    def __str__(self) -> str:
        """PathElement.String: ``.name``, ``[k=v,...]``, ``[=v]``, ``[i]``."""
        if self.type == "f":
            return "." + self.name
        if self.type == "k":
            return "[" + ",".join(f"{n}={value_text(v)}" for n, v in self.key) + "]"
        if self.type == "v":
            return f"[={value_text(self.value)}]"
        return f"[{self.index}]"

    def serialize(self) -> str:
        """serialize-pe.go: ``f:name``, ``k:{json}``, ``v:json``, ``i:n``."""
        if self.type == "f":
            return "f:" + self.name
        if self.type == "k":
            return "k:{" + ",".join(f"{go_json(n)}:{go_json(v)}" for n, v in self.key) + "}"
        if self.type == "v":
            return "v:" + go_json(self.value)
        return f"i:{self.index}"


@functools.lru_cache(maxsize=4096)
def field(name: str) -> PathElement:
    return PathElement("f", name=name)


def key_element(fields: dict) -> PathElement:
    return PathElement("k", key=tuple(sorted(fields.items())))


def parse_element(text: str) -> PathElement:
    """DeserializePathElement."""
    prefix, sep, rest = text.partition(":")
    if not sep:
        raise ValueError(f"unknown path element prefix {text!r}")
    if prefix == "f":
        return field(rest)
    if prefix == "k":
        return key_element(json.loads(rest))
    if prefix == "v":
        return PathElement("v", value=json.loads(rest))
    if prefix == "i":
        return PathElement("i", index=int(rest))
    raise ValueError(f"unknown path element prefix {prefix!r}")


def path_string(path) -> str:
    return "".join(str(pe) for pe in path)


class FieldSet:
    """fieldpath.Set: leaf members plus child sets, both keyed by PathElement."""

    __slots__ = ("members", "children", "_trail")

    def __init__(self):
        self.members: set[PathElement] = set()
        self.children: dict[PathElement, FieldSet] = {}
        self._trail: tuple[tuple, list] | None = None  # see _node_at

    @classmethod
    def of(cls, *paths) -> "FieldSet":
        s = cls()
        for p in paths:
            s.insert(p)
        return s

    def insert(self, path) -> None:
        if not path:
            return
        self._node_at(path[:-1]).members.add(path[-1])

    def _node_at(self, prefix: tuple) -> "FieldSet":
        """The child set at ``prefix``, created as needed. The walks that build sets insert a path and then
        its parent (or its child), so the nodes along the last prefix are kept: without them a walk over an
        object nested N levels deep costs N * N steps."""
        trail, nodes = self._trail or ((), [])
        depth = len(prefix)
        if depth <= len(trail) and trail[:depth] == prefix:
            return nodes[depth - 1] if depth else self
        shared = len(trail) if trail and prefix[:len(trail)] == trail else 0
        nodes = nodes[:shared]
        node = nodes[-1] if nodes else self
        for pe in prefix[shared:]:
            child = node.children.get(pe)
            if child is None:
                child = node.children[pe] = FieldSet()
            nodes.append(child)
            node = child
        self._trail = (prefix, nodes)
        return node

    def has(self, path) -> bool:
        node = self
        for pe in path[:-1]:
            node = node.children.get(pe)
            if node is None:
                return False
        return bool(path) and path[-1] in node.members

    def empty(self) -> bool:
        return not self.members and all(c.empty() for c in self.children.values())

    def with_prefix(self, pe: PathElement) -> "FieldSet":
        return self.children.get(pe) or FieldSet()

    def copy(self) -> "FieldSet":
        out = FieldSet()
        out.members = set(self.members)
        out.children = {pe: c.copy() for pe, c in self.children.items()}
        return out

    def union(self, other: "FieldSet") -> "FieldSet":
        out = FieldSet()
        out.members = self.members | other.members
        for pe in self.children.keys() | other.children.keys():
            a, b = self.children.get(pe), other.children.get(pe)
            out.children[pe] = a.union(b) if a and b else (a or b).copy()
        return out

    def intersection(self, other: "FieldSet") -> "FieldSet":
        out = FieldSet()
        out.members = self.members & other.members
        for pe, a in self.children.items():
            b = other.children.get(pe)
            if b is not None:
                c = a.intersection(b)
                if not c.empty():
                    out.children[pe] = c
        return out

    def difference(self, other: "FieldSet") -> "FieldSet":
        """Removes the paths of ``other``, keeping their descendants."""
        out = FieldSet()
        out.members = self.members - other.members
        for pe, a in self.children.items():
            b = other.children.get(pe)
            c = a.difference(b) if b is not None else a.copy()
            if not c.empty():
                out.children[pe] = c
        return out

    def recursive_difference(self, other: "FieldSet") -> "FieldSet":
        """Removes the paths of ``other`` and everything below them."""
        out = FieldSet()
        out.members = self.members - other.members
        for pe, a in self.children.items():
            if pe in other.members:
                continue
            b = other.children.get(pe)
            c = a.recursive_difference(b) if b is not None else a.copy()
            if not c.empty():
                out.children[pe] = c
        return out

    def ensure_named_fields_are_members(self, node) -> "FieldSet":
        """Set.EnsureNamedFieldsAreMembers: a struct field with owned children is owned too."""
        out = FieldSet()
        out.members = set(self.members)
        for pe, child in self.children.items():
            child_node = None
            if node is not None and node.kind in ("map", "deduced") and pe.type == "f":
                if node.is_named_field(pe.name):
                    out.members.add(pe)
                child_node = node.child(pe.name)
            elif node is not None and node.kind == "list" and pe.type == "k":
                child_node = node.element()
            out.children[pe] = child.ensure_named_fields_are_members(child_node)
        return out

    def iterate(self, prefix=()):
        """Set.Iterate order: this level's members, then each child, sorted."""
        for pe in sorted(self.members, key=PathElement.sort_key):
            yield prefix + (pe,)
        for pe in sorted(self.children, key=PathElement.sort_key):
            yield from self.children[pe].iterate(prefix + (pe,))

    # --- FieldsV1 ------------------------------------------------------------
    def to_fields_v1(self) -> dict:
        """Set.ToJSON, as a dict whose key order is the serialized order."""
        return self._emit(False)

    def _emit(self, own: bool) -> dict:
        out: dict = {}
        if own:
            out["."] = {}
        for pe in sorted(self.members | self.children.keys(), key=PathElement.sort_key):
            child = self.children.get(pe)
            if child is None or child.empty():
                out[pe.serialize()] = {}
            else:
                out[pe.serialize()] = child._emit(pe in self.members)
        return out

    @classmethod
    def from_fields_v1(cls, data: dict) -> "FieldSet":
        """Set.FromJSON."""
        out = cls()
        if not isinstance(data, dict):
            raise ValueError("expected an object")
        for text, sub in data.items():
            if text == ".":
                continue
            pe = parse_element(text)
            if not isinstance(sub, dict):
                raise ValueError(f"expected an object for {text}")
            if not sub or "." in sub:
                out.members.add(pe)
            if any(k != "." for k in sub):
                out.children[pe] = cls.from_fields_v1(sub)
        return out

    def __eq__(self, other):
        return isinstance(other, FieldSet) and self.to_fields_v1() == other.to_fields_v1()

    def __repr__(self) -> str:
        return f"FieldSet({json.dumps(self.to_fields_v1())})"
