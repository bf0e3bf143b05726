"""Kubernetes JSONPath templates, as k8s.io/client-go/util/jsonpath parses and evaluates them.

apiextensions-apiserver evaluates a CRD's ``additionalPrinterColumns[].jsonPath``
by wrapping it in ``{...}`` and running client-go's JSONPath with
``AllowMissingKeys(true)``; kubectl's ``-o jsonpath`` uses the same package.

Why not a PyPI library: ``jsonpath-ng``, ``jsonpath``, ``python-jsonpath`` and
the other maintained ones implement Goessner's JSONPath or RFC 9535. None reads
Kubernetes' ``{...}`` template syntax (text around actions, several actions,
``range``), and their semantics differ exactly where printer columns rely on
them: ``['a.b']`` is split at the dot by client-go, a backslash escapes a dot
in a field name, a filter compares a literal integer as a float (so it never
equals an integer field), a filter that meets incompatible types silently
drops the element, a negative or derived slice end wraps around, an empty
``[i:i]`` slice ends the whole step, map values are walked in sorted key order,
and a found value prints as Go's ``fmt.Fprint`` or ``json.Marshal`` writes it.
This module is a port of parser.go and jsonpath.go (v1.36) limited to what a
template without ``range``/``end`` needs; those two keywords raise
:class:`JSONPathError` at evaluation, the way an unknown identifier does.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .gofmt import go_float, go_json

__all__ = ["JSONPath", "JSONPathError", "go_text"]


class JSONPathError(ValueError):
    """A template that does not parse, or an evaluation error (client-go returns an error)."""


# --- nodes (node.go) ------------------------------------------------------
@dataclass
class _List:
    nodes: list = field(default_factory=list)


@dataclass
class _Text:
    text: str


@dataclass
class _Field:
    name: str


@dataclass
class _Param:
    value: int = 0
    known: bool = False
    derived: bool = False


@dataclass
class _Array:
    params: tuple[_Param, _Param, _Param]


@dataclass
class _Filter:
    left: _List
    right: _List
    operator: str


@dataclass
class _Literal:
    value: Any  # int, float or bool


@dataclass
class _Union:
    lists: list[_List]


@dataclass
class _Identifier:
    name: str


class _Wildcard:
    pass


class _Recursive:
    pass


class _LiteralInt(int):
    """An integer written in the template: Go's ``int``, which filters compare as float64."""


# --- parser (parser.go) ---------------------------------------------------
_DICT_KEY = re.compile(r"^'([^']*)'$")
_SLICE = re.compile(r"^(-?[0-9]*)(:-?[0-9]*)?(:-?[0-9]*)?$")
_FILTER = re.compile(r"^([^!<>=]+)([!<>=]+)(.+?)$")
_TERMINATORS = set(" \t\r\n.,[]$@{}")


def _is_alphanumeric(ch: str) -> bool:
    return ch == "_" or ch.isalpha() or ch.isdecimal()


class _Parser:
    def __init__(self, text: str):
        self.input, self.pos, self.start = text, 0, 0
        self.root = _List()
        self._parse_text()

    def _next(self) -> str:
        """The next character, or '' at the end (Go's eof)."""
        if self.pos >= len(self.input):
            return ""
        self.pos += 1
        return self.input[self.pos - 1]

    def _backup(self, ch: str) -> None:
        self.pos -= len(ch)

    def _peek(self) -> str:
        return self.input[self.pos] if self.pos < len(self.input) else ""

    def _consume(self) -> str:
        value, self.start = self.input[self.start:self.pos], self.pos
        return value

    def _parse_text(self) -> None:
        while True:
            if self.input.startswith("{", self.pos):
                if self.pos > self.start:
                    self.root.nodes.append(_Text(self._consume()))
                self.pos += 1
                self._consume()
                action = _List()
                self.root.nodes.append(action)
                self._parse_inside_action(action)
                return
            if self._next() == "":
                break
        if self.pos > self.start:
            self.root.nodes.append(_Text(self._consume()))

    def _parse_inside_action(self, cur: _List) -> None:
        while True:
            rest = self.input[self.pos:]
            if rest.startswith("}"):
                self.pos += 1
                self._consume()
                self._parse_text()
                return
            if rest.startswith("[?("):
                self._parse_filter(cur)
                continue
            if rest.startswith(".."):
                self._parse_recursive(cur)
                continue
            ch = self._next()
            if ch == "" or ch in "\r\n":
                raise JSONPathError("unclosed action")
            if ch == " " or ch in "@$":
                self._consume()
            elif ch == "[":
                self._parse_array(cur)
            elif ch in "\"'":
                self._parse_quote(cur, ch)
            elif ch == ".":
                self._parse_field(cur)
            elif ch in "+-" or ch.isdecimal():
                self._backup(ch)
                self._parse_number(cur)
            elif _is_alphanumeric(ch):
                self._backup(ch)
                self._parse_identifier(cur)
            else:
                raise JSONPathError(f"unrecognized character in action: U+{ord(ch):04X} '{ch}'")

    def _parse_identifier(self, cur: _List) -> None:
        while (ch := self._next()) not in _TERMINATORS and ch != "":
            pass
        self._backup(ch)
        value = self._consume()
        cur.nodes.append(_Literal(value == "true") if value in ("true", "false") else _Identifier(value))

    def _parse_recursive(self, cur: _List) -> None:
        if cur.nodes and isinstance(cur.nodes[-1], _Recursive):
            raise JSONPathError("invalid multiple recursive descent")
        self.pos += 2
        self._consume()
        cur.nodes.append(_Recursive())
        if _is_alphanumeric(self._peek()):
            self._parse_field(cur)

    def _parse_number(self, cur: _List) -> None:
        if self._peek() in ("+", "-"):
            self._next()
        while (ch := self._next()) == "." or ch.isdecimal():
            pass
        self._backup(ch)
        value = self._consume()
        try:
            cur.nodes.append(_Literal(_LiteralInt(int(value))))
        except ValueError:
            try:
                cur.nodes.append(_Literal(float(value)))
            except ValueError:
                raise JSONPathError(f"cannot parse number {value}") from None

    def _parse_array(self, cur: _List) -> None:
        while (ch := self._next()) != "]":
            if ch in ("", "\n"):
                raise JSONPathError("unterminated array")
        text = self._consume()[1:-1]
        if text == "*":
            text = ":"
        parts = text.split(",")
        if len(parts) > 1:
            cur.nodes.append(_Union([_parse_action(f"[{p.strip(' ')}]") for p in parts]))
            return
        if m := _DICT_KEY.match(text):
            cur.nodes.extend(_parse_action("." + m.group(1)).nodes)
            return
        m = _SLICE.match(text)
        if m is None:
            raise JSONPathError(f"invalid array index {text}")
        params = (_Param(), _Param(), _Param())
        for i, raw in enumerate(m.groups()):
            raw = raw or ""
            if raw:
                raw = raw[1:] if i > 0 else raw
                if i > 0 and raw == "":
                    continue
                try:
                    params[i].value, params[i].known = int(raw), True
                except ValueError:
                    raise JSONPathError(f"array index {raw} is not a number") from None
            elif i == 1:
                params[1].value, params[1].known, params[1].derived = params[0].value + 1, True, True
        cur.nodes.append(_Array(params))

    def _parse_filter(self, cur: _List) -> None:
        self.pos += 3
        self._consume()
        begin = end = False
        pair = ""
        while True:
            ch = self._next()
            if ch in ("", "\n"):
                raise JSONPathError("unterminated filter")
            if ch in "\"'":
                if not begin:
                    begin, pair = True, ch
                    continue
                if self.input[self.pos - 2] != "\\" and ch == pair:
                    end = True
            elif ch == ")" and begin == end:
                break
        if self._next() != "]":
            raise JSONPathError("unclosed array expect ]")
        text = self._consume()[:-2]
        m = _FILTER.match(text)
        if m is None:
            cur.nodes.append(_Filter(_parse_action(text), _List(), "exists"))
        else:
            cur.nodes.append(_Filter(_parse_action(m.group(1)), _parse_action(m.group(3)), m.group(2)))

    def _parse_quote(self, cur: _List, quote: str) -> None:
        while True:
            ch = self._next()
            if ch in ("", "\n"):
                raise JSONPathError("unterminated quoted string")
            if ch == quote and self.input[self.pos - 2] != "\\":
                break
        value = self._consume()
        cur.nodes.append(_Text(_unquote(value)))

    def _parse_field(self, cur: _List) -> None:
        self._consume()
        while True:
            ch = self._next()
            if ch == "\\":
                self._next()
            elif ch in _TERMINATORS or ch == "":
                self._backup(ch)
                break
        value = self._consume()
        cur.nodes.append(_Wildcard() if value == "*" else _Field(value.replace("\\", "")))


def _parse_action(text: str) -> _List:
    """parseAction: one ``{text}`` action's node list."""
    return _Parser("{" + text + "}").root.nodes[0]


_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}


def _unquote(s: str) -> str:
    """UnquoteExtend: strconv.Unquote that also takes single quotes."""
    quote, body = s[0], s[1:-1]
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch == quote:
            raise JSONPathError(f"unquote string {s} error invalid syntax")
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        esc = body[i + 1:i + 2]
        if esc in _ESCAPES or esc == quote:
            out.append(_ESCAPES.get(esc, esc))
            i += 2
        elif esc in ("x", "u", "U"):
            width = {"x": 2, "u": 4, "U": 8}[esc]
            digits = body[i + 2:i + 2 + width]
            if len(digits) != width or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise JSONPathError(f"unquote string {s} error invalid syntax")
            out.append(chr(int(digits, 16)))
            i += 2 + width
        elif esc and esc in "01234567" and re.fullmatch(r"[0-7]{3}", body[i + 1:i + 4]):
            out.append(chr(int(body[i + 1:i + 4], 8)))
            i += 4
        else:
            raise JSONPathError(f"unquote string {s} error invalid syntax")
    return "".join(out)


# --- evaluation (jsonpath.go) -----------------------------------------------
class _EvalError(Exception):
    """An error together with the values Go returns beside it (callers sometimes keep them)."""

    def __init__(self, message: str, values: list):
        super().__init__(message)
        self.values = values


def _iterate(value: Any) -> list | None:
    """iterHelper: a list's items, a map's values in key order, None for anything else."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        return [value[k] for k in sorted(value)]
    return None


def _go_kind(value: Any) -> str | None:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    return None


def _compare(operator: str, left: Any, right: Any) -> bool:
    """evalOperator with the forked text/template comparisons; incompatible types never pass."""
    left = float(left) if isinstance(left, _LiteralInt) else left
    right = float(right) if isinstance(right, _LiteralInt) else right
    kl, kr = _go_kind(left), _go_kind(right)
    if kl is None or kr is None or kl != kr:
        return False  # "invalid type for comparison" / "incompatible types for comparison" are ignored
    if operator == "==":
        return left == right
    if operator == "!=":
        return left != right
    if kl == "bool":
        return False  # Less on booleans is "invalid type for comparison", also ignored
    return {"<": left < right, ">": left > right, "<=": left <= right, ">=": left >= right}[operator]


class JSONPath:
    """A parsed template; :meth:`find_results` runs it with AllowMissingKeys(true)."""

    def __init__(self, template: str):
        self._root = _Parser(template).root

    def find_results(self, data: Any) -> list[list[Any]]:
        """FindResults: one list of found values per top-level node. JSONPathError on an evaluation error."""
        try:
            return [self._walk([data], node) for node in self._root.nodes]
        except _EvalError as e:
            raise JSONPathError(str(e)) from None

    def _walk(self, values: list, node) -> list:
        if isinstance(node, _List):
            return self._eval_list(values, node)
        if isinstance(node, _Text):
            return [node.text]
        if isinstance(node, _Literal):
            return [node.value for _ in values]
        if isinstance(node, _Field):
            return [v[node.name] for v in values if isinstance(v, dict) and node.name in v]
        if isinstance(node, _Array):
            return self._eval_array(values, node)
        if isinstance(node, _Filter):
            return self._eval_filter(values, node)
        if isinstance(node, _Wildcard):
            return [item for v in values for item in (_iterate(v) or ())]
        if isinstance(node, _Recursive):
            return self._eval_recursive(values)
        if isinstance(node, _Union):
            out = []
            for branch in node.lists:
                try:
                    out.extend(self._eval_list(values, branch))
                except _EvalError as e:
                    raise _EvalError(str(e), values) from None
            return out
        raise _EvalError(f"unrecognized identifier {node.name}", values)

    def _eval_list(self, values: list, node: _List) -> list:
        for child in node.nodes:
            values = self._walk(values, child)
        return values

    @staticmethod
    def _eval_array(values: list, node: _Array) -> list:
        out = []
        for value in values:
            if value is None:
                continue
            if not isinstance(value, list):
                raise _EvalError("not array or slice", values)
            length = len(value)
            start, stop, step = (_Param(p.value, p.known, p.derived) for p in node.params)
            if not start.known:
                start.value = 0
            if start.value < 0:
                start.value += length
            if not stop.known:
                stop.value = length
            if stop.value < 0 or (stop.value == 0 and stop.derived):
                stop.value += length
            if stop.value == start.value:
                return out
            if start.value >= length or start.value < 0:
                raise _EvalError(f"array index out of bounds: index {start.value}, length {length}", values)
            if stop.value > length or stop.value < 0:
                raise _EvalError(f"array index out of bounds: index {stop.value - 1}, length {length}", values)
            if start.value > stop.value:
                raise _EvalError(f"starting index {start.value} is greater than ending index {stop.value}", values)
            if step.known and step.value <= 0:
                raise _EvalError("step must be > 0", values)
            out.extend(value[start.value:stop.value:step.value if step.known else 1])
        return out

    def _eval_filter(self, values: list, node: _Filter) -> list:
        out = []
        for value in values:
            items = _iterate(value)
            for item in ([value] if items is None else items):
                try:
                    lefts = self._eval_list([item], node.left)
                except _EvalError as e:
                    lefts = e.values  # AllowMissingKeys: the error is dropped, what came with it kept
                try:
                    rights = self._eval_list([item], node.right)
                except _EvalError as e:
                    raise _EvalError(str(e), values) from None
                if not lefts:
                    continue
                if len(lefts) > 1:
                    raise _EvalError("can only compare one element at a time", values)
                if node.operator == "exists":
                    out.append(item)
                    continue
                if not rights:
                    continue
                if len(rights) > 1:
                    raise _EvalError("can only compare one element at a time", values)
                if node.operator not in ("<", ">", "==", "!=", "<=", ">="):
                    raise _EvalError(f"unrecognized filter operator {node.operator}", out)
                if _compare(node.operator, lefts[0], rights[0]):
                    out.append(item)
        return out

    def _eval_recursive(self, values: list) -> list:
        out = []
        for value in values:
            children = _iterate(value)
            if children:
                out.append(value)
                out.extend(self._eval_recursive(children))
        return out


# --- printing (PrintResults) ------------------------------------------------
def go_text(value: Any) -> str:
    """How PrintResults writes one found value: maps and lists as JSON, ``<no value>`` for null."""
    if isinstance(value, (dict, list)):
        return go_json(value)
    if value is None:
        return "<no value>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float(value)
    return str(value)
