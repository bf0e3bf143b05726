"""One scheduler profile at work: its cache, its queue, and the scheduling and binding cycles.

Follows pkg/scheduler/schedule_one.go: pop a pod, run PreFilter/Filter/Score
(``framework``), on failure run the PostFilter plugins (DynamicResources,
DefaultPreemption, then Coscheduling where enabled) and ``handleSchedulingFailure``
(a ``FailedScheduling`` Warning event on every failed attempt, the
``PodScheduled=False`` condition and ``status.nominatedNodeName``, requeueing);
on success assume the pod, run Permit, bind through ``pods/binding`` and
record the ``Scheduled`` event. Events carry the profile's scheduler name as
their source, as each profile has its own recorder upstream.

Everything here is synchronous and runs in the API server's event loop: the
API's change notifications update the cache and the queue directly, and one
scheduling cycle never awaits, so the cluster cannot change under it (upstream
gets the same effect from its snapshot).
"""
from __future__ import annotations

import logging
from typing import Iterator

from ..errors import ApiError
from ..gofmt import go_duration
from ..objects import rfc3339
from . import preemption
from .cache import SchedulerCache
from .coscheduling.plugin import NOT_FOUND, PODGROUPS, WAIT, Coscheduling
from .coscheduling.plugin import NAME as COSCHEDULING
from .framework import Diagnosis, Profile, Search, filter_node
from .plugins import (defaultpreemption, dynamicresources, nodeaffinity, noderesourcesfit, nodeunschedulable,
                      prioritysort, schedulinggates, tainttoleration)
from .plugins.events import ADD, DELETE, NODE, POD, POD_GROUP, UPDATE, ClusterEvent, node_update_changes
from .podinfo import PodInfo, is_terminal
from .queue import FLUSH_UNSCHEDULABLE_INTERVAL, QueuedPodInfo, SchedulingQueue
from .status import ERROR, NO_NODES_AVAILABLE_ERROR, SUCCESS, UNSCHEDULABLE, Status, fit_error_message, truncate_message

log = logging.getLogger("gpulab.scheduler")

REASON_UNSCHEDULABLE = "Unschedulable"  # v1.PodReasonUnschedulable
REASON_SCHEDULER_ERROR = "SchedulerError"  # v1.PodReasonSchedulerError
MANAGER = "kube-scheduler"

# Which plugins' queueing hints each kind of cluster event reaches (EventsToRegister).
_HINTS = {
    nodeunschedulable.NAME: nodeunschedulable.requeue,
    tainttoleration.NAME: tainttoleration.requeue,
    nodeaffinity.NAME: nodeaffinity.requeue,
    noderesourcesfit.NAME: noderesourcesfit.requeue,
}
_NODE_PLUGINS = [nodeunschedulable.NAME, tainttoleration.NAME, nodeaffinity.NAME, noderesourcesfit.NAME]


class WaitingPod:
    """A pod assumed on a node and held at Permit (framework.waitingPod)."""

    __slots__ = ("qpi", "node", "deadline", "wait")

    def __init__(self, qpi: QueuedPodInfo, node: str, deadline: float, wait: float):
        self.qpi, self.node, self.deadline, self.wait = qpi, node, deadline, wait

    @property
    def info(self) -> PodInfo:
        return self.qpi.info


class ProfileScheduler:
    def __init__(self, api, profile: Profile):
        self.api = api
        self.profile = profile
        self.cache = SchedulerCache()
        self.coscheduling = Coscheduling(self, profile.permit_waiting_seconds) if profile.coscheduling else None
        sort_key = self.coscheduling.sort_key if self.coscheduling else prioritysort.sort_key
        self.queue = SchedulingQueue(sort_key, self.clock, self._pre_enqueue)
        self.waiting: dict[str, WaitingPod] = {}

    def clock(self) -> float:
        return self.api.clock()

    # --- informers ----------------------------------------------------------
    def start(self) -> None:
        for _ in self.initial_sync():
            pass

    def initial_sync(self) -> Iterator[None]:
        """Subscribe to changes, then load the current nodes and pods (the informers' initial list).

        A generator, so the component can yield to the event loop while thousands of pods load; each listed
        object is re-read, as a change notification may already have brought a newer version or its deletion.
        """
        self.api.subscribe("nodes", self.on_node)
        self.api.subscribe("pods", self.on_pod)
        if self.coscheduling:
            self.api.subscribe(PODGROUPS, self.on_pod_group)
        for listed in self.api.list("nodes"):
            node = self.api.try_get("nodes", listed["metadata"]["name"])
            if node is not None:
                self.on_node("ADDED", node, None)
            yield
        for listed in self.api.list("pods"):
            meta = listed["metadata"]
            pod = self.api.try_get("pods", meta["name"], meta.get("namespace"))
            if pod is not None and pod["metadata"].get("uid") == meta.get("uid"):
                self.on_pod("ADDED", pod, None)
            yield

    def stop(self) -> None:
        self.api.unsubscribe("nodes", self.on_node)
        self.api.unsubscribe("pods", self.on_pod)
        if self.coscheduling:
            self.api.unsubscribe(PODGROUPS, self.on_pod_group)

    def on_node(self, event_type: str, node: dict, old: dict | None) -> None:
        if event_type == "DELETED":
            self.cache.remove_node(node["metadata"]["name"])
            return
        self.cache.set_node(node)
        if old is None:
            self._cluster_event(ClusterEvent(NODE, ADD, None, node), _NODE_PLUGINS)
            return
        changes = node_update_changes(old, node)
        if changes:
            self._cluster_event(ClusterEvent(NODE, UPDATE, old, node, changes), _NODE_PLUGINS)

    def on_pod(self, event_type: str, pod: dict, old: dict | None) -> None:
        uid = pod["metadata"].get("uid", "")
        spec = pod.get("spec") or {}
        if event_type == "DELETED":
            self._pod_gone(uid, pod)
            return
        if spec.get("nodeName"):
            if is_terminal(pod):  # the scheduler's informer no longer sees it: a delete
                self._pod_gone(uid, pod)
                return
            self._assigned_pod(uid, pod, old, event_type)
            return
        if is_terminal(pod):
            self.queue.delete(uid)
            self.cache.unnominate(uid)
            return
        if (spec.get("schedulerName") or "default-scheduler") != self.profile.name:
            if event_type == "ADDED":
                self._cluster_event(ClusterEvent(POD, ADD, None, pod), [COSCHEDULING])
            return
        waiting = self.waiting.get(uid)
        if waiting is not None:
            waiting.qpi.info = waiting.info.refresh(pod)
            return
        qpi = self.queue.get(uid)
        info = PodInfo(pod) if qpi is None else qpi.info.refresh(pod)
        if qpi is None:
            self.queue.add(info)
        else:
            self.queue.update(info)
        nominated = info.nominated_node
        if nominated != self.cache.nominated_node_of(uid):
            self.cache.nominate(info, nominated)
        if event_type == "ADDED":
            self._cluster_event(ClusterEvent(POD, ADD, None, pod), [COSCHEDULING])

    def on_pod_group(self, event_type: str, pg: dict, old: dict | None) -> None:
        if event_type != "DELETED":
            self._cluster_event(ClusterEvent(POD_GROUP, ADD if old is None else UPDATE, old, pg), [COSCHEDULING])

    def _assigned_pod(self, uid: str, pod: dict, old: dict | None, event_type: str) -> None:
        qpi = self.queue.delete(uid)
        self.cache.unnominate(uid)
        waiting = self.waiting.pop(uid, None)
        base = self.cache.pod_info(uid) or (qpi.info if qpi else None) or (waiting.info if waiting else None)
        info = base.refresh(pod) if base is not None else PodInfo(pod)
        self.cache.add_pod(info, pod["spec"]["nodeName"])
        if event_type == "ADDED":
            self._cluster_event(ClusterEvent(POD, ADD, None, pod), [COSCHEDULING])
        elif old is not None and (old.get("spec") or {}).get("nodeName") and _resized(old, pod):
            self._cluster_event(ClusterEvent(POD, UPDATE, old, pod), [noderesourcesfit.NAME])

    def _pod_gone(self, uid: str, pod: dict) -> None:
        """A pod was deleted (or became terminal): free its resources and drop it from the queue."""
        self.queue.delete(uid)
        self.cache.unnominate(uid)
        if uid in self.waiting:
            self._reject_waiting_pod(uid, "", "removed", notify=False)
        if self.cache.node_of(uid) is not None:
            self.cache.remove_pod(uid)
            self._cluster_event(ClusterEvent(POD, DELETE, pod, None), [noderesourcesfit.NAME])
        elif (pod.get("status") or {}).get("nominatedNodeName"):
            self._cluster_event(ClusterEvent(POD, DELETE, pod, None), [noderesourcesfit.NAME])

    def _cluster_event(self, event: ClusterEvent, plugins: list[str]) -> None:
        self.queue.on_event(event, plugins, self._hint)

    @staticmethod
    def _hint(plugin: str, qpi: QueuedPodInfo, event: ClusterEvent) -> bool:
        if plugin == COSCHEDULING:
            return event.resource in (POD, POD_GROUP) and event.action in (ADD, UPDATE)
        fn = _HINTS.get(plugin)
        return fn is not None and fn(qpi.info, event)

    def _pre_enqueue(self, info: PodInfo) -> Status | None:
        return schedulinggates.pre_enqueue(info.pod)

    # --- the scheduling cycle ------------------------------------------------
    def schedule_next(self) -> bool:
        """Run timers, then one scheduling cycle if a pod is ready; False when there was nothing to do."""
        self.run_timers()
        qpi = self.queue.pop()
        if qpi is None:
            return False
        try:
            self.schedule_one(qpi)
        except Exception:  # noqa: BLE001 - a bug in one cycle must not lose the pod
            log.exception("%s: scheduling %s failed", self.profile.name, qpi.info.key)
            if self.cache.is_assumed(qpi.uid):
                self.cache.remove_pod(qpi.uid)
            self.queue.requeue_unschedulable(qpi, set(), self._hint, error=True)
        return True

    def schedule_one(self, qpi: QueuedPodInfo) -> None:
        pod = qpi.info
        if pod.deleting or self.cache.node_of(pod.uid) is not None:  # skipPodSchedule
            self.queue.done(pod.uid)
            return
        if not self.cache.nodes:
            self._failure(qpi, Status(ERROR, (NO_NODES_AVAILABLE_ERROR,)), set(), None)
            return
        diagnosis = Diagnosis(len(self.cache.nodes))
        host = None
        pre = self.coscheduling.pre_filter(pod) if self.coscheduling else None
        if pre is not None:
            diagnosis.pre_filter_msg = pre.message
            diagnosis.add(pre, set(self.cache.nodes))
        else:
            host = self._nominated_host(pod)
            if host is None:
                search = Search(self.cache, pod)
                search.run()
                diagnosis = search.diagnosis
                if search.candidates:
                    host = search.select(self.profile)
        if host is None:
            self._unschedulable(qpi, diagnosis, pre)
            return
        self.cache.add_pod(pod, host, assumed=True)
        if self.coscheduling:
            outcome, wait = self.coscheduling.permit(pod)
            if outcome == NOT_FOUND:  # a rejection at Permit reads as a FitError on one node
                self._forget(pod, host)
                self._failure(qpi, Status(UNSCHEDULABLE, (fit_error_message(1, {NOT_FOUND: 1}),)),
                              {COSCHEDULING}, "")
                return
            if outcome == WAIT:
                self.queue.done(pod.uid)
                self.waiting[pod.uid] = WaitingPod(qpi, host, self.clock() + wait, wait)
                return
        self._bind(qpi, host)

    def _nominated_host(self, pod: PodInfo) -> str | None:
        """evaluateNominatedNode: a preemptor whose nominated node now fits goes there without scoring."""
        name = pod.nominated_node
        info = self.cache.nodes.get(name) if name else None
        if info is not None and filter_node(self.cache, pod, info) is None:
            return name
        return None

    def _unschedulable(self, qpi: QueuedPodInfo, diagnosis: Diagnosis, pre: Status | None) -> None:
        """FitError: run the PostFilter plugins, then handle the failure."""
        pod = qpi.info
        diagnosis.freeze()
        messages: list[str] = [dynamicresources.post_filter(pod).message]
        nominated: str | None = None
        outcome = preemption.preempt(self.cache, pod, diagnosis, self._pdbs(), self.clock())
        if outcome.status.code == SUCCESS:
            self._execute_preemption(pod, outcome)
            nominated, messages = outcome.nominated_node, []
        else:
            messages.append(defaultpreemption.wrap_message(outcome.status).message)
            if outcome.nominated_node is not None:
                nominated = outcome.nominated_node
            if self.coscheduling:
                messages.extend(self.coscheduling.post_filter(pod).reasons)
        diagnosis.post_filter_msg = ", ".join(m for m in messages if m)
        plugins = {status.plugin for status, _ in diagnosis.groups() if status.plugin}
        if pre is not None:
            plugins = {pre.plugin}
        self._failure(qpi, Status(UNSCHEDULABLE, (diagnosis.message(),)), plugins, nominated)

    def _pdbs(self) -> list[dict]:
        try:
            return self.api.list("poddisruptionbudgets.policy")
        except ApiError:
            return []

    # --- preemption ----------------------------------------------------------
    def _execute_preemption(self, preemptor: PodInfo, outcome: preemption.Outcome) -> None:
        """Executor.PreemptPod for each victim, then clear lower-priority nominations on the node."""
        node = outcome.nominated_node
        for victim in outcome.victims:
            if victim.deleting:
                continue
            if victim.uid in self.waiting:
                self._reject_waiting_pod(victim.uid, defaultpreemption.NAME, "preempted")
            else:
                self._mark_disruption_target(victim)
                try:
                    self.api.delete("pods", victim.name, victim.namespace)
                except ApiError as exc:
                    if exc.code != 404:
                        log.warning("preempting %s: %s", victim.key, exc)
                    continue
            self.api.record_event(victim.pod, "Normal", "Preempted",
                                  f"Preempted by pod {preemptor.uid} on node {node}", self.profile.name,
                                  action="Preempting")
        for other in list(self.cache.nominated.get(node, {}).values()):
            if other.priority < preemptor.priority:
                self._set_status(other.pod, None, "")

    def _mark_disruption_target(self, victim: PodInfo) -> None:
        condition = {"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                     "reason": defaultpreemption.REASON_PREEMPTION_BY_SCHEDULER,
                     "message": f"{victim.scheduler_name}: preempting to accommodate a higher priority pod"}
        self._set_status(victim.pod, condition, None)

    # --- Permit waiting ------------------------------------------------------
    def run_timers(self) -> None:
        """Reject pods whose Permit wait timed out; flush the unschedulable pool every 30 s."""
        now = self.clock()
        for uid, waiting in list(self.waiting.items()):
            if waiting.deadline <= now and uid in self.waiting:
                self._reject_waiting_pod(uid, COSCHEDULING, f"rejected due to timeout after waiting "
                                                             f"{go_duration(waiting.wait)} at plugin {COSCHEDULING}")
        if now - self.queue.last_flush >= FLUSH_UNSCHEDULABLE_INTERVAL:
            self.queue.flush()

    def next_deadline(self) -> float:
        deadlines = [w.deadline for w in self.waiting.values()]
        deadlines.append(self.queue.next_wakeup())
        return min(deadlines)

    def reject_waiting(self, predicate, plugin: str, message: str) -> None:
        for uid, waiting in list(self.waiting.items()):
            if uid in self.waiting and predicate(waiting.info):
                self._reject_waiting_pod(uid, plugin, message)

    def allow_waiting(self, predicate) -> None:
        for uid, waiting in list(self.waiting.items()):
            if uid in self.waiting and predicate(waiting.info):
                del self.waiting[uid]
                self._bind(waiting.qpi, waiting.node)

    def activate(self, uids) -> None:
        self.queue.activate(uids)

    def _reject_waiting_pod(self, uid: str, plugin: str, message: str, *, notify: bool = True) -> None:
        waiting = self.waiting.pop(uid)
        self._forget(waiting.info, waiting.node)
        if notify:
            self._failure(waiting.qpi, Status(UNSCHEDULABLE, (message,), plugin), set(), "")

    def _forget(self, pod: PodInfo, node: str) -> None:
        """Unreserve and ForgetPod; freeing the assumed resources counts as an assigned pod's deletion."""
        if self.coscheduling:
            self.coscheduling.unreserve(pod)
        if self.cache.node_of(pod.uid) == node and self.cache.is_assumed(pod.uid):
            self.cache.remove_pod(pod.uid)
            gone = {**pod.pod, "spec": {**pod.spec, "nodeName": node}}
            self.queue.on_event(ClusterEvent(POD, DELETE, gone, None), [noderesourcesfit.NAME],
                                lambda plugin, qpi, ev: qpi.uid != pod.uid and self._hint(plugin, qpi, ev))

    # --- binding -------------------------------------------------------------
    def _bind(self, qpi: QueuedPodInfo, host: str) -> None:
        pod = qpi.info
        self.queue.done(pod.uid)
        try:
            self.api.bind(pod.namespace, pod.name, host)
        except ApiError as exc:
            self._forget(pod, host)
            if self.api.try_get("pods", pod.name, pod.namespace) is None:
                return
            self._failure(qpi, Status(ERROR, (f'running Bind plugin "DefaultBinder": {exc.message}',)), set(), "")
            return
        self.api.record_event(pod.pod, "Normal", "Scheduled",
                              f"Successfully assigned {pod.namespace}/{pod.name} to {host}", self.profile.name,
                              action="Binding")

    # --- failures ------------------------------------------------------------
    def _failure(self, qpi: QueuedPodInfo, status: Status, plugins: set[str], nominated: str | None) -> None:
        """handleSchedulingFailure: requeue, then a FailedScheduling event and the PodScheduled condition."""
        pod = qpi.info
        latest = self.api.try_get("pods", pod.name, pod.namespace)
        if latest is None or latest["metadata"].get("uid") != pod.uid or (latest.get("spec") or {}).get("nodeName"):
            self.queue.delete(pod.uid)
            return
        qpi.info = pod.refresh(latest)
        self.queue.requeue_unschedulable(qpi, plugins, self._hint, error=not status.rejected)
        if nominated is not None:
            self.cache.nominate(qpi.info, nominated)
        message = status.message
        self.api.record_event(latest, "Warning", "FailedScheduling", truncate_message(message), self.profile.name,
                              action="Scheduling")
        reason = REASON_UNSCHEDULABLE if status.rejected else REASON_SCHEDULER_ERROR
        condition = {"type": "PodScheduled", "status": "False", "lastProbeTime": None, "reason": reason,
                     "message": message}
        self._set_status(latest, condition, nominated)

    def _set_status(self, pod: dict, condition: dict | None, nominated: str | None) -> None:
        """updatePod / PatchPodStatus: set a condition (UpdatePodCondition) and/or status.nominatedNodeName."""
        latest = self.api.try_get("pods", pod["metadata"]["name"], pod["metadata"].get("namespace"))
        if latest is None or latest["metadata"].get("uid") != pod["metadata"].get("uid"):
            return
        status = dict(latest.get("status") or {})
        changed = False
        if condition is not None:
            changed = _update_condition(status, condition, latest["metadata"].get("generation"), rfc3339(self.clock()))
        if nominated is not None and (status.get("nominatedNodeName") or "") != nominated:
            changed = True
            if nominated:
                status["nominatedNodeName"] = nominated
            else:
                status.pop("nominatedNodeName", None)
        if not changed:
            return
        try:
            self.api.update("pods", {**latest, "status": status}, latest["metadata"].get("namespace"),
                            subresource="status", manager=MANAGER)
        except ApiError as exc:
            log.warning("updating the status of pod %s: %s", latest["metadata"]["name"], exc)


def _resized(old: dict, new: dict) -> bool:
    """Whether an update can change the pod's requests (an in-place resize)."""
    ospec, nspec = old.get("spec") or {}, new.get("spec") or {}
    return any(ospec.get(k) != nspec.get(k) for k in ("containers", "initContainers", "resources", "overhead"))


def _update_condition(status: dict, condition: dict, generation, now: str) -> bool:
    """podutil.UpdatePodCondition: replace the condition; lastTransitionTime moves only when the status flips."""
    new = {"type": condition["type"]}
    if generation:
        new["observedGeneration"] = int(generation)  # PodObservedGenerationTracking, GA in v1.35
    new.update({k: v for k, v in condition.items() if k != "type"})
    new["lastTransitionTime"] = now
    conditions = list(status.get("conditions") or ())
    for i, old in enumerate(conditions):
        if old.get("type") != new["type"]:
            continue
        if old.get("status") == new["status"]:
            new["lastTransitionTime"] = old.get("lastTransitionTime", now)
        ordered = {k: new[k] for k in ("type", "observedGeneration", "status", "lastProbeTime", "lastTransitionTime",
                                       "reason", "message") if k in new}
        same = all(old.get(k) == ordered.get(k) for k in ("status", "reason", "message", "lastProbeTime",
                                                         "lastTransitionTime", "observedGeneration"))
        conditions[i] = ordered
        status["conditions"] = conditions
        return not same
    conditions.append({k: new[k] for k in ("type", "observedGeneration", "status", "lastProbeTime",
                                           "lastTransitionTime", "reason", "message") if k in new})
    status["conditions"] = conditions
    return True
