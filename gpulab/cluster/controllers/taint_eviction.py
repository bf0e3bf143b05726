"""NoExecute taint eviction: delete the pods of a node whose NoExecute taints they do not tolerate.

Port of pkg/controller/tainteviction/taint_eviction.go (v1.36, the
``taint-eviction-controller`` split out of the node lifecycle controller in
v1.29): ``NodeUpdated``/``PodUpdated`` (only NoExecute taint, toleration and
node changes matter), ``processPodOnNode`` (evict now when a taint is not
tolerated, after the smallest ``tolerationSeconds`` when all are, never when
the tolerations have no limit), ``cancelWorkWithEvent`` and
``addConditionAndDeletePod`` (the ``DisruptionTarget`` condition with reason
``DeletionByTaintManager``, then DELETE). Its events name the pod without a
uid, as upstream's ``ObjectReference`` does. The timed worker queue is
replaced by the controller's work queue: a scheduled eviction is a key that
comes back when it is due, judged by the API clock.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ApiError
from ..objects import clone, rfc3339
from ..scheduler.tolerations import tolerates
from .workload import MANAGER, OwnerKeyedController

COMPONENT = "taint-eviction-controller"


@dataclass
class _Work:
    created_at: float
    fire_at: float
    fired: bool = False  # upstream keeps a fired worker's key (as nil) so the same pod is not queued twice


def no_execute_taints(node: dict | None) -> list[dict]:
    return [t for t in ((node or {}).get("spec") or {}).get("taints") or () if t.get("effect") == "NoExecute"]


def matching_tolerations(taints: list[dict], tolerations: list[dict]) -> tuple[bool, list[dict]]:
    """GetMatchingTolerations: whether every taint is tolerated, and the first toleration used for each."""
    used = []
    for taint in taints:
        match = next((t for t in tolerations if tolerates(t, taint)), None)
        if match is None:
            return False, []
        used.append(match)
    return True, used


def min_toleration_seconds(tolerations: list[dict]) -> float:
    """getMinTolerationTime: 0 for none or a non-positive limit, -1 when none has a limit."""
    if not tolerations:
        return 0.0
    limits = [t["tolerationSeconds"] for t in tolerations if t.get("tolerationSeconds") is not None]
    if any(v <= 0 for v in limits):
        return 0.0
    return float(min(limits)) if limits else -1.0


class TaintEvictionController(OwnerKeyedController):
    name = COMPONENT
    watches = ("nodes", "pods")

    def __init__(self, api):
        super().__init__(api)
        self._tainted: dict[str, list[dict]] = {}
        self._work: dict[tuple[str, str], _Work] = {}

    def keys_for(self, key: str, obj: dict):
        m = obj["metadata"]
        if key == "nodes":
            return [("node", m["name"])]
        return [("pod", m.get("namespace", ""), m["name"])]

    def keys_for_change(self, key: str, obj: dict, old: dict | None):
        if old is not None:
            if key == "nodes" and no_execute_taints(old) == no_execute_taints(obj):
                return []
            if key == "pods" and (old.get("spec") or {}).get("tolerations") == (obj.get("spec") or {}).get(
                    "tolerations") and (old.get("spec") or {}).get("nodeName") == (obj.get("spec") or {}).get(
                    "nodeName"):
                return []
        return self.keys_for(key, obj)

    def initial_keys(self):
        keys = [("node", n["metadata"]["name"]) for n in self.api.store.list("nodes")]
        return keys + [("evict", *pod) for pod, work in self._work.items() if not work.fired]

    async def reconcile(self, work_key) -> float | None:
        kind = work_key[0]
        if kind == "node":
            self._node_updated(work_key[1])
            return None
        if kind == "pod":
            self._pod_updated(work_key[1], work_key[2])
            return None
        return self._fire(work_key[1], work_key[2])

    # --- handleNodeUpdate / handlePodUpdate ------------------------------------------------
    def _node_updated(self, name: str) -> None:
        node = self.api.store.get("nodes", "", name)
        if node is None:
            self._tainted.pop(name, None)
            return
        taints = no_execute_taints(node)
        if taints:
            self._tainted[name] = taints
        else:
            self._tainted.pop(name, None)
        pods = self.api.store.by_index("pods", "spec.nodeName", name)
        now = self.api.clock()
        for pod in pods:
            ident = (pod["metadata"]["namespace"], pod["metadata"]["name"])
            if not taints:
                self._cancel(ident)
            else:
                self._process_pod(ident, pod, taints, now)

    def _pod_updated(self, namespace: str, name: str) -> None:
        ident = (namespace, name)
        pod = self.api.store.get("pods", namespace, name)
        if pod is None:
            self._cancel(ident)
            return
        node = (pod.get("spec") or {}).get("nodeName")
        taints = self._tainted.get(node) if node else None
        if taints is None:
            return
        self._process_pod(ident, pod, taints, self.api.clock())

    def _process_pod(self, ident: tuple[str, str], pod: dict, taints: list[dict], now: float) -> None:
        tolerated, used = matching_tolerations(taints, (pod.get("spec") or {}).get("tolerations") or [])
        if not tolerated:
            self._cancel(ident)
            self._add(ident, now, now)
            return
        seconds = min_toleration_seconds(used)
        if seconds < 0:
            self._cancel(ident)
            return
        start, trigger = now, now + seconds
        existing = self._work.get(ident)
        if existing is not None and not existing.fired:
            start = existing.created_at
            if start + seconds < trigger:
                return
            self._cancel(ident)
        self._add(ident, start, trigger)

    # --- the timed work -----------------------------------------------------------------
    def _add(self, ident: tuple[str, str], created_at: float, fire_at: float) -> None:
        if ident in self._work:
            return  # "Trying to add already existing work, skipping"
        self._work[ident] = _Work(created_at, fire_at)
        self.queue.add_after(("evict", *ident), max(fire_at - self.api.clock(), 0.0))

    def _cancel(self, ident: tuple[str, str]) -> None:
        """cancelWorkWithEvent: the event only when a pending eviction is cancelled."""
        work = self._work.pop(ident, None)
        if work is not None and not work.fired:
            self._event(ident, f"Cancelling deletion of Pod {ident[0]}/{ident[1]}")

    def _fire(self, namespace: str, name: str) -> float | None:
        work = self._work.get((namespace, name))
        if work is None or work.fired:
            return None
        now = self.api.clock()
        if now < work.fire_at:
            return work.fire_at - now
        work.fired = True
        self._event((namespace, name), f"Marking for deletion Pod {namespace}/{name}")
        self._add_condition_and_delete(namespace, name, now)
        return None

    def _add_condition_and_delete(self, namespace: str, name: str, now: float) -> None:
        pod = self.api.store.get("pods", namespace, name)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        current = (pod.get("status") or {}).get("conditions") or []
        conditions = [c for c in current if c.get("type") != "DisruptionTarget"]
        old = next((c for c in current if c.get("type") == "DisruptionTarget"), None)
        wanted = {"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                  "lastTransitionTime": rfc3339(now), "reason": "DeletionByTaintManager",
                  "message": "Taint manager: deleting due to NoExecute taint"}
        try:
            if old is None or old.get("status") != "True" or old.get("reason") != wanted["reason"]:
                updated = clone(pod)
                updated["status"]["conditions"] = conditions + [wanted]
                self.api.update("pods", updated, namespace, subresource="status", manager=MANAGER)
            self.api.delete("pods", name, namespace, preconditions={"uid": pod["metadata"]["uid"]})
        except ApiError as exc:
            if exc.code not in (404, 409):
                raise

    def _event(self, ident: tuple[str, str], message: str) -> None:
        ref = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": ident[1], "namespace": ident[0]}}
        self.api.record_event(ref, "Normal", "TaintManagerEviction", message, COMPONENT)
