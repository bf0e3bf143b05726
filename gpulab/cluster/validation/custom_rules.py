"""CEL ``x-kubernetes-validations`` rules of a CRD, evaluated on its custom resources.

apiextensions-apiserver pkg/apiserver/schema/cel/validation.go (``Validator``):
the schema is walked along the object; at every node that has a value (nulls
are skipped) each rule is evaluated with ``self`` bound to the node and, for
transition rules (rules that name ``oldSelf``), ``oldSelf`` to the correlated
old value. A transition rule is skipped when there is no old value: on create,
for a new map key, or inside a list that is not ``x-kubernetes-list-type: map``
(only map lists correlate items, by their keys). Maps correlate by key unless
``x-kubernetes-map-type: atomic``.

A rule that does not evaluate to true becomes one field error
(``fieldErrorForReason``): at the node's path, or under it at the rule's
``fieldPath``; ``Invalid value: "<schema type>": <detail>`` (``Forbidden``,
``Required``, ``Duplicate`` when ``reason`` says so); the detail is the
``messageExpression``'s value when it evaluates to a usable string, else the
``message``, else ``failed rule: <rule>``. A rule that fails to evaluate reads
``<cel error> evaluating rule: <message or rule>``.

Ratcheting (CRDValidationRatcheting, on by default): on update a rule without
``oldSelf`` whose node (or nearest correlatable parent) is unchanged does not
fail the request; upstream returns it as a warning, here it is dropped.

The CEL itself is :mod:`gpulab.cluster.cel` (cel-expr-python), with ``self``
and ``oldSelf`` declared ``dyn``: values are not typed from the schema, so a
``format: date-time`` string stays a string and ``optionalOldSelf`` rules are
evaluated only when an old value exists. Rules are held to their cost budget when the CRD is written
(:mod:`.rule_cost`), so evaluation itself is not metered.
"""
from __future__ import annotations

import re
from typing import Any

from ..cel import CelCompileError, CelRuntimeError, Environment
from ..errors import FieldError
from ..gofmt import go_quote
from . import gofield
from .path import Path, child as _child, index as _index, key as _key

ENVIRONMENT = Environment("crd-validation-rule", ("self", "oldSelf"))
BLOCKED = ("some validation rules were not checked because the object was invalid; "
           "correct the existing errors to complete validation")
_BLOCKING_TYPES = {"FieldValueNotSupported", "FieldValueRequired", "FieldValueTooLong", "FieldValueTooMany",
                   "FieldValueTypeInvalid"}
_MAX_MESSAGE_BYTES = 5 * 1024  # celconfig.MaxEvaluatedMessageExpressionSizeBytes
_STRING_LITERALS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_OLD_SELF = re.compile(r"\boldSelf\b")
_FIELD_PATH_TOKEN = re.compile(r"\.([^.\[\]]+)|\['((?:[^'\\]|\\.)*)'\]")
_ABSENT = object()


def has_rules(s: dict | None) -> bool:
    """Whether any node of the schema carries ``x-kubernetes-validations``."""
    if not isinstance(s, dict):
        return False
    if s.get("x-kubernetes-validations"):
        return True
    children = list((s.get("properties") or {}).values()) + [s.get("items"), s.get("additionalProperties")]
    return any(has_rules(c) for c in children if isinstance(c, dict))


def blocking_error(errs: list[FieldError]) -> FieldError | None:
    """strategy.go hasBlockingErr: a type, required, enum or size error leaves the rules unchecked."""
    if any(e.type in _BLOCKING_TYPES for e in errs):
        return gofield.invalid("<nil>", None, BLOCKED)
    return None


def compile_errors(rules: list[dict], path: Path) -> list[FieldError]:
    """What CRD validation reports for rules that do not compile (apiextensions validation.go, cel.Compile).

    ``path`` is the schema node's; errors go to ``x-kubernetes-validations[i].rule`` (``compilation failed:
    ...``, ``cel expression must evaluate to a bool``) and ``...messageExpression``.
    """
    errs: list[FieldError] = []
    for i, rule in enumerate(rules):
        expression = (rule.get("rule") or "").strip()
        if not expression:
            continue
        at = path.child("x-kubernetes-validations").index(i)
        detail = _compile_detail(expression, "bool", "")
        if detail:
            errs.append(gofield.invalid(at.child("rule"), _go_rule(rule), detail))
        message_expression = (rule.get("messageExpression") or "").strip()
        detail = message_expression and _compile_detail(message_expression, "string", "messageExpression ")
        if detail:
            errs.append(gofield.invalid(at.child("messageExpression"), _go_rule(rule), detail))
    return errs


def _compile_detail(expression: str, returns: str, prefix: str) -> str | None:
    try:
        program = ENVIRONMENT.compile(expression)
    except CelCompileError as exc:
        return f"{prefix}compilation failed: {exc}"
    if program.returns not in (returns, "dyn"):
        return f"{prefix}must evaluate to a string" if prefix else "cel expression must evaluate to a bool"
    return None


def _go_rule(rule: dict) -> gofield.GoText:
    """%#v of an apiextensions.ValidationRule (a set pointer shows a stand-in address)."""
    def pointer(type_name: str, value: Any) -> str:
        return f"(*{type_name})(nil)" if value is None else f"(*{type_name})(0xc000a1c000)"
    return gofield.GoText(
        f"apiextensions.ValidationRule{{Rule:{go_quote(rule.get('rule') or '')}, "
        f"Message:{go_quote(rule.get('message') or '')}, "
        f"MessageExpression:{go_quote(rule.get('messageExpression') or '')}, "
        f"Reason:{pointer('apiextensions.FieldValueErrorReason', rule.get('reason'))}, "
        f"FieldPath:{go_quote(rule.get('fieldPath') or '')}, "
        f"OptionalOldSelf:{pointer('bool', rule.get('optionalOldSelf'))}}}")


def validate(s: dict, obj: Any, old: Any = None) -> list[FieldError]:
    """The errors of every failing rule in ``s`` for ``obj`` (``old`` on update)."""
    errs: list[FieldError] = []
    _validate(s, obj, old if old is not None else _ABSENT, None, old is not None and obj == old,
              old is not None, errs)
    return errs


def _validate(s: dict | None, x: Any, old: Any, path: Path | None, unchanged: bool, updating: bool,
              errs: list[FieldError]) -> None:
    if not isinstance(s, dict) or x is None:
        return
    if s.get("x-kubernetes-validations"):
        errs += _evaluate(s, x, old, path, unchanged and updating)
    if isinstance(x, dict):
        correlatable = s.get("x-kubernetes-map-type", "granular") == "granular"
        additional = s.get("additionalProperties")
        if isinstance(additional, dict):
            for key, value in x.items():
                _descend(additional, value, old, key, correlatable, _key(path, key), unchanged, updating, errs)
        properties = s.get("properties") or {}
        for key, value in x.items():
            if key in properties:
                _descend(properties[key], value, old, key, correlatable, _child(path, key), unchanged, updating, errs)
    elif isinstance(x, list) and isinstance(s.get("items"), dict):
        old_items = _map_list_index(s, old)
        for i, value in enumerate(x):
            old_value = old_items.get(_map_list_key(s, value), _ABSENT) if old_items else _ABSENT
            # an item that cannot be correlated ratchets on its nearest correlatable parent (the list)
            same = value == old_value if old_value is not _ABSENT else unchanged
            _validate(s["items"], value, old_value, _index(path, i), same, updating, errs)


def _descend(s: dict, value: Any, old: Any, key: str, correlatable: bool, path: Path, unchanged: bool,
             updating: bool, errs: list[FieldError]) -> None:
    old_value = old.get(key, _ABSENT) if correlatable and isinstance(old, dict) else _ABSENT
    same = value == old_value if old_value is not _ABSENT else unchanged
    _validate(s, value, old_value, path, same, updating, errs)


def _map_list_index(s: dict, old: Any) -> dict:
    """makeMapList: old items of a ``map`` list by their keys; nothing correlates in other lists."""
    if s.get("x-kubernetes-list-type") != "map" or not isinstance(old, list):
        return {}
    return {_map_list_key(s, item): item for item in old if isinstance(item, dict)}


def _map_list_key(s: dict, item: Any) -> Any:
    if not isinstance(item, dict):
        return None
    return tuple(repr(item.get(k)) for k in s.get("x-kubernetes-list-map-keys") or ())


def _evaluate(s: dict, x: Any, old: Any, path: Path | None, ratchets: bool) -> list[FieldError]:
    """validateExpressions: the rules of one node."""
    errs: list[FieldError] = []
    schema_type = _schema_type(s)
    here = "<nil>" if path is None else path
    for rule in s["x-kubernetes-validations"]:
        expression = rule.get("rule") or ""
        uses_old_self = bool(_OLD_SELF.search(_STRING_LITERALS.sub('""', expression)))
        if uses_old_self and old is _ABSENT:
            continue
        variables = {"self": x, "oldSelf": old if old is not _ABSENT else None}
        try:
            result = ENVIRONMENT.compile(expression).evaluate(variables)
        except CelCompileError as exc:
            errs.append(gofield.invalid(here, schema_type, f"rule compile error: {exc}"))
            continue
        except CelRuntimeError as exc:
            if str(exc).startswith("no such overload"):
                detail = (f"'{exc}': call arguments did not match a supported operator, function or macro "
                          f"signature for rule: {_rule_error_string(rule)}")
            else:
                detail = f"{exc} evaluating rule: {_rule_error_string(rule)}"
            errs.append(gofield.invalid(here, schema_type, detail))
            continue
        if result is True:
            continue
        if ratchets and not uses_old_self:
            continue
        at = _rule_path(path, rule.get("fieldPath") or "", s)
        detail = _message_expression(rule, variables) or _rule_message_or_default(rule)
        errs.append(_error_for_reason(at, schema_type, detail, rule.get("reason")))
    return errs


def _message_expression(rule: dict, variables: dict) -> str | None:
    """evalMessageExpression: a trimmed one-line non-empty string of at most 5 KiB, else None."""
    source = rule.get("messageExpression")
    if not source:
        return None
    try:
        value = ENVIRONMENT.compile(source).evaluate(variables)
    except (CelCompileError, CelRuntimeError):
        return None
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text or "\n" in text or len(text.encode()) > _MAX_MESSAGE_BYTES:
        return None
    return text


def _rule_message_or_default(rule: dict) -> str:
    message = rule.get("message") or ""
    return message.strip() if message else f"failed rule: {_rule_error_string(rule)}"


def _rule_error_string(rule: dict) -> str:
    message = rule.get("message") or ""
    return message.strip() if message else (rule.get("rule") or "").strip()


def _error_for_reason(path, schema_type: str, detail: str, reason: str | None) -> FieldError:
    """fieldErrorForReason."""
    if reason == "FieldValueForbidden":
        return gofield.forbidden(path, detail)
    if reason == "FieldValueRequired":
        return gofield.required(path, detail)
    if reason == "FieldValueDuplicate":
        return gofield.duplicate(path, schema_type)
    return gofield.invalid(path, schema_type, detail)


def _schema_type(s: dict) -> str:
    return s.get("type") or ""


def _rule_path(path: Path | None, field_path: str, s: dict):
    """The node's path with the rule's ``fieldPath`` (ValidFieldPath, normalised) appended as one child."""
    if not field_path:
        return "<nil>" if path is None else path
    normalized = Path()
    node: dict | None = s
    for match in _FIELD_PATH_TOKEN.finditer(field_path):
        name = match.group(1) if match.group(1) is not None else match.group(2)
        if node is not None and name in (node.get("properties") or {}):
            normalized, node = normalized.child(name), node["properties"][name]
        else:
            normalized = normalized.key(name)
            additional = (node or {}).get("additionalProperties")
            node = additional if isinstance(additional, dict) else None
    return _child(path, str(normalized))

