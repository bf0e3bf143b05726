"""``gpulab grade LAB --jobs N``: every submission in nbgrader's ``submitted/`` graded concurrently.

nbgrader autogrades one submission after another in one process (nbgrader
issue #174), and a submission that kills that process stops the whole run.
Here N grading processes (:mod:`.worker`) each run nbgrader's own autograde,
one submission at a time, writing into the same gradebook (SQLite serialises
the writes), so ``nbgrader export`` and the formgrader see every result. A
grading process that dies costs only the submission it was grading: its
clusters are stopped and a fresh process takes the next submission. Like
``nbgrader autograde``, a rerun skips submissions already autograded and not
resubmitted since, unless ``force``; either way the grades come out the same.
"""
from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from ..labs.variant import VariantError
from .clusters import BASE_DIR_ENV, TEMPLATE_ENV, build_template, shared_cluster, stop_clusters_under


class GradingError(RuntimeError):
    """Grading cannot start; the message says what to do."""


@dataclass
class Outcome:
    student: str
    status: str                 # "graded", "skipped" (already autograded) or "failed"
    seconds: float = 0.0
    detail: str = ""
    score: float | None = None
    max_score: float | None = None
    timed_out: int = 0          # cells stopped after Execute.timeout (graded all the same, as far as they got)


@dataclass
class Report:
    lab: str
    jobs: int
    seconds: float
    outcomes: list[Outcome]

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def per_minute(self) -> float:
        graded = self.count("graded")
        return graded * 60 / self.seconds if self.seconds else 0.0


def submissions(course_dir: Path, lab: str) -> list[str]:
    """Students with a submission of ``lab`` (``submitted/<student>/<lab>/``), sorted."""
    base = course_dir / "submitted"
    return sorted(p.name for p in base.iterdir() if (p / lab).is_dir()) if base.is_dir() else []


def check_ready(course_dir: Path, lab: str) -> None:
    from nbgrader.api import Gradebook, MissingEntry

    if not (course_dir / "nbgrader_config.py").exists():
        raise GradingError(f"{course_dir} is not an nbgrader course directory (no nbgrader_config.py)")
    if not (course_dir / "gradebook.db").exists():
        raise GradingError(f"{course_dir} has no gradebook.db: run `nbgrader generate_assignment {lab} --force` there "
                           "first (--force: the lab's release is already there, and nbgrader would skip it)")
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as gb:
        try:
            gb.find_assignment(lab)
        except MissingEntry:
            raise GradingError(f"assignment {lab!r} is not in the gradebook: run `nbgrader generate_assignment "
                               f"{lab} --force` in {course_dir} first (--force: the lab's release is already "
                               "there, and nbgrader would skip it)") from None


class _Template:
    """The lab's template cluster (:func:`.clusters.build_template`), built once for the whole run in a thread
    while the grading processes start (they import nbgrader meanwhile), instead of once by each of them. Its
    state lands at ``path``, which the grading processes get in ``$GPULAB_GRADING_TEMPLATE`` and first read
    when given a submission, so after :meth:`ready`."""

    def __init__(self, lab: str, scratch: Path):
        self.path = scratch / "template"
        self._building = scratch / "template-build"
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._build, args=(lab,), name="gpulab-template", daemon=True)
        self._thread.start()

    def _build(self, lab: str) -> None:
        try:
            built = build_template(lab, self._building)
            if built is not None:
                built.rename(self.path)
        except BaseException as exc:  # noqa: BLE001 - reported by ready(), in the driver's thread
            self.error = exc
        finally:
            stop_clusters_under(self._building)
            shutil.rmtree(self._building, ignore_errors=True)

    def ready(self) -> None:
        self._thread.join()
        if self.error is not None:
            raise GradingError(f"the starting state of {self.path.parent.name} could not be built: "
                               f"{self.error}") from self.error


class _Worker:
    def __init__(self, index: int, course_dir: Path, lab: str, force: bool, settings: tuple[str, ...], scratch: Path,
                 environ: dict):
        self.directory = scratch / f"worker-{index}"
        self.directory.mkdir(parents=True, exist_ok=True)
        self.log_path = self.directory.with_suffix(".log")
        env = dict(environ, **{BASE_DIR_ENV: str(self.directory), TEMPLATE_ENV: str(scratch / "template")})
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])  # nbgrader runs alembic
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "gpulab.grading.worker", str(course_dir), lab, *(["--force"] if force else []),
                 *settings],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env, text=True, bufsize=1,
                start_new_session=True)
        self.student: str | None = None
        self.started = 0.0

    def give(self, student: str) -> None:
        self.student, self.started = student, time.monotonic()
        self.process.stdin.write(student + "\n")
        self.process.stdin.flush()

    def death(self) -> str:
        code = self.process.wait()
        how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
        return f"the grading process died ({how}) while grading this submission; its log: {self.log_path}"

    def kill(self) -> None:
        """Stop at once (the driver is interrupted); what it was grading is left ungraded."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def close(self, timeout: float = 60) -> None:
        """End the process (it removes its spare cluster on the way out), then anything it left behind."""
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()
        stop_clusters_under(self.directory)


def grade(course_dir: Path, lab: str, *, jobs: int = 2, force: bool = False, progress: bool = True,
          settings: tuple[str, ...] = ()) -> Report:
    """Autograde every submission of ``lab`` in ``course_dir`` with ``jobs`` grading processes; ``settings``
    (``--HermeticExecute.cpu_limit=60``, say) override the course's nbgrader_config.py, as on nbgrader's command
    line."""
    from tqdm import tqdm

    course_dir = Path(course_dir).resolve()
    check_ready(course_dir, lab)
    try:        # under an instructor's secret, each learner of a varying lab has a cluster of their own
        shared = shared_cluster(lab)
    except VariantError as exc:
        raise GradingError(str(exc)) from None
    students = submissions(course_dir, lab)
    start = time.monotonic()
    outcomes: dict[str, Outcome] = {}
    queue = deque(students)
    scratch = Path(tempfile.mkdtemp(prefix=f"gpulab-grade-{lab}-"))
    selector = selectors.DefaultSelector()
    workers: list[_Worker] = []
    spawned = 0

    def spawn() -> _Worker:
        nonlocal spawned
        worker = _Worker(spawned, course_dir, lab, force, settings, scratch, environ)
        spawned += 1
        workers.append(worker)
        selector.register(worker.process.stdout, selectors.EVENT_READ, worker)
        return worker

    bar = tqdm(total=len(students), desc=f"grading {lab}", unit="submission", file=sys.stderr, disable=not progress)
    environ = dict(os.environ)      # before the template's thread sets GPULAB_HOME for a while (clusters._up)
    template = _Template(lab, scratch) if queue and shared else None
    try:
        starting = [spawn() for _ in range(min(max(jobs, 1), len(queue)))]
        if template is not None:
            template.ready()
        for worker in starting:
            worker.give(queue.popleft())
        while any(w.student for w in workers):
            for key, _ in selector.select():
                worker: _Worker = key.data
                line = worker.process.stdout.readline()
                if line:
                    answer = json.loads(line)
                    if "fatal" in answer:
                        raise GradingError(answer["fatal"])
                    status = "failed" if not answer["success"] else "skipped" if answer["skipped"] else "graded"
                    outcomes[answer["student"]] = Outcome(answer["student"], status, answer["seconds"],
                                                          answer["error"], timed_out=answer["timed_out"])
                    worker.student = None
                    if queue:
                        worker.give(queue.popleft())
                else:
                    selector.unregister(worker.process.stdout)
                    outcomes[worker.student] = Outcome(worker.student, "failed",
                                                       time.monotonic() - worker.started, worker.death())
                    stop_clusters_under(worker.directory)
                    _forget_partial(course_dir, worker.student, lab)
                    worker.student = None
                    if queue:
                        spawn().give(queue.popleft())
                bar.update(1)
                bar.set_postfix(failed=sum(1 for o in outcomes.values() if o.status == "failed"), refresh=False)
    except BaseException:          # interrupted: nothing half-graded may look graded to the next run
        for worker in workers:
            worker.kill()
            if worker.student:
                _forget_partial(course_dir, worker.student, lab)
        raise
    finally:
        bar.close()
        for worker in workers:
            worker.close()
        selector.close()
        stop_clusters_under(scratch)             # the template's server, were the run interrupted while it built
        shutil.rmtree(scratch, ignore_errors=True)
    _add_scores(course_dir, lab, outcomes)
    return Report(lab, jobs, time.monotonic() - start, [outcomes[s] for s in students if s in outcomes])


def _forget_partial(course_dir: Path, student: str, lab: str) -> None:
    """Remove what an interrupted autograde left in ``autograded/`` (nbgrader's own failure handling would have),
    so that a rerun grades the submission again instead of skipping it."""
    shutil.rmtree(course_dir / "autograded" / student / lab, ignore_errors=True)


def _add_scores(course_dir: Path, lab: str, outcomes: dict[str, Outcome]) -> None:
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as gb:
        for outcome in outcomes.values():
            try:
                submission = gb.find_submission(lab, outcome.student)
            except MissingEntry:
                continue
            outcome.max_score = submission.max_score
            if outcome.status != "failed":
                outcome.score = submission.score


def summary(report: Report) -> str:
    """The table ``gpulab grade`` prints: one row per submission, then the totals."""
    rows = [("student", "score", "max", "status", "time", "detail")]
    for o in report.outcomes:
        detail = [o.detail.replace("\n", " | ")] if o.detail else []
        if o.timed_out:
            detail.insert(0, f"{o.timed_out} cell{'s' if o.timed_out > 1 else ''} timed out")
        rows.append((o.student, "-" if o.score is None else f"{o.score:g}",
                     "-" if o.max_score is None else f"{o.max_score:g}", o.status, f"{o.seconds:.1f}s",
                     "; ".join(detail)))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join([r[0].ljust(widths[0]), r[1].rjust(widths[1]), r[2].rjust(widths[2]),
                        r[3].ljust(widths[3]), r[4].rjust(widths[4]), r[5]]).rstrip() for r in rows]
    lines.append(f"{report.lab}: {report.count('graded')} graded, {report.count('skipped')} skipped, "
                 f"{report.count('failed')} failed in {report.seconds:.1f}s "
                 f"({report.per_minute:.1f} submissions/min with --jobs {report.jobs})")
    return "\n".join(lines)
