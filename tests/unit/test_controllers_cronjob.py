"""The CronJob controller on a simulated clock: Jobs at each activation, concurrency policies, history limits,
missed deadlines."""
from __future__ import annotations

from controller_sim import START, SimCluster, simulated

from gpulab.cluster.controllers.cronjob import CronJobController
from gpulab.cluster.controllers.job import JobController
from gpulab.cluster.objects import rfc3339

CJ, JOBS = "cronjobs.batch", "jobs.batch"
MINUTE = 60


def cronjob(name: str, schedule: str = "* * * * *", **spec) -> dict:
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
            "spec": {"schedule": schedule, "jobTemplate": {"metadata": {"labels": {"team": "a"}}, "spec": {
                "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}},
                     **spec}}


async def tick(sim: SimCluster, seconds: float) -> None:
    sim.advance(seconds)
    sim.resync()
    await sim.kubelet()


def job_names(sim: SimCluster) -> list[str]:
    return sorted(j["metadata"]["name"] for j in sim.api.list(JOBS, "default"))


async def finish_jobs(sim: SimCluster) -> None:
    for pod in sim.pods():
        if pod["status"].get("phase") == "Running":
            sim.set_phase(pod, "Succeeded", exit_code=0)
    sim.advance(1)
    await sim.kubelet()


@simulated
async def test_a_job_per_activation_named_by_the_minute(sim):
    sim.start(CronJobController(sim.api), JobController(sim.api))
    sim.api.create(CJ, cronjob("every"), "default")
    await sim.kubelet()
    assert job_names(sim) == []  # the first activation comes after creation
    await tick(sim, MINUTE)
    scheduled = (int(START) // MINUTE + 1) * MINUTE
    assert job_names(sim) == [f"every-{scheduled // MINUTE}"]
    job = sim.api.get(JOBS, f"every-{scheduled // MINUTE}", "default")
    assert job["metadata"]["labels"]["team"] == "a"
    assert job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] == rfc3339(scheduled)
    assert job["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    status = sim.api.get(CJ, "every", "default")["status"]
    assert status["lastScheduleTime"] == rfc3339(scheduled) and len(status["active"]) == 1
    assert ("SuccessfulCreate", f"Created job every-{scheduled // MINUTE}") in sim.events(kind="CronJob")
    await finish_jobs(sim)
    status = sim.api.get(CJ, "every", "default")["status"]
    assert "active" not in status and status["lastSuccessfulTime"]
    assert ("SawCompletedJob", f"Saw completed job: every-{scheduled // MINUTE}, condition: Complete") in \
        sim.events(kind="CronJob")


@simulated
async def test_forbid_skips_while_a_job_runs_and_replace_replaces_it(sim):
    sim.start(CronJobController(sim.api), JobController(sim.api))
    sim.api.create(CJ, cronjob("forbid", concurrencyPolicy="Forbid"), "default")
    sim.api.create(CJ, cronjob("replace", concurrencyPolicy="Replace"), "default")
    await tick(sim, MINUTE)
    await tick(sim, MINUTE)
    names = job_names(sim)
    assert len([n for n in names if n.startswith("forbid-")]) == 1
    assert ("JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is "
                                "Forbid") in sim.events(name="forbid")
    replaced = [e for e in sim.events(name="replace") if e[0] == "SuccessfulDelete"]
    assert len(replaced) == 1
    active = sim.api.get(CJ, "replace", "default")["status"]["active"]
    assert len(active) == 1 and active[0]["name"] == max(n for n in names if n.startswith("replace-"))


@simulated
async def test_history_limits_and_a_missed_deadline(sim):
    sim.start(CronJobController(sim.api), JobController(sim.api))
    sim.api.create(CJ, cronjob("keep", successfulJobsHistoryLimit=1), "default")
    for _ in range(3):
        await tick(sim, MINUTE)
        await finish_jobs(sim)
    await tick(sim, 1)
    assert len([n for n in job_names(sim) if n.startswith("keep-")]) == 1
    sim.api.create(CJ, cronjob("late", startingDeadlineSeconds=10, suspend=True), "default")
    await tick(sim, MINUTE)
    cj = sim.api.get(CJ, "late", "default")
    cj["spec"]["suspend"] = False
    sim.api.update(CJ, cj, "default")
    await tick(sim, 30)  # 30 s after the activation: past its 10 s deadline
    assert not [n for n in job_names(sim) if n.startswith("late-")]
