"""What a graded cell asks of the grader: the checks its (trusted) source calls, and which cells are graded.

A test cell of the course calls ``gpulab.checks.assert_passed("<check id>"[, answer])``
(or ``gpulab.check(...)`` / ``gpulab.checks.run(...)``). The grader reads those
calls from the cell's source as nbgrader stored it at ``generate_assignment``
(never the submission's copy), so it knows which checks to re-run itself and
which expression in the learner's kernel holds each answer. ``ast`` does the
reading: a regular expression would be fooled by comments and strings.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

# Function names that run a check when called with a check id first (see gpulab.checks / gpulab.check).
CHECK_FUNCTIONS = frozenset({"assert_passed", "check", "run"})
# nbclient honours these tags (skip the cell / let it raise): a learner must not be able to set them on graded cells.
EXECUTION_TAGS = frozenset({"skip-execution", "raises-exception"})


@dataclass(frozen=True)
class CheckCall:
    check_id: str
    answer: str | None      # source of the answer expression, None when the call passes no answer


def check_calls(source: str, known: set[str] | frozenset[str]) -> list[CheckCall]:
    """The check calls in ``source``, in source order, for check ids in ``known``; [] if it does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    calls = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or _function_name(node.func) not in CHECK_FUNCTIONS or not node.args:
            continue
        first = node.args[0]
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value in known):
            continue
        answer = node.args[1] if len(node.args) > 1 else next(
            (k.value for k in node.keywords if k.arg == "answer"), None)
        calls.append(((node.lineno, node.col_offset),
                      CheckCall(first.value, ast.unparse(answer) if answer is not None else None)))
    return [call for _, call in sorted(calls, key=lambda pair: pair[0])]


def _function_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def nbgrader_meta(cell) -> dict:
    return (cell.get("metadata") or {}).get("nbgrader") or {}


def is_graded(cell) -> bool:
    """A test cell nbgrader scores automatically: a grade cell that is not also an answer."""
    meta = nbgrader_meta(cell)
    return bool(meta.get("grade")) and not meta.get("solution") and cell.get("cell_type") == "code"


def is_instructor_code(cell) -> bool:
    """A code cell whose source nbgrader restores from the source notebook: test cells and locked cells."""
    meta = nbgrader_meta(cell)
    return cell.get("cell_type") == "code" and not meta.get("solution") and bool(meta.get("grade") or meta.get("locked"))
