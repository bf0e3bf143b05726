"""The DefaultPreemption plugin (plugins/defaultpreemption/default_preemption.go ``PostFilter``) and the
execution of its choice (framework/preemption/executor.go ``prepareCandidate``).

On success the victims are evicted: a pod held at Permit is rejected
(``preempted``), any other gets the ``DisruptionTarget`` condition and a
graceful delete; each gets a Normal ``Preempted`` event; pods of lower
priority nominated to the same node lose their nomination. The preemptor is
nominated to the node by the caller (``PostFilterResult``).
"""
from __future__ import annotations

import logging

from ....errors import ApiError
from ...interface import PostFilterPlugin, PostFilterResult
from ...status import SUCCESS
from . import evaluator
from .rules import NAME, REASON_PREEMPTION_BY_SCHEDULER, wrap_message

log = logging.getLogger("gpulab.scheduler")


class DefaultPreemption(PostFilterPlugin):
    NAME = NAME

    def post_filter(self, state, pod, diagnosis) -> PostFilterResult:
        handle = self.handle
        outcome = evaluator.preempt(handle.framework, state, pod, diagnosis, self._pdbs(), handle.clock())
        if outcome.status.code != SUCCESS:
            return PostFilterResult(wrap_message(outcome.status), outcome.nominated_node)
        self._execute(pod, outcome)
        return PostFilterResult(None, outcome.nominated_node)

    def _pdbs(self) -> list[dict]:
        try:
            return self.handle.api.list("poddisruptionbudgets.policy")
        except ApiError:
            return []

    def _execute(self, preemptor, outcome: evaluator.Outcome) -> None:
        handle, node = self.handle, outcome.nominated_node
        for victim in outcome.victims:
            if victim.deleting:
                continue
            if handle.waiting_pod(victim.uid) is not None:
                handle.reject_waiting_pod(victim.uid, NAME, "preempted")
            else:
                condition = {"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                             "reason": REASON_PREEMPTION_BY_SCHEDULER,
                             "message": f"{victim.scheduler_name}: preempting to accommodate a higher priority pod"}
                handle.set_pod_status(victim.pod, condition, None)
                try:
                    handle.api.delete("pods", victim.name, victim.namespace)
                except ApiError as exc:
                    if exc.code != 404:
                        log.warning("preempting %s: %s", victim.key, exc)
                    continue
            handle.api.record_event(victim.pod, "Normal", "Preempted",
                                    f"Preempted by pod {preemptor.uid} on node {node}", handle.profile_name,
                                    action="Preempting")
        for other in list(handle.cache.nominated.get(node, {}).values()):
            if other.priority < preemptor.priority:
                handle.set_pod_status(other.pod, None, "")
