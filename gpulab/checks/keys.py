"""Answer keys the learner's installation does not hold: questions only the grader judges.

An assessment is no assessment if ``gpulab.check`` says right or wrong as
often as asked. So the final assessment's questions are registered here with
the *form* of their answer only (one of the options' letters, a whole
number): a learner's check says whether the answer is well formed and, if it
is, that it is recorded. The judges live outside the package, in the grader's
course directory (``grader/answer_keys.py``, loaded into the grading process
by ``c.HermeticExecute.check_modules``), which calls :func:`install`; only a
process that loaded them can say right or wrong.
"""
from __future__ import annotations

from typing import Any, Callable

from .answers import as_int, normalise
from .registry import check
from .result import Result, failed, recorded

Judge = Callable[[Any, Any], Result]      # (cluster reader, answer) -> verdict
_JUDGES: dict[str, Judge] = {}
_FORMS: dict[str, tuple[Callable[[Any], str | None], str]] = {}


def install(check_id: str, judge: Judge) -> None:
    """Give this process the judge of the keyed question ``check_id`` (the grader's check module calls it)."""
    if check_id not in _FORMS:
        raise KeyError(f"{check_id!r} is not a question judged by a key (known: {', '.join(sorted(_FORMS))})")
    _JUDGES[check_id] = judge


def installed(check_id: str) -> bool:
    return check_id in _JUDGES


def one_of(letters: str) -> tuple[Callable[[Any], str | None], str]:
    """The form "one option's letter": ``"b"``, ``"(B)"`` -> ``"(b)"``."""
    def form(answer) -> str | None:
        bare = normalise(answer).strip("()").rstrip(")").strip()
        return f"({bare})" if len(bare) == 1 and bare in letters else None
    return form, f"one of the options' letters ({', '.join(letters)})"


def whole_number() -> tuple[Callable[[Any], str | None], str]:
    def form(answer) -> str | None:
        number = as_int(answer)
        return None if number is None else str(number)
    return form, "a whole number"


def keyed_question(check_id: str, title: str, *, answer: str, form: tuple[Callable[[Any], str | None], str],
                   settles: Callable[[Any], str | None] | None = None):
    """Register ``check_id``: a question whose answer the learner's check records and only a judge decides
    (``settles``: what the judge reads is reconciled state, judged once settled, as :func:`.registry.check`)."""
    _FORMS[check_id] = form
    read, described = form

    def settling_if_judged(cluster) -> str | None:      # a learner's check only records: nothing to wait for
        return settles(cluster) if settles is not None and check_id in _JUDGES else None

    @check(check_id, title, answer=answer, settles=settling_if_judged if settles is not None else None)
    def record_or_judge(cluster, given) -> Result:
        well_formed = read(given)
        if well_formed is None:
            return failed(f"{normalise(given)!r} is not {described}",
                          f"set {answer} to {described}, in this question's answer cell")
        judge = _JUDGES.get(check_id)
        if judge is None:
            return recorded(f"your answer {well_formed} is recorded; this assessment says right or wrong only "
                            "when it is graded (the grade's feedback explains each question)")
        return judge(cluster, given)

    return record_or_judge
