"""The syntax tree of a compiled CEL expression, read from cel-expr-python's serialized ``CheckedExpr``.

kube-apiserver estimates a rule's cost on cel-go's checked AST (checker/cost.go walks its nodes). cel-expr-python
exposes no AST, but ``Expression.serialize()`` gives the ``google.protobuf.Any`` of a ``cel.expr.CheckedExpr``
(cel-spec proto/cel/expr/checked.proto, syntax.proto), whose ``expr`` is the same tree after macro expansion
(``all``, ``exists``, ``map``... as comprehensions over ``@result``). Only the tree is read: types come from the
CRD's schema (:mod:`gpulab.cluster.validation.rule_cost`), since rules see ``self`` as ``dyn`` here.

The protobuf package is not installed; the format needs varints and length-delimited slices only.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

# syntax.proto field numbers
_EXPR_ID, _CONST, _IDENT, _SELECT, _CALL, _LIST, _STRUCT, _COMPREHENSION = 2, 3, 4, 5, 6, 7, 8, 9


@dataclass
class Node:
    """One ``Expr``: ``kind`` is literal, ident, select, call, list, map, struct or comprehension."""

    id: int
    kind: str
    name: str = ""            # ident name, select field, call function
    value: object = None      # a literal's value
    test_only: bool = False   # has(...)
    target: Node | None = None
    args: list[Node] = field(default_factory=list)   # call arguments, list elements, map keys and values
    iter_var: str = ""
    iter_var2: str = ""
    accu_var: str = ""
    iter_range: Node | None = None
    accu_init: Node | None = None
    loop_condition: Node | None = None
    loop_step: Node | None = None
    result: Node | None = None


def parse(serialized: bytes) -> Node:
    """The ``expr`` of the ``CheckedExpr`` inside ``serialized`` (an ``Any``)."""
    checked = _first(serialized, 2)
    return _expr(_first(checked, 4))


def _fields(buf: bytes):
    """(number, value) of each field: ints for varints and fixed64, bytes for length-delimited ones."""
    i, end = 0, len(buf)
    while i < end:
        key, i = _varint(buf, i)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, i = _varint(buf, i)
        elif wire_type == 1:
            value, i = buf[i:i + 8], i + 8
        elif wire_type == 2:
            n, i = _varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif wire_type == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"unexpected wire type {wire_type}")
        yield number, value


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7


def _first(buf: bytes, number: int) -> bytes:
    return next((v for n, v in _fields(buf) if n == number), b"")


def _expr(buf: bytes) -> Node:
    node = Node(0, "literal")
    for number, value in _fields(buf):
        if number == _EXPR_ID:
            node.id = value
        elif number == _CONST:
            node.kind, node.value = "literal", _constant(value)
        elif number == _IDENT:
            node.kind, node.name = "ident", _first(value, 1).decode()
        elif number in (_SELECT, _CALL):  # {operand or target = 1, field or function = 2, test_only or args = 3}
            node.kind = "select" if number == _SELECT else "call"
            for n, v in _fields(value):
                if n == 1:
                    node.target = _expr(v)
                elif n == 2:
                    node.name = v.decode()
                elif n == 3 and number == _SELECT:
                    node.test_only = bool(v)
                elif n == 3:
                    node.args.append(_expr(v))
        elif number == _LIST:
            node.kind, node.args = "list", [_expr(v) for n, v in _fields(value) if n == 1]
        elif number == _STRUCT:
            _struct(node, value)
        elif number == _COMPREHENSION:
            _comprehension(node, value)
    return node


def _constant(buf: bytes) -> object:
    for number, value in _fields(buf):
        if number == 1:
            return None
        if number == 2:
            return bool(value)
        if number in (3, 4):
            return value - (1 << 64) if number == 3 and value >= 1 << 63 else value
        if number == 5:
            return struct.unpack("<d", value)[0]
        if number == 6:
            return value.decode()
        if number == 7:
            return bytes(value)
    return None


def _struct(node: Node, buf: bytes) -> None:
    """A message (``struct``, with a name) or a map literal: keys and values alternate in ``args``."""
    node.kind = "map"
    for number, value in _fields(buf):
        if number == 1 and value:
            node.kind, node.name = "struct", value.decode()
        elif number == 2:
            entry = dict(_fields(value))
            key = _expr(entry[3]) if 3 in entry else Node(0, "literal", value=entry.get(2, b"").decode())
            node.args += [key, _expr(entry.get(4, b""))]


def _comprehension(node: Node, buf: bytes) -> None:
    node.kind = "comprehension"
    for number, value in _fields(buf):
        if number == 1:
            node.iter_var = value.decode()
        elif number == 2:
            node.iter_range = _expr(value)
        elif number == 3:
            node.accu_var = value.decode()
        elif number == 4:
            node.accu_init = _expr(value)
        elif number == 5:
            node.loop_condition = _expr(value)
        elif number == 6:
            node.loop_step = _expr(value)
        elif number == 7:
            node.result = _expr(value)
        elif number == 8:
            node.iter_var2 = value.decode()
