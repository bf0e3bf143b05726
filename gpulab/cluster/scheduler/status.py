"""Plugin statuses and the scheduler's user-visible failure messages.

A port of the parts of kube-scheduler that turn plugin verdicts into the text
a learner reads in ``kubectl describe pod``: ``fwk.Status`` codes and reasons
(staging/src/k8s.io/kube-scheduler/framework/interface.go), ``FitError.Error()``
(pkg/scheduler/framework/types.go: ``0/N nodes are available: ...``),
``truncateMessage`` (pkg/scheduler/schedule_one.go, 1024 characters as
``validation.NoteLengthLimit``).
"""
from __future__ import annotations

from dataclasses import dataclass

SUCCESS = 0
ERROR = 1
UNSCHEDULABLE = 2
UNSCHEDULABLE_AND_UNRESOLVABLE = 3
WAIT = 4  # Permit: hold the pod
SKIP = 5  # PreFilter/PreScore: the plugin's Filter/Score does not apply to this pod

NO_NODE_AVAILABLE = "0/{} nodes are available"
NO_NODES_AVAILABLE_ERROR = "no nodes available to schedule pods"  # schedule_one.go ErrNoNodesAvailable
NOTE_LENGTH_LIMIT = 1024


@dataclass(frozen=True, slots=True)
class Status:
    """A plugin's verdict (fwk.Status): the code, the reasons (several for NodeResourcesFit, one for most
    plugins) and the plugin that gave it. Plugins return None for Success."""

    code: int
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def message(self) -> str:
        """Status.Message(): the reasons joined by ``, ``."""
        return ", ".join(self.reasons)

    @property
    def rejected(self) -> bool:
        return self.code in (UNSCHEDULABLE, UNSCHEDULABLE_AND_UNRESOLVABLE)


def unschedulable(*reasons: str, plugin: str = "") -> Status:
    return Status(UNSCHEDULABLE, tuple(reasons), plugin)


def unresolvable(*reasons: str, plugin: str = "") -> Status:
    return Status(UNSCHEDULABLE_AND_UNRESOLVABLE, tuple(reasons), plugin)


SKIP_STATUS = Status(SKIP)


def fit_error_message(num_nodes: int, reason_counts: dict[str, int], pre_filter_msg: str = "",
                      post_filter_msg: str = "") -> str:
    """FitError.Error(): ``0/N nodes are available: <prefilter>. <counted reasons sorted as strings>. <postfilter>``."""
    msg = NO_NODE_AVAILABLE.format(num_nodes) + ":"
    if pre_filter_msg:
        msg += f" {pre_filter_msg}."
    else:
        histogram = sorted(f"{count} {reason}" for reason, count in reason_counts.items())
        if histogram:
            msg += f" {', '.join(histogram)}."
    if post_filter_msg:
        msg += f" {post_filter_msg}"
    return msg


def truncate_message(message: str) -> str:
    """truncateMessage: events carry at most 1024 characters, cut with `` ...``."""
    if len(message) <= NOTE_LENGTH_LIMIT:
        return message
    suffix = " ..."
    return message[:NOTE_LENGTH_LIMIT - len(suffix)] + suffix

