"""PrioritySort (pkg/scheduler/framework/plugins/queuesort/priority_sort.go): higher priority first, then the
pod that entered the queue first (``QueuedPodInfo.Timestamp``)."""
from __future__ import annotations

from ..interface import QueueSortPlugin

NAME = "PrioritySort"


class PrioritySort(QueueSortPlugin):
    NAME = NAME

    def sort_key(self, qpi) -> tuple:
        return (-qpi.info.priority, qpi.timestamp, qpi.seq)
