"""Lab 05, gang scheduling: reading the deadlock, installing coscheduling, finishing both jobs as gangs."""
from __future__ import annotations

import re

from ..learner.reader import established
from .answers import as_int
from .kube import condition, is_running, owned_by, phase
from .registry import check
from .result import Result, failed, passed

NAMESPACE = "default"
JOBS = ("train-a", "train-b")
PODGROUP_CRD = "podgroups.scheduling.x-k8s.io"
PODGROUPS = ("scheduling.x-k8s.io", "v1alpha1", "podgroups")
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
SECOND_SCHEDULER = "scheduler-plugins-scheduler"
RESET = "`gpulab lab reset lab05-gang-scheduling` recreates the deadlock"


def job_pods(cluster, job: dict) -> list[dict]:
    uid = job["metadata"]["uid"]
    return [p for p in cluster.pods(NAMESPACE) if owned_by(p, uid)]


def _counts(cluster, job: dict) -> tuple[int, int]:
    """(Running, Pending) pods of a job."""
    pods = job_pods(cluster, job)
    return sum(is_running(p) for p in pods), sum(phase(p) == "Pending" for p in pods)


def parse_counts(answer) -> dict[str, int] | None:
    """The learner's Running counts per job: a dict by job name, two numbers (train-a first), or one for both."""
    if isinstance(answer, dict):
        counts = {str(k).strip(): as_int(v) for k, v in answer.items()}
        if set(counts) != set(JOBS) or None in counts.values():
            return None
        return counts
    if isinstance(answer, (list, tuple)):
        numbers = [as_int(v) for v in answer]
    else:
        single = as_int(answer)
        numbers = [single] if single is not None else [int(n) for n in re.findall(r"\d+", str(answer))]
    if None in numbers or len(numbers) not in (1, 2):
        return None
    return dict(zip(JOBS, numbers * 2 if len(numbers) == 1 else numbers))


@check("lab05.deadlock_explained", "answer: how many of each job's pods are Running in the deadlock",
       answer="running_in_deadlock")
def deadlock_explained(cluster, answer) -> Result:
    jobs = {j: cluster.job(j, NAMESPACE) for j in JOBS}
    missing = [j for j, job in jobs.items() if job is None]
    if missing:
        return failed(f"there is no Job {missing[0]} in namespace {NAMESPACE}, so no deadlock to read", RESET)
    counts = {j: _counts(cluster, job) for j, job in jobs.items()}
    if not all(pending and running < (job["spec"].get("parallelism") or 1)
               for (running, pending), job in zip(counts.values(), jobs.values())):
        return failed("train-a and train-b are not deadlocked now: each must have pods Running and pods Pending",
                      RESET)
    given = parse_counts(answer)
    hint = ("count each job's Running pods: `kubectl get pods -l job-name=train-a` (and train-b); the answer is "
            "a dict such as {'train-a': N, 'train-b': M}")
    if given is None:
        return failed(f"{answer!r} does not give a number of Running pods for each job", hint)
    for job_name, (running, _) in counts.items():
        if given[job_name] != running:
            parallelism = jobs[job_name]["spec"].get("parallelism") or 1
            if given[job_name] == parallelism:
                return failed(f"{given[job_name]} is how many pods {job_name} wants to run at once, not how many "
                              "run", hint)
            return failed(f"{job_name} does not have {given[job_name]} Running pods", hint)
    detail = " and ".join(f"{j} has {r} of {jobs[j]['spec'].get('parallelism') or 1} Running" for j, (r, _) in
                          counts.items())
    return passed(f"right: {detail}; each holds GPUs the other needs, so neither can start")


@check("lab05.coscheduling_installed", "PodGroup CRD served and the second scheduler running")
def coscheduling_installed(cluster) -> Result:
    hint = ("`gpulab install coscheduling` installs it here (on a real cluster, scheduler-plugins' Helm chart "
            "as-a-second-scheduler)")
    if not established(cluster.crd(PODGROUP_CRD)):
        return failed(f"the PodGroup CRD ({PODGROUP_CRD}) is not served, so PodGroups cannot exist", hint)
    schedulers = [d for d in cluster.deployments() if d["metadata"]["name"] == SECOND_SCHEDULER]
    if not schedulers:
        return failed(f"there is no second scheduler: no Deployment {SECOND_SCHEDULER} in any namespace", hint)
    ready = [d for d in schedulers if ((d.get("status") or {}).get("readyReplicas") or 0) >= 1]
    if not ready:
        where = schedulers[0]["metadata"]["namespace"]
        return failed(f"Deployment {where}/{SECOND_SCHEDULER} has no ready replica yet",
                      f"wait: `kubectl rollout status -n {where} deployment/{SECOND_SCHEDULER}`")
    return passed(f"PodGroup CRD served and {SECOND_SCHEDULER} running in namespace "
                  f"{ready[0]['metadata']['namespace']}")


def _gang_problem(cluster, job_name: str, job: dict | None) -> str | None:
    if job is None:
        return f"there is no Job {job_name} in namespace {NAMESPACE}"
    template = (job.get("spec") or {}).get("template") or {}
    group = ((template.get("metadata") or {}).get("labels") or {}).get(POD_GROUP_LABEL)
    if not group:
        return f"{job_name}'s pods carry no {POD_GROUP_LABEL} label, so they are not a gang"
    scheduler = (template.get("spec") or {}).get("schedulerName") or "default-scheduler"
    if scheduler != SECOND_SCHEDULER:
        return f"{job_name}'s pods are scheduled by {scheduler}, which does not know PodGroups"
    podgroup = cluster.custom_object(*PODGROUPS, group, NAMESPACE)
    if podgroup is None:
        return f"{job_name}'s pods name PodGroup {group}, which does not exist in namespace {NAMESPACE}"
    min_member = int((podgroup.get("spec") or {}).get("minMember") or 0)
    parallelism = job["spec"].get("parallelism") or 1
    if min_member < parallelism:
        return (f"PodGroup {group} has minMember {min_member}, but {job_name} runs {parallelism} pods that must "
                "start together")
    failed_condition = condition(job, "Failed")
    if failed_condition and failed_condition.get("status") == "True":
        return f"Job {job_name} failed: {failed_condition.get('message') or failed_condition.get('reason')}"
    complete = condition(job, "Complete")
    if not (complete and complete.get("status") == "True"):
        status = job.get("status") or {}
        return (f"Job {job_name} is not Complete yet ({status.get('succeeded') or 0} of "
                f"{job['spec'].get('completions') or 1} pods succeeded)")
    return None


@check("lab05.gang_jobs_complete", "jobs train-a and train-b, each a PodGroup gang, both Complete")
def gang_jobs_complete(cluster) -> Result:
    for job_name in JOBS:
        problem = _gang_problem(cluster, job_name, cluster.job(job_name, NAMESPACE))
        if problem:
            return failed(problem, "each job's pod template needs the pod-group label naming its PodGroup, whose "
                                   "minMember covers all the job's workers, and the second scheduler's "
                                   "schedulerName")
    return passed("train-a and train-b are both Complete, each scheduled as a gang by " + SECOND_SCHEDULER)
