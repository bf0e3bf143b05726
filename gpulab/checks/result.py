"""A check's verdict: passed or not, a reason in the learner's terms, and a hint that is never the solution.

It prints readably in a terminal (``__str__``/``__repr__``) and renders as a
coloured box in Jupyter (``_repr_html_``); it is truthy when it passed, so
``assert gpulab.check("lab02.pools_labelled")`` reads naturally, although
graded cells use :func:`gpulab.checks.assert_passed`, whose AssertionError
carries the reason.

A third outcome, *recorded*, is for questions only the grader judges (the
final assessment's, whose keys are not in the learner's installation): the
answer is well formed and kept in the notebook, neither right nor wrong yet.
"""
from __future__ import annotations

import html
from dataclasses import dataclass


@dataclass(frozen=True)
class Result:
    passed: bool
    reason: str
    hint: str = ""
    check_id: str = ""
    recorded: bool = False      # a well-formed answer that only the grader can judge; ``passed`` is then False

    def __bool__(self) -> bool:
        return self.passed

    @property
    def word(self) -> str:
        return "RECORDED" if self.recorded else "PASS" if self.passed else "FAIL"

    def __str__(self) -> str:
        head = f"{self.word} {self.check_id}: {self.reason}".replace(" : ", ": ")
        return head if self.passed or self.recorded or not self.hint else f"{head}\nHint: {self.hint}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        if self.recorded:
            colour, mark, word = "#57606a", "&#x270E;", "Recorded"
        elif self.passed:
            colour, mark, word = "#1a7f37", "&#x2714;", "Passed"
        else:
            colour, mark, word = "#cf222e", "&#x2718;", "Not yet"
        parts = [f'<div class="gpulab-result" style="border-left:4px solid {colour};padding:4px 10px;margin:4px 0">',
                 f'<b style="color:{colour}">{mark} {word}</b> <code>{html.escape(self.check_id)}</code>',
                 f"<div>{html.escape(self.reason)}</div>"]
        if not self.passed and not self.recorded and self.hint:
            parts.append(f'<div style="color:#57606a"><i>Hint:</i> {html.escape(self.hint)}</div>')
        parts.append("</div>")
        return "".join(parts)


def passed(reason: str) -> Result:
    return Result(True, reason)


def failed(reason: str, hint: str = "") -> Result:
    return Result(False, reason, hint)


def recorded(reason: str) -> Result:
    return Result(False, reason, recorded=True)
