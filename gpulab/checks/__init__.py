"""One check per exercise: ``run("lab02.pools_labelled")`` -> Result(passed, reason, hint).

Checks read the cluster only through the official ``kubernetes`` client (so
they judge kind and real clusters the same way) and accept every correct
solution: they ask what the cluster does, not how the learner spelled it.
Exercises that ask a question take the learner's ``answer``; the final
assessment's questions are only *recorded* here and judged by the grader
(:mod:`.keys`).

In nbgrader test cells use :func:`assert_passed`: it raises AssertionError
with the reason and hint, and writes nothing to stderr (nbgrader scores a
cell with stderr output as zero).
"""
from __future__ import annotations

import difflib
import os
import time
from dataclasses import replace

from . import final, lab01, lab02, lab03, lab04, lab05, lab06, progress, setup  # noqa: F401 - registers the checks
from . import settled
from .answers import NO_ANSWER, unanswered
from .registry import CHECKS, LABS, Check
from .result import Result, failed

VALIDATE_ENV = "NBGRADER_EXECUTION"

__all__ = ["CHECKS", "LABS", "Check", "NO_ANSWER", "Result", "assert_passed", "check_ids", "get", "progress", "run"]


def check_ids(lab: str | None = None) -> list[str]:
    """Every check id in course order, or those of one lab (``"lab02"`` or ``"lab02-node-pools"``)."""
    order = list(LABS)
    ids = sorted(CHECKS, key=lambda i: order.index(i.split(".", 1)[0]))  # stable: registration order within a lab
    return [i for i in ids if lab is None or lab in (i.split(".", 1)[0], CHECKS[i].lab)]


def get(check_id: str) -> Check:
    try:
        return CHECKS[check_id]
    except KeyError:
        close = difflib.get_close_matches(check_id, CHECKS, n=1)
        suggestion = f"; did you mean {close[0]!r}?" if close else ""
        raise KeyError(f"no check {check_id!r}{suggestion}") from None


def run(check_id: str, answer=NO_ANSWER, *, client=None) -> Result:
    """Run one check against the connected cluster (or the given ``kubernetes`` ApiClient)."""
    from ..learner import connection
    from ..learner.reader import ClusterReader

    check = get(check_id)
    if check.needs_answer and unanswered(answer):
        return replace(_no_answer(check, answer), check_id=check_id)
    if check.answer_optional and unanswered(answer):
        answer = NO_ANSWER
    remember = client is None      # the learner's own connection: the progress panel shows the verdict
    try:
        api_client = client if client is not None else connection.current().api_client
    except connection.ConnectError as exc:
        api_client, result = None, failed(str(exc), "start the cluster (`gpulab cluster up`) or fix the kubeconfig, "
                                                    "then run gpulab.connect() again")
    if api_client is not None:
        try:
            reader = _settled_reader(check, lambda: ClusterReader(api_client))
            if isinstance(reader, Result):
                result = reader
            else:
                result = check.func(reader, answer) if check.takes_answer else check.func(reader)
        except Exception as exc:  # noqa: BLE001 - a verdict, never a traceback, in a learner's cell
            result = _unreachable(exc, api_client)
            if result is None:
                raise
    result = replace(result, check_id=check_id)
    if remember:
        progress.record(result)
    return result


def _settled_reader(check: Check, new_reader):
    """A reader of the settled cluster for ``check`` (seeing it settled twice in a row), or the verdict that it has
    not settled: nothing it read changed for ``settled.SETTLE_SECONDS``, or it was still changing after
    ``settled.SETTLE_LIMIT_SECONDS`` (a loaded machine reconciles slowly, but it reconciles)."""
    reader = new_reader()
    if check.settles is None:
        return reader
    started = changed = time.monotonic()
    seen = None            # what the last read saw (objects and their versions): a new version is progress
    quiet = False          # settled at the last read too, QUIET_SECONDS ago: a change just made has been picked up
    while True:
        detail = check.settles(reader)
        now = time.monotonic()
        if detail is None and quiet:
            return reader
        if reader.versions() != seen:
            seen, changed = reader.versions(), now
        if detail is not None and (now - changed >= settled.SETTLE_SECONDS
                                   or now - started >= settled.SETTLE_LIMIT_SECONDS):
            return settled.not_settled(detail)
        quiet = detail is None
        time.sleep(settled.QUIET_SECONDS if quiet else settled.POLL_SECONDS)
        reader = new_reader()


def assert_passed(result: Result | str, answer=NO_ANSWER) -> None:
    """For graded cells: run the check (given its id) and raise AssertionError with its reason unless it passed
    (or, for a question only the grader judges, its answer was recorded: under ``nbgrader validate`` that raises
    too, saying so, since Validate's "Success!" would claim a verdict nobody has given yet).

    The verdict is printed, once per call, and nothing is returned, so a cell ending in ``assert_passed(...)``
    does not show the verdict a second time as its value.
    """
    if isinstance(result, str):
        result = run(result, answer)
    if result.recorded and validating():
        raise AssertionError(f"{result.check_id}: answer recorded; judged when graded\n{result.reason}")
    if not (result.passed or result.recorded):
        message = f"{result.check_id}: {result.reason}"
        raise AssertionError(f"{message}\nHint: {result.hint}" if result.hint else message)
    print(result)


def validating() -> bool:
    """Whether ``nbgrader validate`` (JupyterLab's Validate button) runs this kernel: nbgrader sets
    ``NBGRADER_EXECUTION=validate`` for it, ``autograde`` when grading."""
    return os.environ.get(VALIDATE_ENV) == "validate"


def _no_answer(check: Check, answer) -> Result:
    """What is missing and where it goes: the variable the answer cell sets, never a judgement of "None"."""
    name = check.answer_name or "the answer"
    if isinstance(answer, str):
        state = "is empty"
    elif answer is None or answer is Ellipsis:
        state = f"is still {answer!r}"
    else:
        state = "is not set yet"
    return failed(f"no answer yet: {name} {state}",
                  f"in this exercise's answer cell (the one that says YOUR CODE HERE), set {name} = your answer "
                  f"in the form the exercise asks for and run that cell, then this one; or click its Check button")


def _unreachable(exc: Exception, api_client) -> Result | None:
    """A failed verdict for errors reaching the API server; None for anything else (a bug: let it raise)."""
    from kubernetes.client import ApiException
    from urllib3.exceptions import HTTPError

    if isinstance(exc, ApiException) and exc.status in (401, 403):
        return failed(f"the API server refused the request ({exc.status} {exc.reason}): the kubeconfig's "
                      "credentials are not valid for this cluster",
                      "run gpulab.connect() again; after `gpulab lab reset` or `gpulab cluster reset` the cluster "
                      "has new credentials")
    if isinstance(exc, HTTPError):
        detail = str(getattr(exc, "reason", None) or exc).rsplit(": ", 1)[-1]   # urllib3's innermost cause
        return failed(f"cannot reach the API server at {api_client.configuration.host} ({detail})",
                      "is the cluster running? `gpulab cluster status`; then gpulab.connect()")
    return None
