"""A check's verdict: passed or not, a reason in the learner's terms, and a hint that is never the solution.

It prints readably in a terminal (``__str__``/``__repr__``) and renders as a
coloured box in Jupyter (``_repr_html_``); it is truthy when it passed, so
``assert gpulab.check("lab02.pools_labelled")`` reads naturally, although
graded cells use :func:`gpulab.checks.assert_passed`, whose AssertionError
carries the reason.
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

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        head = f"{'PASS' if self.passed else 'FAIL'} {self.check_id}: {self.reason}".replace(" : ", ": ")
        return head if self.passed or not self.hint else f"{head}\nHint: {self.hint}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        colour, mark, word = ("#1a7f37", "&#x2714;", "Passed") if self.passed else ("#cf222e", "&#x2718;", "Not yet")
        parts = [f'<div class="gpulab-result" style="border-left:4px solid {colour};padding:4px 10px;margin:4px 0">',
                 f'<b style="color:{colour}">{mark} {word}</b> <code>{html.escape(self.check_id)}</code>',
                 f"<div>{html.escape(self.reason)}</div>"]
        if not self.passed and self.hint:
            parts.append(f'<div style="color:#57606a"><i>Hint:</i> {html.escape(self.hint)}</div>')
        parts.append("</div>")
        return "".join(parts)


def passed(reason: str) -> Result:
    return Result(True, reason)


def failed(reason: str, hint: str = "") -> Result:
    return Result(False, reason, hint)
