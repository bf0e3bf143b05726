"""Helpers shared by score plugins (pkg/scheduler/framework/plugins/helper/normalize_score.go)."""
from __future__ import annotations

from ..interface import MAX_NODE_SCORE


def go_div(a: int, b: int) -> int:
    """Go's integer division, which truncates toward zero (Python's ``//`` floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def default_normalize_score(scores: list[int], reverse: bool = False, max_priority: int = MAX_NODE_SCORE) -> list[int]:
    """DefaultNormalizeScore: scale onto 0..max_priority by the highest score, reversed when asked."""
    highest = max(scores, default=0)
    if highest == 0:
        return [max_priority] * len(scores) if reverse else scores
    out = [go_div(max_priority * s, highest) for s in scores]
    return [max_priority - s for s in out] if reverse else out
