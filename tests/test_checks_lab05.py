"""Lab 05's checks on a live cluster: the deadlock built by the lab's own step, coscheduling, gangs that finish."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml
from kubernetes import client

from gpulab.labs.steps import DeadlockedJobs
from tests.conftest import stop_cluster
from tests.test_checks_common import FakeGpuStack, eventually, run, start_plain_cluster


GANG_JOB = """apiVersion: batch/v1
kind: Job
metadata: {{name: {job}}}
spec:
  parallelism: 4
  completions: 4
  template:
    metadata:
      labels: {labels}
    spec:
      {scheduler}
      restartPolicy: Never
      terminationGracePeriodSeconds: 0
      nodeSelector: {{nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}}
      containers:
      - name: worker
        image: docker.io/library/busybox:1.37
        command: [sh, -c, "echo training; sleep 1"]
        resources: {{limits: {{nvidia.com/gpu: "2"}}}}
"""
POD_GROUP = """apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {{name: {name}}}
spec: {{minMember: {min_member}}}
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory, engine):
    cluster = start_plain_cluster(tmp_path_factory.mktemp("lab05"), engine)
    stack = FakeGpuStack(cluster)
    stack.operator()
    stack.standard()
    with stack.device_plugin():
        yield stack
    stop_cluster(cluster)


def clear_jobs(stack) -> None:
    stack.cluster.kubectl("delete", "jobs", "train-a", "train-b", "--ignore-not-found", "--cascade=orphan")
    stack.cluster.kubectl("delete", "pods", "-l", "batch.kubernetes.io/job-name in (train-a,train-b)",
                          "--grace-period=0", "--force")                    # the deadlocked workers ignore SIGTERM
    stack.cluster.kubectl("delete", "podgroups", "--all", "--ignore-not-found", check=False)   # CRD maybe absent
    assert eventually(lambda: not stack.core.list_namespaced_pod("default").items)


def lab_start(stack) -> None:
    """The lab's starting state, built by the lab's own step as `gpulab lab reset` builds it."""
    clear_jobs(stack)
    DeadlockedJobs("deadlocked-jobs.yaml").apply(stack.api)


def test_deadlock_explained(stack):
    clear_jobs(stack)
    assert run(stack, "lab05.deadlock_explained", 2).reason == (
        "there is no Job train-a in namespace default, so no deadlock to read")

    lab_start(stack)
    for answer in ({"train-a": 2, "train-b": 2}, (2, 2), [2, "2"], 2, "2", "2 and 2"):
        result = run(stack, "lab05.deadlock_explained", answer)
        assert result.passed, (answer, result)
        assert result.reason == ("right: train-a has 2 of 4 Running and train-b has 2 of 4 Running; each holds GPUs "
                                 "the other needs, so neither can start")
    wrong = {
        4: "4 is how many pods train-a wants to run at once, not how many run",
        3: "train-a does not have 3 Running pods",
        (2, 0): "train-b does not have 0 Running pods",
        "none": "'none' does not give a number of Running pods for each job",
    }
    for answer, reason in wrong.items():
        result = run(stack, "lab05.deadlock_explained", answer)
        assert not result.passed and result.reason == reason, answer


def _jobs(stack, *, labels: dict | None, scheduler: str | None, groups: dict[str, int]) -> None:
    clear_jobs(stack)
    for name, min_member in groups.items():
        stack.cluster.kubectl("apply", "-f", "-", input=POD_GROUP.format(name=name, min_member=min_member))
    for job in ("train-a", "train-b"):
        job_labels = {k: v.format(job=job) for k, v in (labels or {"app": "trainer"}).items()}
        stack.cluster.kubectl("apply", "-f", "-", input=GANG_JOB.format(
            job=job, labels=job_labels, scheduler=f"schedulerName: {scheduler}" if scheduler else ""))


def test_coscheduling_installed_then_gang_jobs_complete(stack):
    """One test for both: only it installs coscheduling, so it alone knows the CRD was not there before."""
    lab_start(stack)
    assert run(stack, "lab05.gang_jobs_complete").reason == (
        "train-a's pods carry no scheduling.x-k8s.io/pod-group label, so they are not a gang")
    assert run(stack, "lab05.coscheduling_installed").reason == (
        "the PodGroup CRD (podgroups.scheduling.x-k8s.io) is not served, so PodGroups cannot exist")

    from gpulab.addons.coscheduling import podgroup_crd

    stack.cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(podgroup_crd()))   # the CRD alone
    stack.cluster.kubectl("wait", "--for=condition=Established", "crd/podgroups.scheduling.x-k8s.io")
    assert run(stack, "lab05.coscheduling_installed").reason == (
        "there is no second scheduler: no Deployment scheduler-plugins-scheduler in any namespace")

    def install():
        return subprocess.run([sys.executable, "-m", "gpulab.cli", "install", "coscheduling", "--no-wait",
                               "--kubeconfig", str(stack.cluster.kubeconfig)], capture_output=True, text=True,
                              env={**os.environ, "GPULAB_HOME": str(stack.cluster.home)}, timeout=120)

    proc = install()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("NAME: scheduler-plugins\nLAST DEPLOYED: ")
    assert proc.stdout.endswith("NAMESPACE: scheduler-plugins\nSTATUS: deployed\nREVISION: 1\nTEST SUITE: None\n")
    again = install()
    assert (again.returncode, again.stdout, again.stderr) == (
        1, "", "Error: INSTALLATION FAILED: cannot re-use a name that is still in use\n")
    deployments = client.AppsV1Api(stack.api).list_namespaced_deployment("scheduler-plugins").items
    assert {d.metadata.name for d in deployments} == {"scheduler-plugins-scheduler", "scheduler-plugins-controller"}
    config_map = stack.core.read_namespaced_config_map("scheduler-config", "scheduler-plugins")
    assert "- schedulerName: scheduler-plugins-scheduler\n" in config_map.data["scheduler-config.yaml"]
    eventually(lambda: run(stack, "lab05.coscheduling_installed").passed)
    result = run(stack, "lab05.coscheduling_installed")
    assert result.passed, result
    assert result.reason == ("PodGroup CRD served and scheduler-plugins-scheduler running in namespace "
                             "scheduler-plugins")

    gang = {"scheduling.x-k8s.io/pod-group": "{job}"}
    _jobs(stack, labels=gang, scheduler=None, groups={"train-a": 4, "train-b": 4})
    assert run(stack, "lab05.gang_jobs_complete").reason == (
        "train-a's pods are scheduled by default-scheduler, which does not know PodGroups")

    _jobs(stack, labels={"scheduling.x-k8s.io/pod-group": "pg-{job}"}, scheduler="scheduler-plugins-scheduler",
          groups={})
    assert run(stack, "lab05.gang_jobs_complete").reason == (
        "train-a's pods name PodGroup pg-train-a, which does not exist in namespace default")

    _jobs(stack, labels=gang, scheduler="scheduler-plugins-scheduler", groups={"train-a": 1, "train-b": 4})
    assert run(stack, "lab05.gang_jobs_complete").reason == (
        "PodGroup train-a has minMember 1, but train-a runs 4 pods that must start together")

    _jobs(stack, labels=gang, scheduler="scheduler-plugins-scheduler", groups={"train-a": 4, "train-b": 4})
    reason = run(stack, "lab05.gang_jobs_complete").reason
    assert reason.startswith("Job train-a is not Complete yet (") and reason.endswith(" of 4 pods succeeded)")
    eventually(lambda: run(stack, "lab05.gang_jobs_complete").passed, timeout=60)
    result = run(stack, "lab05.gang_jobs_complete")
    assert result.passed, result
    assert result.reason == ("train-a and train-b are both Complete, each scheduled as a gang by "
                             "scheduler-plugins-scheduler")
