"""The worst-case cost of a CEL expression, estimated before it ever runs, as kube-apiserver estimates it.

A CRD's rule is refused when it is written if its estimated cost is over budget, so that no object can make its
evaluation run away later. This is cel-go checker/cost.go (``Cost``: the ``coster`` walk over the checked AST,
sizes from constants, the schema and the operations, comprehensions costing their range's size times their
step) with the estimators kube-apiserver plugs in: k8s.io/apiserver pkg/cel/library/cost.go (``CostEstimator``,
for the Kubernetes library functions this environment has: quantity and semver) and the sizes of apiextensions'
schema/cel/compilation.go ``sizeEstimator`` (a path through the schema's :class:`Type` to its ``MaxElements``).
Presence tests (``has()``) cost nothing, as environment/base.go sets ``PresenceTestHasCost(false)``.

Only the maximum of cel-go's (min, max) cost range is computed: it is the one the budget is checked against.
Sizes keep both ends, since some estimates (string ``==``) take the smaller of two maxima. Types are not
cel-go's checker's but those of the schema (:class:`Type`) propagated through the expression; where a type is
unknown (``dyn``) the costliest overload is taken, as cel-go takes the union of a call's overloads.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .checked import Node

MAX = (1 << 64) - 1
_TWO_TO_64 = float(1 << 64)
STRING_TRAVERSAL = 0.1      # common.StringTraversalCostFactor
REGEX_LENGTH = 0.25         # common.RegexStringLengthCostFactor
_LIST_CREATE, _MAP_CREATE, _STRUCT_CREATE = 10, 30, 40
_ACCUMULATORS = ("__result__", "@result")
_SCALARS = ("bool", "double", "duration", "int", "timestamp", "uint")
_UNKNOWN = (0, MAX)


@dataclass
class Type:
    """What an expression's value is, with apiserver's DeclType sizes (``MaxElements``, ``MinSerializedSize``).

    ``kind``: object, map, list, string, bytes, int, uint, double, bool, duration, timestamp, null, dyn, or a
    library type (quantity, semver).
    """

    kind: str
    elem: Type | None = None
    key: Type | None = None
    fields: dict[str, Type] = field(default_factory=dict)
    max_elements: int = 0
    min_size: int = 0


DYN = Type("dyn")
_BOOL, _INT, _STRING = Type("bool"), Type("int"), Type("string")


def add(x: int, y: int) -> int:
    return min(x + y, MAX)


def multiply(x: int, y: int) -> int:
    return min(x * y, MAX)


def by_factor(x: int, factor: float) -> int:
    """multiplyByCostFactor: x times a float factor, rounded up, saturating."""
    if x > 0 and factor > 0 and x > MAX / factor:
        return MAX
    product = math.ceil(x * factor)
    return MAX if product >= _TWO_TO_64 else product


def _union(a, b):
    return (min(a[0], b[0]), max(a[1], b[1]))


def _size_add(a, b):
    return (add(a[0], b[0]), add(a[1], b[1]))


@dataclass
class _Local:
    path: list[str]
    size: tuple[int, int] | None
    entry: tuple | None
    type: Type


def estimate(root: Node, self_type: Type) -> int:
    """The maximum estimated cost of ``root``, a rule whose ``self`` and ``oldSelf`` are of ``self_type``."""
    return _Coster(self_type).cost(root)


class _Coster:
    def __init__(self, self_type: Type):
        self.root = self_type
        self.variables = {"self": self_type, "oldSelf": self_type}
        self.paths: dict[int, list[str]] = {}  # field paths: a variable, then fields, @items, @keys, @values
        self.sizes: dict[int, tuple[int, int]] = {}
        self.entries: dict[int, tuple] = {}   # (container kind, key size, value size)
        self.types: dict[int, Type] = {}
        self.locals: dict[str, list[_Local]] = {}

    # --- the walk -------------------------------------------------------------------------------------------
    def cost(self, e: Node | None) -> int:
        if e is None:
            return 0
        return getattr(self, "_" + e.kind)(e)

    def _literal(self, e: Node) -> int:
        v = e.value
        kind = ("null" if v is None else "bool" if isinstance(v, bool) else "int" if isinstance(v, int)
                else "double" if isinstance(v, float) else "string" if isinstance(v, str) else "bytes")
        self.types[e.id] = Type(kind)
        return 0

    def _ident(self, e: Node) -> int:
        local = self._peek(e.name)
        if local:
            self.paths[e.id], self.types[e.id] = local.path, local.type
        else:
            self.paths[e.id], self.types[e.id] = [e.name], self.variables.get(e.name, DYN)
        return 1

    def _select(self, e: Node) -> int:
        if e.test_only:
            self.types[e.id] = _BOOL
            return self.cost(e.target)
        total = self.cost(e.target)
        operand = self.type_of(e.target)
        if operand.kind in ("map", "object"):
            total = add(total, 1)
        self.paths[e.id] = self.path_of(e.target) + [e.name]
        self.types[e.id] = operand.fields.get(e.name, DYN) if operand.kind == "object" else \
            (operand.elem or DYN) if operand.kind == "map" else DYN
        return total

    def _list(self, e: Node) -> int:
        total, item = 0, (MAX, 0) if e.args else (0, 0)
        for element in e.args:
            total = add(total, self.cost(element))
            item = _union(item, self.size_or_unknown(element))
        self.entries[e.id] = ("list", (1, 1), item)
        self.types[e.id] = Type("list", elem=self.type_of(e.args[0]) if e.args else DYN)
        return add(total, _LIST_CREATE)

    def _map(self, e: Node) -> int:
        total = 0
        keys = values = (MAX, 0) if e.args else (0, 0)
        for k, v in zip(e.args[::2], e.args[1::2]):
            total = add(add(total, self.cost(k)), self.cost(v))
            keys, values = _union(keys, self.size_or_unknown(k)), _union(values, self.size_or_unknown(v))
        self.entries[e.id] = ("map", keys, values)
        self.types[e.id] = Type("map", key=self.type_of(e.args[0]) if e.args else DYN,
                                elem=self.type_of(e.args[1]) if e.args else DYN)
        return add(total, _MAP_CREATE)

    def _struct(self, e: Node) -> int:
        total = 0
        for value in e.args[1::2]:
            total = add(total, self.cost(value))
        self.types[e.id] = DYN
        return add(total, _STRUCT_CREATE)

    def _comprehension(self, e: Node) -> int:
        total = add(self.cost(e.iter_range), self.cost(e.accu_init))
        if self._is_bind(e):
            self._push_local(e.accu_var, e.accu_init)
            total = add(total, self.cost(e.result))
            self._pop(e.accu_var)
            self._copy_sizes(e, e.result)
            self.types[e.id] = self.type_of(e.result)
            return total
        self._push_local(e.accu_var, e.accu_init)
        if e.iter_var2:
            self._push_iter(e.iter_var, e.iter_range, keys=True)
            self._push_iter(e.iter_var2, e.iter_range, keys=False)
        else:
            self._push_iter(e.iter_var, e.iter_range, keys=None)
        loop = self.cost(e.loop_condition)
        step = self.cost(e.loop_step)
        self._pop(e.iter_var)
        if e.iter_var2:
            self._pop(e.iter_var2)
        total = add(total, self.cost(e.result))
        self._pop(e.accu_var)
        count = self.size_or_unknown(e.iter_range)
        total = add(total, multiply(count[1], add(step, loop)))
        self.types[e.id] = self.type_of(e.result)
        if e.accu_init.kind == "literal":
            self._set_size(e, self.compute_size(e.accu_init))
        elif e.accu_init.kind in ("list", "map"):
            self._set_size(e, count)
            step_entry = self.entry_of(e.loop_step)
            if step_entry:
                self.entries[e.id] = step_entry
            self.types[e.id] = self.type_of(e.loop_step)
        return total

    def _is_bind(self, e: Node) -> bool:
        return (e.iter_range.kind == "list" and not e.iter_range.args and e.loop_condition.kind == "literal"
                and e.loop_condition.value is False and e.accu_var not in _ACCUMULATORS)

    def _call(self, e: Node) -> int:
        if e.name == "dyn" and e.args:
            total = add(1, self.cost(e.args[0]))
            self._copy_sizes(e, e.args[0])
            self.types[e.id] = self.type_of(e.args[0])
            return total
        arg_costs = [self.cost(a) for a in e.args]
        total = 0
        if e.target is not None:
            total = self.cost(e.target)
        self.types[e.id] = _result_type(e.name, self.type_of(e.target) if e.target else None,
                                        [self.type_of(a) for a in e.args])
        function_cost, result_size = self._function(e, arg_costs)
        if result_size is None:
            result_size = self.compute_size(e)
        self._set_size(e, result_size)
        return add(total, function_cost)

    # --- calls ------------------------------------------------------------------------------------------------
    def _function(self, e: Node, arg_costs: list[int]) -> tuple[int, tuple[int, int] | None]:
        """functionCost over the overloads the operand types allow: (max cost, result size)."""
        args_sum = 0
        for c in arg_costs:
            args_sum = add(args_sum, c)
        name, args, target = e.name, e.args, e.target
        kinds = [self.type_of(a).kind for a in args]
        library = self._library(e)
        if library is not None:
            return add(library[0], args_sum), library[1]
        if name in ("_&&_", "_||_"):
            return add(arg_costs[0], arg_costs[1]), None
        if name == "_?_:_":
            size = _union(self.size_or_unknown(args[1]), self.size_or_unknown(args[2]))
            entries = [self.entry_of(a) for a in args[1:]]
            if all(entries):
                self.entries[e.id] = (entries[0][0], _union(entries[0][1], entries[1][1]),
                                      _union(entries[0][2], entries[1][2]))
            return add(arg_costs[0], max(arg_costs[1], arg_costs[2])), size
        if name == "_[_]" and len(args) == 2 and kinds[0] in ("list", "map", "dyn"):
            entry = self.entry_of(args[0])
            self.paths[e.id] = self.path_of(args[0]) + ["@items" if kinds[0] == "list" else "@values"]
            return add(1, args_sum), entry[2] if entry else None
        if name == "_+_" and len(args) == 2 and kinds[0] in ("string", "bytes", "list", "dyn"):
            size = _size_add(self.size_or_unknown(args[0]), self.size_or_unknown(args[1]))
            entries = [self.entry_of(a) for a in args]
            if all(entries):
                self.entries[e.id] = (entries[0][0], _union(entries[0][1], entries[1][1]),
                                      _union(entries[0][2], entries[1][2]))
            if kinds[0] == "list":
                return add(1, args_sum), size
            return add(by_factor(size[1], STRING_TRAVERSAL), args_sum), size
        if name in ("_==_", "_!=_") or (name in ("_<_", "_<=_", "_>_", "_>=_")
                                        and kinds[0] in ("string", "bytes", "dyn")):
            smallest = min(self.size_or_unknown(args[0])[1], self.size_or_unknown(args[1])[1])
            return add(by_factor(smallest, STRING_TRAVERSAL), args_sum), None
        if name == "@in" and len(args) == 2 and kinds[1] in ("list", "dyn"):
            return add(self.size_or_unknown(args[1])[1], args_sum), None
        if target is not None and self.type_of(target).kind in ("string", "dyn") and len(args) == 1:
            text = self.size_or_unknown(target)
            if name == "matches":
                text_cost = by_factor(add(text[1], 1), STRING_TRAVERSAL)
                regex_cost = by_factor(self.size_or_unknown(args[0])[1], REGEX_LENGTH)
                return add(multiply(text_cost, regex_cost), args_sum), None
            if name == "contains":
                sub = by_factor(self.size_or_unknown(args[0])[1], STRING_TRAVERSAL)
                return add(multiply(by_factor(text[1], STRING_TRAVERSAL), sub), args_sum), None
            if name in ("startsWith", "endsWith"):
                return add(by_factor(self.size_or_unknown(args[0])[1], STRING_TRAVERSAL), args_sum), None
        if target is None and len(args) == 1 and (name, kinds[0]) in (("bytes", "string"), ("string", "bytes")):
            size = self.size_or_unknown(args[0])
            result = (size[0], multiply(size[1], 4)) if name == "bytes" else (size[0] // 4, size[1])
            return add(by_factor(size[1], STRING_TRAVERSAL), args_sum), result
        return add(1, args_sum), None

    def _library(self, e: Node) -> tuple[int, tuple[int, int] | None] | None:
        """library.CostEstimator.EstimateCallCost for the functions of this environment's Kubernetes library."""
        if e.name in ("quantity", "isQuantity", "semver", "isSemver") and e.args:
            return by_factor(self.size_or_unknown(e.args[0])[1], STRING_TRAVERSAL), None
        if e.target is not None and e.name in ("sign", "asInteger", "isInteger", "asApproximateFloat",
                                               "isGreaterThan", "isLessThan", "compareTo", "add", "sub",
                                               "major", "minor", "patch"):
            return 1, None
        if e.name == "_==_" and len(e.args) == 2:
            left, right = (self.type_of(a).kind for a in e.args)
            if left == right and left in ("quantity", "semver"):
                return 1, None
        return None

    # --- sizes, paths, types ----------------------------------------------------------------------------
    def type_of(self, e: Node) -> Type:
        return self.types.get(e.id, DYN)

    def path_of(self, e: Node) -> list[str]:
        """getPath: a local variable's path, else the one recorded for the node (empty: none)."""
        local = self._peek(e.name) if e.kind == "ident" else None
        return list(local.path if local else self.paths.get(e.id, []))

    def size_or_unknown(self, e: Node) -> tuple[int, int]:
        return self.compute_size(e) or _UNKNOWN

    def compute_size(self, e: Node) -> tuple[int, int] | None:
        if e.id in self.sizes:
            return self.sizes[e.id]
        if e.kind == "literal":
            if isinstance(e.value, str):
                return (len(e.value), len(e.value))
            if isinstance(e.value, bytes):
                return (len(e.value), len(e.value))
            return (1, 1)
        if e.kind in ("list", "map"):
            n = len(e.args) if e.kind == "list" else len(e.args) // 2
            return (n, n)
        size = self._schema_size(self.path_of(e))
        if size is not None:
            self.sizes[e.id] = size
            return size
        if self.type_of(e).kind in _SCALARS:
            return (1, 1)
        local = self._peek(e.name) if e.kind == "ident" else None
        return local.size if local else None

    def _schema_size(self, path: list[str]) -> tuple[int, int] | None:
        """sizeEstimator.EstimateSize: the rule's type walked along the path (its first element, the variable,
        skipped whatever it is) to its MaxElements."""
        if not path:
            return None
        node = self.root
        for name in path[1:]:
            if name in ("@items", "@values"):
                node = node.elem
            elif name == "@keys":
                node = node.key
            else:
                node = node.fields.get(name)
            if node is None:
                return None
        return (0, node.max_elements)

    def _set_size(self, e: Node, size) -> None:
        if size is not None:
            self.sizes[e.id] = size

    def _copy_sizes(self, dst: Node, src: Node) -> None:
        self._set_size(dst, self.compute_size(src))
        entry = self.entry_of(src)
        if entry:
            self.entries[dst.id] = entry

    def entry_of(self, e: Node):
        """computeEntrySize: (container kind, key size, value size) of a list or map, when known."""
        if e.id in self.entries:
            return self.entries[e.id]
        local = self._peek(e.name) if e.kind == "ident" else None
        return local.entry if local else None

    # --- scopes -------------------------------------------------------------------------------------------
    def _peek(self, name: str) -> _Local | None:
        stack = self.locals.get(name)
        return stack[-1] if stack else None

    def _pop(self, name: str) -> None:
        self.locals[name].pop()

    def _push(self, name: str, local: _Local) -> None:
        self.locals.setdefault(name, []).append(local)

    def _push_local(self, name: str, e: Node) -> None:
        self._push(name, _Local(self.path_of(e), self.compute_size(e), self.entry_of(e), self.type_of(e)))

    def _push_iter(self, name: str, range_: Node, keys: bool | None) -> None:
        """pushIterSingle (``keys`` None), pushIterKey (True) or pushIterValue (False)."""
        entry = self.entry_of(range_)
        range_type = self.type_of(range_)
        is_list = (entry[0] if entry else range_type.kind) == "list"
        key_size, value_size = (entry[1], entry[2]) if entry else (None, None)
        if keys is None:
            size, sub, element = (value_size, "@items", range_type.elem) if is_list else \
                (key_size, "@keys", range_type.key)
        elif keys:
            size, sub, element = key_size, "@indices" if is_list else "@keys", _INT if is_list else range_type.key
        else:
            size, sub, element = value_size, "@items" if is_list else "@values", range_type.elem
        self._push(name, _Local(self.path_of(range_) + [sub], size, None, element or DYN))


_BOOLS = {"_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_", "!_", "_&&_", "_||_", "@in", "matches", "startsWith",
          "endsWith", "contains", "@not_strictly_false", "isQuantity", "isSemver", "isInteger",
          "isGreaterThan", "isLessThan"}
_INTS = {"size", "int", "sign", "asInteger", "compareTo", "major", "minor", "patch"}
_SAME_AS_FIRST = {"_+_", "_-_", "_*_", "_/_", "_%_", "-_"}


def _result_type(name: str, target: Type | None, args: list[Type]) -> Type:
    """The type a call returns, from its function and operand types (what cel-go's checker would deduce)."""
    if name in _BOOLS:
        return _BOOL
    if name in _INTS:
        return _INT
    if name in _SAME_AS_FIRST and args:
        return args[0]
    if name == "_?_:_":
        return args[1] if args[1].kind != "dyn" else args[2]
    if name == "_[_]" and args:
        return (args[0].fields.get("", DYN) if args[0].kind == "object" else args[0].elem) or DYN
    if name in ("add", "sub", "quantity"):
        return Type("quantity")
    if name == "semver":
        return Type("semver")
    if name in ("string", "bytes", "double", "uint", "duration", "timestamp"):
        return Type(name)
    return DYN
