"""The cost budget of a CRD's ``x-kubernetes-validations`` rules, checked when the CRD is written.

A rule that iterates over a list the schema leaves unbounded could cost more than any request deserves, and
kube-apiserver refuses it up front rather than fail every object later: apiextensions-apiserver
pkg/apis/apiextensions/validation/validation.go (``getExpressionCost``, ``getCostErrorMessage``, the
``StaticEstimated...CostLimit`` checks) and cel_validation.go (``CELSchemaContext``: how many times a node can
occur, the product of the ``maxItems``/``maxProperties`` above it; ``TotalCost``: the CRD's sum and its four
costliest rules). A rule's cost is its estimate (:mod:`gpulab.cluster.cel.cost`) times that cardinality, or,
under an unbounded list or map, times the number of the node's smallest serialization that fit in a 3 MiB
request (schema/cel/compilation.go ``maxCardinality``).

The types and sizes a rule sees are k8s.io/apiserver pkg/cel/common/schemas.go ``SchemaDeclType``: an
unbounded list holds as many of its smallest items as a 3 MiB request can, an unbounded string is 3 MiB long,
``maxLength`` counts four bytes a character.
"""
from __future__ import annotations

from ..cel import CelCompileError
from ..cel.cost import MAX, Type, estimate
from ..errors import FieldError
from . import gofield
from .path import Path

RULE_LIMIT = 10_000_000     # StaticEstimatedCostLimit
CRD_LIMIT = 100_000_000     # StaticEstimatedCRDCostLimit
MAX_REQUEST_BYTES = 3 * 1024 * 1024   # celconfig.MaxRequestSizeBytes
_RESERVED = {"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function", "if",
             "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"}
_ESCAPES = {".": "__dot__", "-": "__dash__", "/": "__slash__"}


def cost_errors(schema: dict, root_path: Path) -> list[FieldError]:
    """The budget errors of one version's ``openAPIV3Schema`` (``root_path`` names it)."""
    from .custom_rules import ENVIRONMENT  # noqa: PLC0415 - custom_rules imports this module's siblings
    budget = _Budget(ENVIRONMENT)
    budget.walk(schema, root_path, 1, True)
    errs = budget.errs
    if budget.total > CRD_LIMIT:
        errs += [gofield.forbidden(p, "contributed to estimated rule cost total exceeding cost limit for "
                                      "entire OpenAPIv3 schema") for p, _ in budget.most_expensive]
        errs.append(gofield.forbidden(root_path, cost_message(
            "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
            budget.total, CRD_LIMIT)))
    return errs


def cost_message(name: str, cost: int, limit: int) -> str:
    """getCostErrorMessage."""
    factor = cost / limit
    if factor > 100.0:
        text = "more than 100x"
    elif factor < 1.5:
        text = f"{factor:f}x"
    else:
        text = f"{factor:.1f}x"
    return (f"{name} exceeds budget by factor of {text} (try simplifying the rule, or adding maxItems, "
            "maxProperties, and maxLength where arrays, maps, and strings are declared)")


class _Budget:
    """ValidateCustomResourceDefinitionOpenAPISchema's CEL half: children first, then the node's own rules."""

    def __init__(self, environment):
        self.environment = environment
        self.errs: list[FieldError] = []
        self.total = 0
        self.most_expensive: list[tuple[Path, int]] = []

    def walk(self, s: dict, path: Path, cardinality: int | None, is_root: bool = False) -> None:
        children = None if cardinality is None else _times(cardinality, _max_elements(s))
        additional = s.get("additionalProperties")
        if isinstance(additional, dict):
            self.walk(additional, path.child("additionalProperties"), children)
        properties = s.get("properties") or {}
        for name in sorted(properties):
            self.walk(properties[name], path.child("properties").key(name), children)
        if isinstance(s.get("items"), dict):
            self.walk(s["items"], path.child("items"), children)
        if s.get("x-kubernetes-validations"):
            self.rules(s, path, cardinality, is_root or bool(s.get("x-kubernetes-embedded-resource")))

    def rules(self, s: dict, path: Path, cardinality: int | None, is_root: bool) -> None:
        declared = decl_type(s, is_root)
        if declared is None:
            return
        if cardinality is None:
            cardinality = MAX_REQUEST_BYTES // (declared.min_size + 1)
        for i, rule in enumerate(s["x-kubernetes-validations"]):
            at = path.child("x-kubernetes-validations").index(i)
            cost = self.estimate(rule.get("rule"), declared)
            if cost is None:
                continue
            cost = 0 if cost == 0 else MAX if MAX // cost < cardinality else cost * cardinality
            if cost > RULE_LIMIT:
                self.errs.append(gofield.forbidden(at.child("rule"),
                                                   cost_message("estimated rule cost", cost, RULE_LIMIT)))
            self.observe(at.child("rule"), cost)
            message_cost = self.estimate(rule.get("messageExpression"), declared)
            if message_cost is None:
                continue
            if message_cost > RULE_LIMIT:
                self.errs.append(gofield.forbidden(at.child("messageExpression"), cost_message(
                    "estimated messageExpression cost", message_cost, RULE_LIMIT)))
            self.observe(at.child("messageExpression"), message_cost)

    def estimate(self, expression: str | None, declared: Type) -> int | None:
        """The rule's estimated cost, None when it does not compile (CRD validation says why elsewhere)."""
        if not (expression or "").strip():
            return None
        try:
            program = self.environment.compile(expression.strip())
        except CelCompileError:
            return None
        return estimate(program.tree(), declared)

    def observe(self, path: Path, cost: int) -> None:
        """TotalCost.ObserveExpressionCost: the sum, and the four costliest of those over 1% of the limit."""
        self.total = min(self.total + cost, MAX)
        if cost < CRD_LIMIT // 100:
            return
        self.most_expensive.append((path, cost))
        self.most_expensive.sort(key=lambda entry: -entry[1])
        del self.most_expensive[4:]


def _times(cardinality: int, elements: int | None) -> int | None:
    if elements is None:
        return None
    return MAX if cardinality and MAX // cardinality < elements else cardinality * elements


def _max_elements(s: dict) -> int | None:
    """extractMaxElements: how many times each child can occur per occurrence of ``s`` (None: unbounded)."""
    if s.get("type") == "object" and s.get("additionalProperties") is not None:
        return max(s["maxProperties"], 0) if s.get("maxProperties") is not None else None
    if s.get("type") == "array":
        return max(s["maxItems"], 0) if s.get("maxItems") is not None else None
    return 1


def decl_type(s: dict, is_root: bool) -> Type | None:
    """SchemaDeclType: the type and sizes a rule on ``s`` sees (None: not visible to rules)."""
    if s.get("x-kubernetes-int-or-string"):
        return Type("dyn", min_size=1, max_elements=_string_max(s))
    if is_root:
        s = _with_type_and_object_meta(s)
    kind = s.get("type")
    if kind == "array":
        items = s.get("items")
        elem = decl_type(items, bool(items.get("x-kubernetes-embedded-resource"))) if isinstance(items, dict) else None
        if elem is None:
            return None
        count = _non_negative(s.get("maxItems"), (MAX_REQUEST_BYTES - 2) // (elem.min_size + 1))
        return Type("list", elem=elem, max_elements=count, min_size=2)
    if kind == "object":
        additional = s.get("additionalProperties")
        if isinstance(additional, dict):
            elem = decl_type(additional, bool(additional.get("x-kubernetes-embedded-resource")))
            if elem is None:
                return None
            count = _non_negative(s.get("maxProperties"), (MAX_REQUEST_BYTES - 2) // (elem.min_size + 6))
            return Type("map", key=Type("string", min_size=2), elem=elem, max_elements=count, min_size=2)
        return _object(s)
    if kind == "string":
        return _string(s)
    return {"boolean": Type("bool", min_size=4), "number": Type("double", min_size=1),
            "integer": Type("int", min_size=1)}.get(kind)


def _object(s: dict) -> Type:
    required = set(s.get("required") or [])
    fields, min_size = {}, 2
    for name, prop in (s.get("properties") or {}).items():
        field_type = decl_type(prop, bool(prop.get("x-kubernetes-embedded-resource")))
        if field_type is None:
            continue
        escaped = escape(name)
        if escaped is not None:
            fields[escaped] = field_type
        if name in required and prop.get("default") is None:
            min_size += len(name) + field_type.min_size + 4
    return Type("object", fields=fields, min_size=min_size)


def _string(s: dict) -> Type:
    fmt = s.get("format")
    if fmt == "byte":
        return Type("bytes", min_size=2, max_elements=_non_negative(s.get("maxLength"), MAX_REQUEST_BYTES - 2))
    if fmt == "duration":
        return Type("duration", min_size=3, max_elements=32)
    if fmt == "date":
        return Type("timestamp", min_size=12, max_elements=12)
    if fmt == "date-time":
        return Type("timestamp", min_size=21, max_elements=32)
    if s.get("maxLength") is None and s.get("enum"):
        return Type("string", min_size=2, max_elements=max((len(v) for v in s["enum"] if isinstance(v, str)),
                                                           default=0))
    return Type("string", min_size=2, max_elements=_string_max(s))


def _string_max(s: dict) -> int:
    """A string's most characters: four per ``maxLength`` character, else a whole request's."""
    if s.get("maxLength") is not None:
        return max(s["maxLength"], 0) * 4
    return MAX_REQUEST_BYTES - 2


def _non_negative(value, default: int) -> int:
    return default if value is None else max(value, 0)


def _with_type_and_object_meta(s: dict) -> dict:
    """WithTypeAndObjectMeta: ``kind``, ``apiVersion`` and ``metadata.name``/``generateName`` always visible."""
    properties = s.get("properties") or {}
    meta = (properties.get("metadata") or {}).get("properties") or {}
    if all((properties.get(k) or {}).get("type") == "string" for k in ("kind", "apiVersion")) \
            and (properties.get("metadata") or {}).get("type") == "object" \
            and all((meta.get(k) or {}).get("type") == "string" for k in ("name", "generateName")):
        return s
    string = {"type": "string"}
    return {**s, "properties": {**properties, "kind": string, "apiVersion": string, "metadata": {
        "type": "object", "properties": {"name": string, "generateName": string}}}}


def escape(name: str) -> str | None:
    """cel.Escape: a property's name as a CEL identifier (None: not expressible)."""
    if not name or name[0].isdigit():
        return None
    if name in _RESERVED:
        return f"__{name}__"
    out, i = [], 0
    while i < len(name):
        if name.startswith("__", i):
            out.append("__underscores__")
            i += 2
            continue
        c = name[i]
        if c in _ESCAPES:
            out.append(_ESCAPES[c])
        elif c.isascii() and (c.isalnum() or c == "_"):
            out.append(c)
        else:
            return None
        i += 1
    return "".join(out)
