"""Judging the two engines' records of each case, and saying so: every difference side by side, then the figures.

A case agrees when every compared output is the same on both engines after normalisation. One that differs is
*known* when the corpus marks it with a reason, *new* otherwise; a known case that agrees is *stale* (its mark
can go). The last line is ``agreement: A/B cases, K known differences, N new``.
"""
from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass

from .corpus import Case
from .steps import Record

WIDTH = 70


@dataclass
class Verdict:
    case: Case
    embedded: Record
    upstream: Record

    @property
    def agrees(self) -> bool:
        return [(o.label, o.parts) for o in self.embedded.outputs] == [(o.label, o.parts)
                                                                        for o in self.upstream.outputs]

    @property
    def outcome(self) -> str:
        if self.agrees:
            return "stale" if self.case.known else "agree"
        return "known" if self.case.known else "new"


def side_by_side(left: str, right: str) -> list[str]:
    """The lines where ``left`` (embedded) and ``right`` (upstream) differ, in two columns, with a line of context."""
    a, b = left.splitlines(), right.splitlines()
    rows = []
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(1):
        for tag, i1, i2, j1, j2 in group:
            for k in range(max(i2 - i1, j2 - j1)):
                x = a[i1 + k] if i1 + k < i2 else ""
                y = b[j1 + k] if j1 + k < j2 else ""
                mark = " " if tag == "equal" else "|"
                rows.append(f"    {x[:WIDTH]:<{WIDTH}} {mark} {y[:WIDTH]}")
        rows.append("    " + "." * 8)
    return rows


def differences(verdict: Verdict) -> list[str]:
    """Each output that differs, both engines' versions side by side."""
    lines = []
    left, right = verdict.embedded.outputs, verdict.upstream.outputs
    for index in range(max(len(left), len(right))):
        e = left[index] if index < len(left) else None
        u = right[index] if index < len(right) else None
        if e and u and e.label == u.label and e.parts == u.parts:
            continue
        label = e.label if e else u.label
        lines.append(f"  {label}" + (f"   (upstream: {u.label})" if e and u and e.label != u.label else ""))
        parts = dict.fromkeys([*(e.parts if e else {}), *(u.parts if u else {})])
        for part in parts:
            x, y = (e.parts.get(part, "<none>") if e else "<none>"), (u.parts.get(part, "<none>") if u else "<none>")
            if x != y:
                lines.append(f"   {part}:  {'embedded':<{WIDTH}}   upstream")
                lines += side_by_side(x, y)
    return lines


def by_area(verdicts: list[Verdict]) -> dict[str, Counter]:
    areas: dict[str, Counter] = {}
    for v in verdicts:
        areas.setdefault(v.case.area, Counter())[v.outcome] += 1
    return areas


def figures(counts: Counter) -> str:
    total = sum(counts.values())
    agree = counts["agree"] + counts["stale"]
    return f"{agree}/{total} cases, {counts['known']} known differences, {counts['new']} new"


def render(verdicts: list[Verdict], *, verbose_known: bool = False) -> str:
    """The report: new differences in full (known ones too with ``verbose_known``), stale marks, then the figures."""
    lines = []
    for v in verdicts:
        if v.outcome == "new" or (v.outcome == "known" and verbose_known):
            lines.append(f"{v.outcome.upper()} {v.case.id} [{v.case.area}]"
                         + (f"  known: {v.case.known}" if v.case.known else ""))
            lines += differences(v)
        elif v.outcome == "stale":
            lines.append(f"STALE {v.case.id}: agrees this time; remove its known mark if it agrees for good "
                         f"({v.case.known})")
    lines.append("")
    for area, counts in sorted(by_area(verdicts).items()):
        lines.append(f"  {area:<12} {figures(counts)}")
    lines.append(f"agreement: {figures(Counter(v.outcome for v in verdicts))}")
    return "\n".join(lines)
