"""Label and field selectors with kube-apiserver's syntax, supported fields and error messages.

Follows k8s.io/apimachinery/pkg/labels/selector.go (set-based label selector
grammar), k8s.io/apimachinery/pkg/fields/selector.go, and the per-kind field
label conversion functions (pkg/apis/core/v1/conversion.go and friends), which
decide which fields each kind can be selected by. Written by hand because it
must reproduce the apiserver's grammar and messages; no Python library does.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from .errors import ApiError, bad_request


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: dict) -> bool:
        if self.op in ("=", "==", "in"):
            return self.key in labels and labels[self.key] in self.values
        if self.op in ("!=", "notin"):
            return self.key not in labels or labels[self.key] not in self.values
        if self.op == "exists":
            return self.key in labels
        if self.op == "!":
            return self.key not in labels
        if self.op in ("gt", "lt"):
            if self.key not in labels:
                return False
            try:
                have, want = int(labels[self.key]), int(self.values[0])
            except ValueError:
                return False
            return have > want if self.op == "gt" else have < want
        return False


class LabelSelector(list):
    """Parsed requirements in their order, and a matcher built from them once.

    A selector may hold tens of thousands of requirements (a URL may be 1 MiB); testing each against each
    object would cost their product, and stall the server on one request. The matcher groups them by key,
    so an object costs about as much as it has labels: every key the requirements need present is looked up
    until one is missing, and every label the object has is checked once against what the requirements
    exclude. It answers as testing each requirement in turn does."""

    def __init__(self, requirements=()):
        super().__init__(requirements)
        self._needed: dict[str, tuple[frozenset | None, int | None, int | None]] | None = None
        self._absent: set[str] = set()
        self._excluded: dict[str, set[str]] = {}

    def matches(self, labels: dict) -> bool:
        if self._needed is None:
            self._compile()
        for key, (allowed, above, below) in self._needed.items():
            have = labels.get(key)
            if have is None or (allowed is not None and have not in allowed):
                return False
            if (above is not None or below is not None) and not _within(have, above, below):
                return False
        for key, have in labels.items():
            if key in self._absent or have in self._excluded.get(key, ()):
                return False
        return True

    def _compile(self) -> None:
        needed: dict[str, list] = {}
        for r in dict.fromkeys(self):
            if r.op in ("!=", "notin"):
                self._excluded.setdefault(r.key, set()).update(r.values)
            elif r.op == "!":
                self._absent.add(r.key)
            else:   # "=", "in", "exists", "gt", "lt": the key must be there
                entry = needed.setdefault(r.key, [None, None, None])
                if r.op in ("gt", "lt"):
                    bound = _integer(r.values[0])
                    if bound is None:   # never true (the value is not an integer)
                        entry[0] = frozenset()
                    elif r.op == "gt":
                        entry[1] = bound if entry[1] is None else max(entry[1], bound)
                    else:
                        entry[2] = bound if entry[2] is None else min(entry[2], bound)
                elif r.op != "exists":
                    values = frozenset(r.values)
                    entry[0] = values if entry[0] is None else entry[0] & values
        self._needed = {key: tuple(entry) for key, entry in needed.items()}


def _integer(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _within(text: str, above: int | None, below: int | None) -> bool:
    have = _integer(text)
    return have is not None and (above is None or have > above) and (below is None or have < below)


_TOKEN = re.compile(r"\s*(!=|==|=|!|,|\(|\)|>|<|[^\s!=,()<>]+)")


def parse_label_selector(text: str | None) -> list[Requirement]:
    """labels.Parse: ``a=b,c!=d,e in (x,y),!f,g,h notin (z)``; 400 on bad syntax."""
    if not text or not text.strip():
        return LabelSelector()
    tokens = _TOKEN.findall(text)
    reqs = LabelSelector()
    i = 0

    def fail(detail: str) -> ApiError:
        return bad_request(f"unable to parse requirement: {detail}")

    while i < len(tokens):
        tok = tokens[i]
        if tok == "!":
            if i + 1 >= len(tokens):
                raise fail("found '', expected: identifier")
            reqs.append(Requirement(tokens[i + 1], "!"))
            i += 2
        else:
            key = tok
            i += 1
            if i >= len(tokens) or tokens[i] == ",":
                reqs.append(Requirement(key, "exists"))
            else:
                op = tokens[i]
                i += 1
                if op in ("=", "==", "!="):
                    value = tokens[i] if i < len(tokens) and tokens[i] not in (",",) else ""
                    if value:
                        i += 1
                    reqs.append(Requirement(key, "=" if op in ("=", "==") else "!=", (value,)))
                elif op in ("in", "notin"):
                    if i >= len(tokens) or tokens[i] != "(":
                        raise fail(f"found '{tokens[i] if i < len(tokens) else ''}', expected: '('")
                    i += 1
                    values = []
                    while i < len(tokens) and tokens[i] != ")":
                        if tokens[i] != ",":
                            values.append(tokens[i])
                        i += 1
                    if i >= len(tokens):
                        raise fail("found '', expected: ')'")
                    i += 1
                    reqs.append(Requirement(key, op, tuple(values)))
                elif op in (">", "<"):
                    reqs.append(Requirement(key, "gt" if op == ">" else "lt", (tokens[i],)))
                    i += 1
                else:
                    raise fail(f"found '{op}', expected: in, notin, =, ==, !=, gt, lt")
        if i < len(tokens):
            if tokens[i] != ",":
                raise fail(f"found '{tokens[i]}', expected: ',' or 'end of string'")
            i += 1
    for r in reqs:
        _check_label_key(r.key)
    return reqs


_QUALIFIED = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def _check_label_key(key: str) -> None:
    name = key.rsplit("/", 1)[-1]
    if not name or len(name) > 63 or not _QUALIFIED.match(name):
        raise bad_request(
            f'unable to parse requirement: values[0][{key}]: Invalid value: "{key}": name part must consist of '
            "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
            "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")


def label_selector_from_dict(selector: dict | None) -> list[Requirement]:
    """A metav1.LabelSelector (matchLabels + matchExpressions) as requirements."""
    if not selector:
        return LabelSelector()
    reqs = LabelSelector(Requirement(k, "=", (v,)) for k, v in (selector.get("matchLabels") or {}).items())
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for e in selector.get("matchExpressions") or ():
        reqs.append(Requirement(e["key"], ops[e["operator"]], tuple(e.get("values") or ())))
    return reqs


def matches_labels(reqs: list[Requirement], labels: dict | None) -> bool:
    labels = labels or {}
    if isinstance(reqs, LabelSelector):
        return reqs.matches(labels)
    return all(r.matches(labels) for r in reqs)


# --- field selectors ------------------------------------------------------
def path_getter(path: str) -> Callable[[dict], str]:
    """The string form of the value at a dotted path: ``""`` when absent, ``true``/``false`` for booleans."""
    parts = path.split(".")

    def getter(obj: dict) -> str:
        cur = obj
        for p in parts:
            if not isinstance(cur, dict):
                return ""
            cur = cur.get(p)
            if cur is None:
                return ""
        if isinstance(cur, bool):
            return "true" if cur else "false"
        return str(cur)

    return getter


FieldGetter = Callable[[dict], str]

# Every kind's objects can be selected by these (DefaultClusterScopedAttr / DefaultNamespaceScopedAttr).
OBJECT_META_FIELDS: dict[str, FieldGetter | None] = {
    "metadata.name": None,
    "metadata.namespace": lambda o: (o.get("metadata") or {}).get("namespace", ""),
}


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    op: str  # "=" or "!="
    value: str
    getter: Callable[[dict], str]

    def matches(self, obj: dict) -> bool:
        have = self.getter(obj)
        return have == self.value if self.op == "=" else have != self.value


class FieldSelector(list):
    """Parsed field requirements, and a matcher that reads each selected field of an object once (however many
    requirements name it): ``=`` values must all equal it, ``!=`` values must all differ from it."""

    def __init__(self, requirements=()):
        super().__init__(requirements)
        self._fields: dict[str, tuple[Callable[[dict], str], set[str], set[str]]] | None = None

    def matches(self, obj: dict) -> bool:
        if self._fields is None:
            self._fields = {}
            for r in self:
                _, equal, different = self._fields.setdefault(r.field, (r.getter, set(), set()))
                (equal if r.op == "=" else different).add(r.value)
        for getter, equal, different in self._fields.values():
            have = getter(obj)
            if (equal and (len(equal) > 1 or have not in equal)) or have in different:
                return False
        return True


def parse_field_selector(text: str | None, supported: dict[str, FieldGetter | None]) -> list[FieldRequirement]:
    """fields.ParseSelector plus the kind's field label conversion; 400 for unsupported fields.

    ``supported`` maps the fields the kind can select by to a getter of their string form (None: the value at that
    path, as :func:`path_getter` renders it).
    """
    if not text or not text.strip():
        return FieldSelector()
    reqs = FieldSelector()
    for part in _split_unescaped(text):
        part = part.strip()
        if not part:
            continue
        for op in ("!=", "==", "="):
            if op in part:
                field, value = part.split(op, 1)
                break
        else:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        field = field.strip()
        if field not in supported:
            raise bad_request(f'field label not supported: {field}')
        getter = supported[field] or path_getter(field)
        reqs.append(FieldRequirement(field, "!=" if op == "!=" else "=", _unescape(value.strip()), getter))
    return reqs


_ESCAPE_OR_COMMA = re.compile(r"\\.|,", re.S)


def _split_unescaped(text: str) -> list[str]:
    """The terms between the commas no backslash escapes (fields.ParseSelector's splitTerms)."""
    parts, start = [], 0
    for m in _ESCAPE_OR_COMMA.finditer(text):
        if m.group() == ",":
            parts.append(text[start:m.start()])
            start = m.end()
    parts.append(text[start:])
    return parts


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def matches_fields(reqs: list[FieldRequirement], obj: dict) -> bool:
    if isinstance(reqs, FieldSelector):
        return reqs.matches(obj)
    return all(r.matches(obj) for r in reqs)


def exact_field(reqs: list[FieldRequirement], field: str) -> str | None:
    """The value a selector pins a field to with ``=`` (lets lists use an index)."""
    for r in reqs:
        if r.field == field and r.op == "=":
            return r.value
    return None
