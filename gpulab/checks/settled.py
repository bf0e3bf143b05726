"""Whether what a check reads is still changing: a check judges a settled cluster, or says it is not settled yet.

A learner's change reaches the GPU stack's state in steps (the operator rewrites
a DaemonSet, its pods restart one node at a time, GFD relabels, the device plugin
registers again, the MIG manager repartitions), and a check that reads in between
judges something that is about to change: it may pass a configuration the grader
then fails a second later, or fail one that is about to pass. So a check that reads
reconciled state waits, a bounded time, until the stack has settled
(:func:`gpulab.learner.conditions.clusterpolicy_settled`, the wait the course's
cells use), and judges then; if it does not settle in that time it says so and
never passes. The time it waits is counted from the last change it saw, not from
its start: on a loaded machine (a workshop host, a grading run with more jobs
than cores) a device plugin may restart again and again for longer than a quiet
machine needs, and a check that gave up while the stack was still getting there
would turn a correct answer into a failed cell. Only a stack that has stopped
changing without settling, or one still changing after ``SETTLE_LIMIT_SECONDS``,
is reported as not settled.

A stack that is stuck is settled too: an operand crash-looping, or a device plugin
that refused its config (its ``DevicePluginFailed`` event), changes no further
without the learner, so the check judges it and names the mistake.
"""
from __future__ import annotations

import os

from ..learner.conditions import clusterpolicy_settled
from .result import Result, failed

# How long a check waits for the stack to change again before it calls it stalled and not settled.
SETTLE_SECONDS = float(os.environ.get("GPULAB_SETTLE_SECONDS", "20"))
# The longest a check waits for a stack that keeps changing: within the 120 s a cell may run (Validate and grading,
# gpulab/learner/jupyter/nbgrader_config.py), and below the grader's recheck timeout (grader/nbgrader_config.py).
SETTLE_LIMIT_SECONDS = 90.0
POLL_SECONDS = 0.5
# Settled twice, this far apart: the components react to a change by watching it, so a change made just before
# the check (a label, a patch) has started to show by the second read.
QUIET_SECONDS = 0.5
CLUSTERPOLICY = ("nvidia.com", "v1", "clusterpolicies")
PLUGIN_FAILED = "DevicePluginFailed"


def gpu_stack_settling(cluster) -> str | None:
    """What the GPU stack is still doing (None: settled, stuck, or no GPU Operator to wait for)."""
    policies = cluster.custom_objects(*CLUSTERPOLICY)
    if not policies:
        return None
    settled, detail = clusterpolicy_settled(cluster)
    if settled or _stuck(cluster, (policies[0].get("status") or {}).get("namespace")):
        return None
    return f"the ClusterPolicy is {detail}"


def _stuck(cluster, namespace: str | None) -> bool:
    """An operand that will not change without the learner: crash-looping, or a device plugin that failed."""
    if not namespace:
        return False
    pods = cluster.pods(namespace)
    if any(_crash_looping(pod) for pod in pods):
        return True
    current = {(p.get("metadata") or {}).get("uid") for p in pods}
    return any(((e.get("involvedObject") or {}).get("uid") in current)
               for e in cluster.events(namespace, field_selector=f"reason={PLUGIN_FAILED}"))


def _crash_looping(pod: dict) -> bool:
    """A container or init container restarting in back-off (kubectl: ``CrashLoopBackOff``, ``Init:...``)."""
    status = pod.get("status") or {}
    return any(((c.get("state") or {}).get("waiting") or {}).get("reason") == "CrashLoopBackOff"
               for c in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []))


def not_settled(detail: str) -> Result:
    return failed(f"not settled yet: {detail}; this check judges the cluster once it has settled, run it again",
                  "the last change is still being applied; wait for it (the exercise says how) and run the check "
                  "again")
