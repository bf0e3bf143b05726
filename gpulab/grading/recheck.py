"""The grader's own verdict on a test cell: every check the cell calls, re-run in the grader's process.

Whatever the learner's kernel did to itself (a redefined ``assert_passed``, a
monkeypatched ``gpulab.checks`` or ``kubernetes`` client, a shadowing
``gpulab/`` directory, a kubeconfig pointed at a fake API server), these checks
run in another process, from the modules installed on disk, against the
cluster the grader started, through the connection the grader kept. The only
thing taken from the kernel is an answer value, as JSON, so an answer object
with a doctored ``__eq__`` arrives as plain data.
"""
from __future__ import annotations

import json
import warnings
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict, dataclass

from .cells import CheckCall
from .clusters import SubmissionCluster

# Evaluated in the learner's kernel to hand an answer over as data; str() for anything JSON cannot encode
# (a numpy integer answers like the int it prints as).
ANSWER_EXPRESSION = "__import__('json').dumps({expression}, default=str)"


@dataclass(frozen=True)
class Verdict:
    check_id: str
    passed: bool
    reason: str
    hint: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class UnreadableAnswer:
    """The kernel could not hand the answer over (the name is undefined, the expression raised, ...)."""

    error: str


def known_checks() -> frozenset[str]:
    """Every check id registered in this process's ``gpulab.checks``."""
    from ..checks import CHECKS

    return frozenset(CHECKS)


def parse_answer(user_expression: dict):
    """The value of one ``user_expressions`` reply entry built from :data:`ANSWER_EXPRESSION`."""
    import ast

    if user_expression.get("status") != "ok":
        return UnreadableAnswer(f"{user_expression.get('ename', 'Error')}: {user_expression.get('evalue', '')}")
    try:
        return json.loads(ast.literal_eval(user_expression["data"]["text/plain"]))
    except (KeyError, ValueError, SyntaxError, TypeError):
        return UnreadableAnswer("the kernel returned something that is not an answer")


def judge(calls: list[CheckCall], answers: list, cluster: SubmissionCluster, timeout: float) -> list[Verdict]:
    """Run each call's check on ``cluster`` with its answer (``answers[i]`` for ``calls[i]``); within ``timeout``."""
    if not cluster.alive():
        return [Verdict(c.check_id, False, "the cluster this submission was graded on stopped while its notebook "
                        "ran; the grader only reads the cluster it started",
                        "do not stop, reset or replace the cluster from a graded notebook") for c in calls]
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpulab-recheck")
    future = pool.submit(_run_all, calls, answers, cluster)
    try:
        return future.result(timeout=timeout)
    except FutureTimeout:
        return [Verdict(c.check_id, False, f"the cluster did not answer the grader's check within {timeout:g}s")
                for c in calls]
    finally:
        pool.shutdown(wait=False)


def _run_all(calls: list[CheckCall], answers: list, cluster: SubmissionCluster) -> list[Verdict]:
    from ..checks import NO_ANSWER, run

    verdicts = []
    for call, answer in zip(calls, answers):
        if isinstance(answer, UnreadableAnswer):
            verdicts.append(Verdict(call.check_id, False, f"the grader could not read the answer "
                                    f"{call.answer}: {answer.error}",
                                    "assign your answer to the variable the test cell uses, as a plain value"))
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = run(call.check_id, NO_ANSWER if call.answer is None else answer,
                             client=cluster.api_client())
        except Exception as exc:  # noqa: BLE001 - a verdict for the gradebook, never a crashed submission
            verdicts.append(Verdict(call.check_id, False,
                                    f"the grader could not run check {call.check_id}: {type(exc).__name__}: {exc}"))
            continue
        verdicts.append(Verdict(call.check_id, result.passed, result.reason, result.hint))
    return verdicts
