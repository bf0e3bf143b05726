"""SchedulingGates (pkg/scheduler/framework/plugins/schedulinggates): pods with ``spec.schedulingGates`` are
held before the queue (PreEnqueue) until every gate is removed. The ``PodScheduled=False`` condition with
reason ``SchedulingGated`` is written by the API server at creation (pkg/registry/core/pod/strategy.go), not
here."""
from __future__ import annotations

from ..interface import PreEnqueuePlugin
from ..status import Status, unresolvable

NAME = "SchedulingGates"


class SchedulingGates(PreEnqueuePlugin):
    NAME = NAME

    def pre_enqueue(self, pod) -> Status | None:
        gates = [g.get("name", "") for g in pod.spec.get("schedulingGates") or ()]
        if not gates:
            return None
        return unresolvable(f"waiting for scheduling gates: [{' '.join(gates)}]", plugin=NAME)
