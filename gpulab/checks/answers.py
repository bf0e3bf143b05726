"""Reading a learner's answer generously but unambiguously: numbers, names, option letters, the scheduler's words.

A check must judge the answer, not its spelling: ``12``, ``"12"`` and
``12.0`` are the same count; ``" Insufficient nvidia.com/gpu. "`` is the same
reason as ``insufficient nvidia.com/gpu``; ``"b"``, ``"(b)"`` and option b's
text are option b. It never searches free text for keywords: an answer that
is none of the accepted forms is not an answer, so a sentence that says the
right words and the opposite meaning does not pass.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from .result import Result, failed, passed


class _NoAnswer:
    def __repr__(self) -> str:
        return "NO_ANSWER"


NO_ANSWER = _NoAnswer()    # run() was given no answer at all


def unanswered(answer) -> bool:
    """No answer yet: nothing passed, the answer cell's ``None`` or ``...``, or an empty string."""
    return answer is NO_ANSWER or answer is None or answer is Ellipsis or (isinstance(answer, str)
                                                                           and not answer.strip())


def as_int(answer) -> int | None:
    """An integral number from int, integral float/Decimal or digits in a string; None otherwise (bools too)."""
    if isinstance(answer, bool):
        return None
    if isinstance(answer, int):
        return answer
    try:
        number = Decimal(str(answer).strip())
    except (InvalidOperation, ValueError):
        return None
    if not number.is_finite() or number != number.to_integral_value():
        return None
    return int(number)


def normalise(text) -> str:
    """Lower case, one space between words, no surrounding quotes, backticks or final full stop."""
    cleaned = re.sub(r"\s+", " ", str(text)).strip().strip("`'\"").strip()
    return cleaned.rstrip(".").strip().lower()


def words(text) -> str:
    """``normalise`` plus dropping the plural markers ``(s)`` and counts, for comparing scheduler reasons."""
    return re.sub(r"\s+", " ", re.sub(r"\(s\)|\b\d+\b", " ", normalise(text))).strip()


def choice(answer, options: dict[str, tuple[str, ...]]) -> str | None:
    """The option key named by the answer: the key itself (``"b"``, ``"(b)"``, ``"b)"``) or one of its spellings,
    compared whole (``normalise``, or ``words`` for the scheduler's counted reasons); None for anything else."""
    text = normalise(answer)
    bare = text.strip("()").rstrip(")").strip()
    for key, spellings in options.items():
        if bare == key.lower() or any(text == normalise(s) or words(answer) == words(s) for s in spellings):
            return key
    return None


def quoted(answer, reasons: dict[str, tuple[str, ...]]) -> set[str]:
    """The keys whose reason, as the tool prints it, the answer quotes: contains whole (compared as ``words``), as
    a learner pastes a line of kubectl's output around it. A reason is the tool's full wording, never a keyword."""
    said = words(answer)
    return {key for key, texts in reasons.items() if any(words(t) and words(t) in said for t in texts)}


@dataclass(frozen=True)
class MultipleChoice:
    """A lettered question. An answer is an option's letter or its whole text, or one of ``words[letter]``: the
    words a tool itself prints for that option (the scheduler's reason, the API server's error); or a quote that
    contains one of ``quotes[letter]``, the tool's full reason for that option (kubectl's whole line around it).

    Options are alike in form and length, so that none stands out as the answer; the explanation lives in the
    feedback: ``because`` after a right answer, ``why_not`` after a wrong one."""

    options: dict[str, str]
    why_not: dict[str, str]              # letter -> why that option is wrong (never which one is right)
    hint: str
    key: str = ""                        # the right letter (for a question judged from the cluster: in the lab's state)
    because: str = ""                    # why the right option is right, told once it is picked
    words: dict[str, tuple[str, ...]] = field(default_factory=dict)
    quotes: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def letters(self) -> str:
        return ", ".join(self.options)

    def pick(self, answer) -> str | None:
        picked = choice(answer, {k: (text, *self.words.get(k, ())) for k, text in self.options.items()})
        if picked is None:
            found = quoted(answer, self.quotes)
            picked = found.pop() if len(found) == 1 else None
        return picked

    def judge(self, answer, key: str | None = None) -> Result:
        """The verdict on ``answer``, with ``key`` the right letter (``self.key`` unless the cluster says otherwise)."""
        key = self.key if key is None else key
        picked = self.pick(answer)
        if picked is None:
            return failed(f"{normalise(answer)!r} is not one of the options ({self.letters})",
                          f"answer with one option's letter, e.g. \"{next(iter(self.options))}\"; {self.hint}")
        if picked == key:
            return passed(f"right: ({picked}) {self.options[picked]} {self.because}".rstrip())
        return failed(f"({picked}) is not it: {self.why_not[picked]}", self.hint)
