"""Reading a learner's answer generously: numbers as int, float or text, text without case or stray quotes.

A check must judge the answer, not its spelling: ``12``, ``"12"`` and
``12.0`` are the same count; ``" Insufficient nvidia.com/gpu. "`` is the same
reason as ``insufficient nvidia.com/gpu``.
"""
from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation


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
    """The option key whose spellings include the normalised answer (``"b"``, ``"(b)"``, ``"b)"`` name option b)."""
    text = normalise(answer)
    bare = text.strip("()").rstrip(")").strip()
    for key, spellings in options.items():
        if bare == key.lower() or text in (normalise(s) for s in spellings):
            return key
    return None
