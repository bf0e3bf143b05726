"""No guess passes the course's lettered questions: options alike in form and length, keys spread over the letters.

A learner who always picks the longest option, or always (a), or always (b),
must score about what picking at random scores. The questions are every
lettered question the released labs print, each judged as the course judges it:
a lab's by its check's question, the final assessment's by the grader's keys.
"""
from __future__ import annotations

import re

import nbformat
import pytest

from gpulab import checks
from tests.conftest import ROOT
from tests.test_checks_final import answer_keys, grader_verdicts

OPTION = re.compile(r"^\* \*\*\(([a-d])\)\*\* (.+)$", re.M)
CHECK_ID = re.compile(r"\"((?:lab\d\d|final)\.\w+)\"")
CHANCE = 1 / 4
MARGIN = 0.1          # a strategy may score at most 10 points over chance
LONGEST_OVER_SHORTEST = 1.6


def printed_questions() -> dict[str, dict[str, str]]:
    """Check id -> the options as a released lab prints them, for every lettered question in labs/."""
    found: dict[str, dict[str, str]] = {}
    for path in sorted((ROOT / "labs").glob("*/*.ipynb")):
        cells = nbformat.read(path, as_version=4).cells
        for at, cell in enumerate(cells):
            options = dict(OPTION.findall(cell.source)) if cell.cell_type == "markdown" else {}
            if options:
                check_id = next(m.group(1) for c in cells[at + 1:] if c.cell_type == "code"
                                for m in [CHECK_ID.search(c.source)] if m)
                found[check_id] = options
    return found


@pytest.fixture(scope="module")
def bank() -> dict[str, tuple[dict[str, str], set[str]]]:
    """Check id -> (options as printed, the letters that pass): a lab's judged by its check, the final's by a
    process that loaded the grader's keys."""
    printed = printed_questions()
    keyed = [c for c in printed if checks.get(c).question is None]
    verdicts = iter(grader_verdicts([(c, letter) for c in keyed for letter in printed[c]]))
    right = {c: {letter for letter in printed[c] if next(verdicts)["passed"]} for c in keyed}
    for check_id in set(printed) - set(keyed):
        question = checks.get(check_id).question
        right[check_id] = {letter for letter in printed[check_id] if question.judge(letter).passed}
    return {c: (printed[c], right[c]) for c in printed}


def test_every_lettered_question_is_in_the_bank_as_its_check_or_the_grader_judges_it(monkeypatch):
    """The bank is every question: each lab's lettered question, printed as its check holds it; the final's as the
    grader's keys hold them."""
    printed = printed_questions()
    graded = {c: q.options for c, q in answer_keys(monkeypatch)["KEYS"].items()}
    lab = {c.id: c.question.options for c in checks.CHECKS.values() if c.question is not None}
    assert printed == {**lab, **graded}
    assert len(printed) >= 11


def test_each_question_has_exactly_one_right_option(bank):
    assert {c: len(right) for c, (_, right) in bank.items()} == {c: 1 for c in bank}


def test_options_are_alike_in_length(bank):
    """No option stands out by its length: the longest is at most 1.6 times the shortest."""
    for check_id, (options, _) in bank.items():
        lengths = sorted(len(text) for text in options.values())
        assert lengths[-1] <= LONGEST_OVER_SHORTEST * lengths[0], (check_id, options)


STRATEGIES = {
    "longest option": lambda options: max(options, key=lambda letter: len(options[letter])),
    "shortest option": lambda options: min(options, key=lambda letter: len(options[letter])),
    **{f"always ({letter})": lambda options, letter=letter: letter for letter in "abcd"},
}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_no_guessing_strategy_scores_above_chance(bank, strategy):
    """Over every question, each strategy scores within 10 points of chance (one in four)."""
    pick = STRATEGIES[strategy]
    score = sum(pick(options) in right for options, right in bank.values()) / len(bank)
    assert score <= CHANCE + MARGIN, f"{strategy} scores {score:.0%}"
