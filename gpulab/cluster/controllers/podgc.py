"""Pod garbage collection of orphaned pods: pods bound to a node that no longer exists.

Port of ``gcOrphaned`` in pkg/controller/podgc/gc_controller.go (v1.36): once
a node has been gone for the 40 s quarantine, each of its pods gets the
``DisruptionTarget`` condition (reason ``DeletionByPodGC``, "PodGC: node no
longer exists"), phase ``Failed`` unless already terminal, and is deleted
with grace period 0. Unlike upstream's 20 s sweep over every pod, the
controller reacts to node deletions and checks every bound pod once at start.
Terminated-pod thresholds and out-of-service taints are not reproduced.
"""
from __future__ import annotations

from ..errors import ApiError
from ..objects import clone, rfc3339
from .base import Controller
from .workload import MANAGER, is_terminal

COMPONENT = "pod-garbage-collector"
QUARANTINE = 40.0  # quarantineTime


class PodGCController(Controller):
    name = COMPONENT
    watches = ("nodes",)

    def __init__(self, api):
        super().__init__(api)
        self._missing_since: dict[str, float] = {}

    def _on_change(self, key: str):
        def handler(event_type: str, obj: dict, old: dict | None) -> None:
            if event_type == "DELETED":
                self.queue.add(obj["metadata"]["name"])
        return handler

    def initial_keys(self):
        nodes = {n["metadata"]["name"] for n in self.api.store.list("nodes")}
        bound = {(p.get("spec") or {}).get("nodeName") for p in self.api.store.list("pods")}
        return sorted(n for n in bound if n and n not in nodes)

    async def reconcile(self, node_name: str) -> float | None:
        if self.api.store.get("nodes", "", node_name) is not None:
            self._missing_since.pop(node_name, None)
            return None
        now = self.api.clock()
        since = self._missing_since.setdefault(node_name, now)
        if now < since + QUARANTINE:
            return since + QUARANTINE - now
        del self._missing_since[node_name]
        for pod in self.api.store.by_index("pods", "spec.nodeName", node_name):
            self._fail_and_delete(pod, now)
        return None

    def _fail_and_delete(self, pod: dict, now: float) -> None:
        """markFailedAndDeletePodWithCondition."""
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        try:
            if not is_terminal(pod):
                updated = clone(pod)
                status = updated.setdefault("status", {})
                status["phase"] = "Failed"
                status["conditions"] = [c for c in status.get("conditions") or ()
                                        if c.get("type") != "DisruptionTarget"]
                status["conditions"].append({"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                                             "lastTransitionTime": rfc3339(now), "reason": "DeletionByPodGC",
                                             "message": "PodGC: node no longer exists"})
                self.api.update("pods", updated, ns, subresource="status", manager=MANAGER)
            self.api.delete("pods", name, ns, grace_period_seconds=0)
        except ApiError as exc:
            if exc.code != 404:
                raise
