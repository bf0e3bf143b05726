"""Grading throughput: ``gpulab grade`` with --jobs 1 and 2 against plain ``nbgrader autograde``.

One course of N submissions of a lab (the grading fixture lab by default;
``GPULAB_BENCH_LAB=<lab>`` takes ``solutions/<lab>/``), half answered in full,
half partly, built the way learners submit. Three timed runs over the same
submissions:

* baseline: stock ``nbgrader autograde LAB`` (nbgrader's own preprocessors, one
  submission after another, as nbgrader does), every notebook against one
  shared embedded cluster started beforehand and not counted: no cluster is
  started or removed per submission and nothing is re-checked;
* ``gpulab grade LAB --jobs 1``: the hermetic pipeline, a fresh cluster per
  submission, the grader's own re-checks, each kernel in its sandbox;
* ``gpulab grade LAB --jobs 2 --force``: the same, two at a time.

The cost ratio is the --jobs 1 cost over the baseline's (both one submission
at a time); the overhead is that ratio minus one. It is given in wall time
and in CPU time (user + system of every process each run started, from
``getrusage(RUSAGE_CHILDREN)``): on a machine shared with other work the wall
times swing with the load, the CPU times much less. The cluster figures time
``start_cluster`` + ``remove`` alone: forked from the fork server as grading
does (for a lab with starting steps, a copy of its template cluster), and
started as a fresh ``python -m gpulab.embedded`` with the steps applied. Wrong grades are counted
against the score each submission earns on a cluster of its own: the shared
cluster of the baseline lets partial submissions inherit earlier ones' work.
Run ``python -m bench grading``; ``GPULAB_BENCH_SUBMISSIONS`` sets N (20), and
``GPULAB_BENCH_RUNS=jobs2`` (a comma-separated choice of ``cluster``, ``baseline``,
``jobs1``, ``jobs2``) runs only those parts, for before/after comparisons on a busy machine.
"""
from __future__ import annotations

import importlib.util
import os
import platform
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("grading_course", ROOT / "tests/fixtures/grading/course.py")
course_tools = sys.modules.setdefault(_spec.name, importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(course_tools)

TARGET_PER_MINUTE = 20
TARGET_OVERHEAD_PERCENT = 30
STOCK_CONFIG = """c = get_config()
c.CourseDirectory.course_id = "gpulab"
c.CourseDirectory.source_directory = "../solutions"
c.CourseDirectory.release_directory = "../labs"
c.Execute.timeout = {timeout}
"""


def _course(tmp: Path, lab: str):
    if lab == course_tools.FIXTURE_LAB:
        return course_tools.make_course(tmp)
    return course_tools.make_course(tmp, lab, ROOT / "solutions")


def _submit_all(course, count: int) -> dict[str, float]:
    exercises = course.exercises()
    partial = exercises[: (len(exercises) + 1) // 2]
    expected = {}
    for i in range(count):
        chosen = exercises if i % 2 == 0 else partial
        student = f"learner{i:03d}"
        course.submit(student, course.answered(chosen))
        expected[student] = course.points(chosen)
    return expected


def _wrong(course, expected: dict[str, float]) -> int:
    scores = course.scores()
    return sum(1 for student, points in expected.items() if scores.get(student, (None,))[0] != points)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(run) -> tuple[float, float]:
    """Wall and CPU seconds of ``run``, the CPU of every process it started and waited for included."""
    start, cpu = time.perf_counter(), _cpu()
    run()
    return time.perf_counter() - start, _cpu() - cpu


def _baseline(tmp: Path, lab: str, count: int) -> tuple[tuple[float, float], int]:
    """Stock nbgrader autograde of the submissions, all against one shared cluster."""
    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import start_cluster, stop_cluster

    course = _course(tmp / "baseline", lab)
    (course.root / "nbgrader_config.py").write_text(STOCK_CONFIG.format(timeout=60))
    expected = _submit_all(course, count)
    shared = start_cluster(tmp / "shared")
    env = {**course.env(), "GPULAB_CLUSTER": "kubeconfig", "KUBECONFIG": str(shared.kubeconfig),
           "GPULAB_HOME": str(tmp / "shared-home")}
    try:
        from gpulab.labs import resolve

        try:
            for step in resolve(lab).steps:
                step.apply(shared.client())
        except KeyError:
            pass
        times = _timed(lambda: course.nbgrader("autograde", lab, env=env, timeout=3600))
    finally:
        stop_cluster(shared)
    return times, _wrong(course, expected)


def _gpulab_grade(course, expected: dict[str, float], jobs: int, *args: str) -> tuple[tuple[float, float], int]:
    proc = None

    def run():
        nonlocal proc
        proc = course.gpulab_grade("--jobs", str(jobs), *args, timeout=3600)

    times = _timed(run)
    if proc.returncode != 0:
        raise RuntimeError(f"gpulab grade failed:\n{proc.stdout}\n{proc.stderr[-2000:]}")
    return times, _wrong(course, expected)


def _cluster_cost(tmp: Path, lab: str, rounds: int = 5) -> dict:
    """Mean wall seconds and server CPU seconds of one submission's cluster (start, then remove): forked from the
    fork server as grading does (a copy of the lab's template when the lab has starting steps), and as a fresh
    ``python -m gpulab.embedded`` with the steps applied."""
    from gpulab.cluster.lifecycle import proc_stat
    from gpulab.grading.clusters import build_template, start_cluster
    from gpulab.grading.forkserver import ForkServer

    def server_cpu(pid: int) -> float:
        fields = proc_stat(pid)          # utime and stime, fields 14 and 15 of /proc/PID/stat
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    figures = {}
    forkserver = ForkServer(tmp)
    forkserver.ensure()
    try:
        template = build_template(lab, tmp, forkserver)
        for how, server, copied in (("forked", forkserver, template), ("fresh_process", None, None)):
            walls, cpus = [], []
            for _ in range(rounds):
                start = time.perf_counter()
                cluster = start_cluster(lab, tmp, server, copied)
                cpus.append(server_cpu(cluster.pid))
                cluster.remove()
                walls.append(time.perf_counter() - start)
            figures[how] = {"wall_seconds": round(sum(walls) / rounds, 3),
                            "server_cpu_seconds": round(sum(cpus) / rounds, 3)}
    finally:
        forkserver.stop()
    return figures


def _figures(times: tuple[float, float], count: int, wrong: int) -> dict:
    seconds, cpu = times
    return {"seconds": round(seconds, 1), "per_minute": round(count * 60 / seconds, 2),
            "cpu_seconds": round(cpu, 1), "cpu_seconds_per_submission": round(cpu / count, 2), "wrong_grades": wrong}


RUNS = ("cluster", "baseline", "jobs1", "jobs2")


def main() -> dict:
    lab = os.environ.get("GPULAB_BENCH_LAB", course_tools.FIXTURE_LAB)
    count = int(os.environ.get("GPULAB_BENCH_SUBMISSIONS", "20"))
    runs = {r.strip() for r in os.environ.get("GPULAB_BENCH_RUNS", ",".join(RUNS)).split(",") if r.strip()}
    if runs - set(RUNS):
        raise SystemExit(f"GPULAB_BENCH_RUNS: unknown {sorted(runs - set(RUNS))}; choose from {', '.join(RUNS)}")
    figures: dict = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
                     "load_average_before": [round(x, 2) for x in os.getloadavg()], "lab": lab, "submissions": count}
    times: dict[str, tuple[float, float]] = {}
    tmp = Path(tempfile.mkdtemp(prefix="gpulab-bench-grading-"))
    try:
        if "cluster" in runs:
            figures["cluster_per_submission"] = _cluster_cost(tmp, lab)
            print(f"one submission's cluster: {figures['cluster_per_submission']}", flush=True)
        if "baseline" in runs:
            times["baseline"], wrong = _baseline(tmp, lab, count)
            figures["nbgrader_autograde_shared_cluster"] = _figures(times["baseline"], count, wrong)
            print(f"nbgrader autograde (shared cluster): {times['baseline'][0]:.1f}s, "
                  f"{times['baseline'][1]:.1f} CPU s", flush=True)
        course = _course(tmp / "hermetic", lab)
        expected = _submit_all(course, count)
        for jobs in (1, 2):
            if f"jobs{jobs}" in runs:
                times[f"jobs{jobs}"], wrong = _gpulab_grade(course, expected, jobs, "--force")
                figures[f"gpulab_grade_jobs_{jobs}"] = _figures(times[f"jobs{jobs}"], count, wrong)
                print(f"gpulab grade --jobs {jobs}: {times[f'jobs{jobs}'][0]:.1f}s, "
                      f"{times[f'jobs{jobs}'][1]:.1f} CPU s", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    figures["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    figures["targets"], figures["met"] = {"per_minute": TARGET_PER_MINUTE}, {}
    if "jobs2" in runs:
        figures["met"]["per_minute"] = figures["gpulab_grade_jobs_2"]["per_minute"] >= TARGET_PER_MINUTE
    if {"baseline", "jobs1"} <= runs:
        ratio = times["jobs1"][0] / times["baseline"][0]
        cpu_ratio = times["jobs1"][1] / times["baseline"][1]
        figures["cost_ratio_jobs_1_vs_nbgrader"] = {"wall": round(ratio, 3), "cpu": round(cpu_ratio, 3)}
        figures["cluster_overhead_percent"] = {"wall": round((ratio - 1) * 100, 1),
                                               "cpu": round((cpu_ratio - 1) * 100, 1)}
        figures["targets"]["overhead_percent"] = TARGET_OVERHEAD_PERCENT
        figures["met"]["overhead_percent"] = max(ratio, cpu_ratio) - 1 <= TARGET_OVERHEAD_PERCENT / 100
    return figures


if __name__ == "__main__":
    import json

    print(json.dumps(main(), indent=1))
