"""The checks by id (``<lab>.<exercise>``, as in docs/course-plan.md), registered by the lab modules.

A check is a function of a :class:`~gpulab.learner.reader.ClusterReader` (and,
for exercises that ask a question, the learner's answer) returning a
:class:`~gpulab.checks.result.Result`. A check that takes an answer names the
notebook variable that holds it, so a missing answer is reported as "set
``allocatable_gpus`` in the answer cell", not judged as if it were the
learner's word.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .result import Result

# Lab prefix of a check id -> the lab it belongs to (course/, solutions/<lab>/, `gpulab lab reset LAB`).
LABS = {
    "setup": "00-setup",
    "lab01": "lab01-gpu-operator",
    "lab02": "lab02-node-pools",
    "lab03": "lab03-h100-pod",
    "lab04": "lab04-sharing",
    "lab05": "lab05-gang-scheduling",
    "lab06": "lab06-dra",
    "final": "final-assessment",
}


@dataclass(frozen=True)
class Check:
    id: str
    title: str
    func: Callable[..., Result]
    needs_answer: bool = False      # judges an answer the learner gives
    answer_name: str = ""           # the notebook variable holding the answer (required or optional)
    answer_optional: bool = False   # an answer that only explains what the cluster shows (the manifest applied)
    settles: Callable[..., str | None] | None = None   # what is still changing in what it reads (None: settled)
    lettered: Any = None            # its lettered question (a MultipleChoice, or a function that makes it)

    @property
    def takes_answer(self) -> bool:
        return self.needs_answer or self.answer_optional

    @property
    def question(self):
        """The lettered question this check judges (a MultipleChoice, as its lab prints it), or None."""
        return self.lettered() if callable(self.lettered) else self.lettered

    @property
    def lab(self) -> str:
        return LABS[self.id.split(".", 1)[0]]


CHECKS: dict[str, Check] = {}


def check(check_id: str, title: str, *, answer: str | None = None, optional: bool = False,
          settles: Callable[..., str | None] | None = None, question: Any = None):
    """Register the decorated function as the check ``check_id``; ``answer`` names the variable of its answer
    (``optional``: the check judges the cluster, and reads the answer only to explain what it sees); ``settles``
    says what is still changing in the state it reads (:mod:`.settled`), which it judges only once settled;
    ``question``: the lettered question it judges, so the course's questions can be weighed together (no guessing
    strategy may pass them)."""
    prefix = check_id.split(".", 1)[0]
    if prefix not in LABS or "." not in check_id:
        raise ValueError(f"check id {check_id!r} must be <lab>.<exercise> with lab one of {', '.join(LABS)}")

    def register(func: Callable[..., Result]) -> Callable[..., Result]:
        if check_id in CHECKS:
            raise ValueError(f"check {check_id!r} registered twice")
        CHECKS[check_id] = Check(check_id, title, func, answer is not None and not optional, answer or "",
                                 answer is not None and optional, settles, question)
        return func
    return register
