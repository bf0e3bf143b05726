"""The Job controller (and TTL after finished): completion, backoff limit, deadline, finalizers."""
from __future__ import annotations

from controller_sim import START, SimCluster, simulated

from gpulab.cluster.controllers.job import JobController
from gpulab.cluster.controllers.ttlafterfinished import TTLAfterFinishedController
from gpulab.cluster.objects import rfc3339

JOB = "jobs.batch"
FINALIZER = "batch.kubernetes.io/job-tracking"


def job(name: str, restart: str = "Never", **spec) -> dict:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"template": {"spec": {"restartPolicy": restart,
                                           "containers": [{"name": "c", "image": "busybox"}]}}, **spec}}


def conditions(sim: SimCluster, name: str) -> list[tuple[str, str, str, str]]:
    return [(c["type"], c["status"], c.get("reason", ""), c.get("message", ""))
            for c in sim.api.get(JOB, name, "default")["status"].get("conditions") or ()]


async def finish_running(sim: SimCluster, name: str, phase: str) -> None:
    await sim.kubelet()
    for pod in sim.pods(**{"job-name": name}):
        if pod["status"]["phase"] == "Running":
            sim.set_phase(pod, phase, exit_code=0 if phase == "Succeeded" else 1)
    sim.advance(1)
    await sim.kubelet()


@simulated
async def test_job_runs_to_completion(sim):
    sim.start(JobController(sim.api))
    created = sim.api.create(JOB, job("pi", completions=2), "default")
    await sim.kubelet()
    (pod,) = sim.pods(**{"job-name": "pi"})
    assert pod["metadata"]["finalizers"] == [FINALIZER]
    assert pod["metadata"]["name"].startswith("pi-")
    assert pod["metadata"]["labels"]["batch.kubernetes.io/controller-uid"] == created["metadata"]["uid"]
    status = sim.api.get(JOB, "pi", "default")["status"]
    assert status == {"startTime": rfc3339(START), "active": 1, "ready": 1, "terminating": 0,
                      "uncountedTerminatedPods": {}}

    await finish_running(sim, "pi", "Succeeded")
    assert sim.api.get(JOB, "pi", "default")["status"]["succeeded"] == 1
    await finish_running(sim, "pi", "Succeeded")
    status = sim.api.get(JOB, "pi", "default")["status"]
    assert conditions(sim, "pi") == [
        ("SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods"),
        ("Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods")]
    assert status["succeeded"] == 2 and "active" not in status and status["ready"] == 0
    assert status["completionTime"] == rfc3339(sim.now)
    assert status["uncountedTerminatedPods"] == {}
    assert all(not p["metadata"].get("finalizers") for p in sim.pods())
    events = sim.events(kind="Job")
    assert events[-1] == ("Completed", "Job completed")
    assert [r for r, _ in events].count("SuccessfulCreate") == 2


@simulated
async def test_job_fails_with_backoff_limit_exceeded(sim):
    sim.start(JobController(sim.api))
    sim.api.create(JOB, job("bad", backoffLimit=1), "default")
    await finish_running(sim, "bad", "Failed")
    assert sim.api.get(JOB, "bad", "default")["status"]["failed"] == 1
    assert not conditions(sim, "bad")
    # The replacement waits out the 10 s pod-failure backoff.
    assert len(sim.pods(**{"job-name": "bad"})) == 1
    sim.advance(10)
    sim.resync()
    await finish_running(sim, "bad", "Failed")
    status = sim.api.get(JOB, "bad", "default")["status"]
    assert status["failed"] == 2 and "completionTime" not in status
    assert conditions(sim, "bad") == [
        ("FailureTarget", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
        ("Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit")]
    assert sim.events(kind="Job")[-1] == ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
    assert all(not p["metadata"].get("finalizers") for p in sim.pods())


@simulated
async def test_restart_policy_on_failure_counts_container_restarts(sim):
    sim.start(JobController(sim.api))
    sim.api.create(JOB, job("flaky", restart="OnFailure", backoffLimit=2), "default")
    await sim.kubelet()
    (pod,) = sim.pods(**{"job-name": "flaky"})
    sim.set_phase(pod, "Running", ready=False, restarts=2)
    await sim.kubelet()
    assert conditions(sim, "flaky")[0][:3] == ("FailureTarget", "True", "BackoffLimitExceeded")
    # The running pod is deleted; Failed waits until it has terminated.
    assert [c[0] for c in conditions(sim, "flaky")] == ["FailureTarget", "Failed"]
    assert sim.api.get(JOB, "flaky", "default")["status"]["failed"] == 1


@simulated
async def test_active_deadline_exceeded_deletes_the_pods(sim):
    sim.start(JobController(sim.api))
    sim.api.create(JOB, job("slow", activeDeadlineSeconds=30), "default")
    await sim.kubelet(rounds=2)
    sim.advance(30)
    sim.resync()
    await sim.settle()
    assert conditions(sim, "slow") == [
        ("FailureTarget", "True", "DeadlineExceeded", "Job was active longer than specified deadline")]
    status = sim.api.get(JOB, "slow", "default")["status"]
    assert status["terminating"] == 1 and "active" not in status
    assert [r for r, _ in sim.events(kind="Job")] == ["SuccessfulCreate", "SuccessfulDelete"]
    sim.confirm_deletions()
    await sim.settle()
    assert [c[0] for c in conditions(sim, "slow")] == ["FailureTarget", "Failed"]
    assert sim.events(kind="Job")[-1] == ("DeadlineExceeded", "Job was active longer than specified deadline")


@simulated
async def test_parallelism_without_completions_finishes_on_first_success(sim):
    sim.start(JobController(sim.api))
    sim.api.create(JOB, job("work", parallelism=3), "default")
    await sim.kubelet()
    assert sim.api.get(JOB, "work", "default")["status"]["active"] == 3
    first = sim.pods(**{"job-name": "work"})[0]
    sim.set_phase(first, "Succeeded", exit_code=0)
    await sim.kubelet()
    assert not conditions(sim, "work")  # the others still run
    await finish_running(sim, "work", "Succeeded")
    assert [c[0] for c in conditions(sim, "work")] == ["SuccessCriteriaMet", "Complete"]
    assert sim.api.get(JOB, "work", "default")["status"]["succeeded"] == 3


@simulated
async def test_ttl_after_finished_deletes_the_job(sim):
    sim.start(JobController(sim.api), TTLAfterFinishedController(sim.api))
    sim.api.create(JOB, job("once", ttlSecondsAfterFinished=100), "default")
    await finish_running(sim, "once", "Succeeded")
    assert sim.api.try_get(JOB, "once", "default") is not None
    sim.advance(101)
    sim.resync()
    await sim.settle()
    gone = sim.api.try_get(JOB, "once", "default")
    assert gone is None or gone["metadata"].get("deletionTimestamp")


@simulated
async def test_deleted_job_releases_its_pods_finalizers(sim):
    sim.start(JobController(sim.api))
    sim.api.create(JOB, job("gone"), "default")
    await sim.kubelet()
    (pod,) = sim.pods(**{"job-name": "gone"})
    assert pod["metadata"]["finalizers"] == [FINALIZER]
    sim.api.delete(JOB, "gone", "default")
    sim.api.delete("pods", pod["metadata"]["name"], "default")  # what the garbage collector does next
    await sim.settle()
    sim.confirm_deletions()
    assert sim.pods(**{"job-name": "gone"}) == []
