"""Each lab's starting state, as data: the steps that build it on a fresh cluster (docs/course-plan.md)."""
from __future__ import annotations

from dataclasses import dataclass

from ..checks.registry import LABS as CHECK_LABS
from .steps import DeadlockedJobs, DraDriver, DraPool, GpuOperator, GpuTaint, PendingPod, PoolLabels

PINNED = ("driver.version=580.105.08",)


@dataclass(frozen=True)
class Lab:
    name: str                   # the lab's directory: solutions/<name>/, labs/<name>/
    title: str
    steps: tuple = ()
    varies: bool = False        # its cluster's GPUs are the learner's variant (:mod:`.variant`)

    @property
    def short(self) -> str:
        """``lab03`` for ``lab03-h100-pod``: the prefix of its check ids."""
        return next(prefix for prefix, lab in CHECK_LABS.items() if lab == self.name)


LABS = (
    Lab("00-setup", "Setup: connect to a cluster"),
    Lab("lab01-gpu-operator", "The GPU Operator"),
    Lab("lab02-node-pools", "Node pools: labels, taints, tolerations", (GpuOperator(PINNED),)),
    Lab("lab03-h100-pod", "The H100 pod",
        (GpuOperator(PINNED), PoolLabels(), GpuTaint(), PendingPod("stuck-worker.yaml"))),
    Lab("lab04-sharing", "Sharing a GPU: MIG and time-slicing", (GpuOperator((*PINNED, "mig.strategy=mixed")),)),
    Lab("lab05-gang-scheduling", "Gang scheduling", (GpuOperator(PINNED), DeadlockedJobs("deadlocked-jobs.yaml"))),
    Lab("lab06-dra", "Asking for GPUs by what they are (DRA)",
        (GpuOperator(PINNED), DraPool(), DraDriver(), PendingPod("too-big.yaml", namespace="team-a"))),
    Lab("final-assessment", "Final assessment", (GpuOperator(PINNED),), varies=True),
)
