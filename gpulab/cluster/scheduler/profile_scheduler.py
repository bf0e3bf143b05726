"""One scheduler profile at work: its cache, its queue, its framework, and the scheduling and binding cycles.

Follows pkg/scheduler/schedule_one.go: pop a pod, run PreFilter, try the
nominated node (``evaluateNominatedNode``), run Filter and Score over the
nodes (``search``), on failure run the PostFilter plugins and
``handleSchedulingFailure`` (a ``FailedScheduling`` Warning event on every
failed attempt, the ``PodScheduled=False`` condition and
``status.nominatedNodeName``, requeueing); on success assume the pod, run
Reserve and Permit, then PreBind and Bind, and record the ``Scheduled`` event.
Events carry the profile's scheduler name as their source, as each profile has
its own recorder upstream.

The ``ProfileScheduler`` is also the plugins' handle (framework.Handle): it
gives them the cache, the API, the clock, the pods waiting at Permit and
the profile's name.

Everything here is synchronous and runs in the API server's event loop: the
API's change notifications update the cache and the queue directly, and one
scheduling cycle never awaits, so the cluster cannot change under it (upstream
gets the same effect from its snapshot).
"""
from __future__ import annotations

import logging
import random
from typing import Iterator

from ..errors import ApiError
from ..gofmt import go_duration
from ..objects import rfc3339
from .cache import SchedulerCache
from .events import ADD, DELETE, NODE, POD, UPDATE, ClusterEvent, node_update_changes, pod_update_changes
from .interface import CycleState
from .podinfo import PodInfo, is_terminal
from .profiles import Profile
from .queue import FLUSH_UNSCHEDULABLE_INTERVAL, QueuedPodInfo, SchedulingQueue
from .registry import REGISTRY
from .runtime import FilterError, Framework
from .search import Search
from .status import ERROR, NO_NODES_AVAILABLE_ERROR, UNSCHEDULABLE, WAIT, Status, fit_error_message, truncate_message

log = logging.getLogger("gpulab.scheduler")

REASON_UNSCHEDULABLE = "Unschedulable"  # v1.PodReasonUnschedulable
REASON_SCHEDULER_ERROR = "SchedulerError"  # v1.PodReasonSchedulerError
MANAGER = "kube-scheduler"
GANG_SCHEDULING = "GangScheduling"  # the plugin whose gangs get the pod group cycle


class WaitingPod:
    """A pod assumed on a node and held at Permit (framework.waitingPod)."""

    __slots__ = ("qpi", "node", "deadline", "wait", "plugin", "state")

    def __init__(self, qpi: QueuedPodInfo, node: str, deadline: float, wait: float, plugin: str, state: CycleState):
        self.qpi, self.node, self.deadline, self.wait, self.plugin, self.state = qpi, node, deadline, wait, plugin, state

    @property
    def info(self) -> PodInfo:
        return self.qpi.info


class ProfileScheduler:
    """``seed`` starts the generator that breaks ties between the best nodes (one per cluster, see
    ``component.cluster_seed``), so the same cluster history gives the same placements."""

    def __init__(self, api, profile: Profile, registry: dict = REGISTRY, seed: int = 0):
        self.api = api
        self.profile = profile
        self.profile_name = profile.name
        self.rng = random.Random(f"{seed}/{profile.name}")
        self.cache = SchedulerCache()
        self.waiting: dict[str, WaitingPod] = {}
        self.framework = Framework(profile, registry, self)
        self.queue = SchedulingQueue(self.framework.sort_key, self.clock, self.framework.run_pre_enqueue)
        self._other_resources = sorted(self.framework.event_resources() - {NODE, POD})
        self._watchers = {key: self._watcher(key) for key in self._other_resources}
        self._generations: dict[str, list[int]] = {}
        self._counters: dict[str, object] = {}
        self._gang = next((p for p in self.framework.plugins if p.NAME == GANG_SCHEDULING and p.active), None)

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
        for key, watcher in self._watchers.items():
            self.api.subscribe(key, watcher)
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
        for key, watcher in self._watchers.items():
            self.api.unsubscribe(key, watcher)
        for key, counter in self._counters.items():
            self.api.unsubscribe(key, counter)

    def _watcher(self, key: str):
        def on_change(event_type: str, obj: dict, old: dict | None) -> None:
            action = DELETE if event_type == "DELETED" else ADD if old is None else UPDATE
            self._cluster_event(ClusterEvent(key, action, old, None if action == DELETE else obj))
        return on_change

    def on_node(self, event_type: str, node: dict, old: dict | None) -> None:
        if event_type == "DELETED":
            self.cache.remove_node(node["metadata"]["name"])
            self._cluster_event(ClusterEvent(NODE, DELETE, node, None))
            return
        self.cache.set_node(node)
        if old is None:
            self._cluster_event(ClusterEvent(NODE, ADD, None, node))
            return
        changes = node_update_changes(old, node)
        if changes:
            self._cluster_event(ClusterEvent(NODE, UPDATE, old, node, changes))

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
                self._cluster_event(ClusterEvent(POD, ADD, None, pod))
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
            self._cluster_event(ClusterEvent(POD, ADD, None, pod))

    def _assigned_pod(self, uid: str, pod: dict, old: dict | None, event_type: str) -> None:
        qpi = self.queue.delete(uid)
        self.cache.unnominate(uid)
        waiting = self.waiting.pop(uid, None)
        base = self.cache.pod_info(uid) or (qpi.info if qpi else None) or (waiting.info if waiting else None)
        info = base.refresh(pod) if base is not None else PodInfo(pod)
        self.cache.add_pod(info, pod["spec"]["nodeName"])
        if old is None or not (old.get("spec") or {}).get("nodeName"):  # the assigned-pod informer's add
            self._cluster_event(ClusterEvent(POD, ADD, None, pod))
        else:
            changes = pod_update_changes(old, pod)
            if changes:
                self._cluster_event(ClusterEvent(POD, UPDATE, old, pod, changes))

    def _pod_gone(self, uid: str, pod: dict) -> None:
        """A pod was deleted (or became terminal): free its resources and drop it from the queue."""
        self.queue.delete(uid)
        self.cache.unnominate(uid)
        if uid in self.waiting:
            self.reject_waiting_pod(uid, "", "removed", notify=False)
        if self.cache.node_of(uid) is not None:
            self.cache.remove_pod(uid)
            self._cluster_event(ClusterEvent(POD, DELETE, pod, None))
        elif (pod.get("status") or {}).get("nominatedNodeName"):
            self._cluster_event(ClusterEvent(POD, DELETE, pod, None))

    def _cluster_event(self, event: ClusterEvent, exclude: str = "") -> None:
        """MoveAllToActiveOrBackoffQueue for the plugins registered for the event, through their hints
        (never moving ``exclude``, the pod whose own assumption was just undone)."""
        hint = self._hint if not exclude else (
            lambda plugin, qpi, ev: qpi.uid != exclude and self._hint(plugin, qpi, ev))
        self.queue.on_event(event, self.framework.plugins_for(event), hint)

    def _hint(self, plugin: str, qpi: QueuedPodInfo, event: ClusterEvent) -> bool:
        return self.framework.queueing_hint(plugin, qpi.info, event)

    # --- the handle ---------------------------------------------------------
    def get_object(self, key: str, name: str, namespace: str | None = None) -> dict | None:
        """An object through the informers (None when missing, or when the cluster does not serve its kind)."""
        try:
            return self.api.try_get(key, name, namespace)
        except ApiError:
            return None

    def list_objects(self, key: str, namespace: str | None = None) -> list[dict]:
        try:
            return self.api.list(key, namespace)
        except ApiError:
            return []

    def generation(self, key: str) -> int:
        """A number that changes whenever an object of ``key`` changes, so plugins can keep what they derive
        from such objects (a Deployment's selector) until then."""
        counter = self._generations.get(key)
        if counter is None:
            counter = self._generations[key] = [0]

            def on_change(event_type: str, obj: dict, old: dict | None) -> None:
                counter[0] += 1
            self._counters[key] = on_change
            self.api.subscribe(key, on_change)
        return counter[0]

    def waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.waiting.get(uid)

    def reject_waiting(self, predicate, plugin: str, message: str) -> None:
        for uid, waiting in list(self.waiting.items()):
            if uid in self.waiting and predicate(waiting.info):
                self.reject_waiting_pod(uid, plugin, message)

    def allow_waiting(self, predicate) -> None:
        for uid, waiting in list(self.waiting.items()):
            if uid in self.waiting and predicate(waiting.info):
                del self.waiting[uid]
                self._binding_cycle(waiting.qpi, waiting.state, waiting.node)

    def activate(self, uids) -> None:
        self.queue.activate(uids)

    def reject_waiting_pod(self, uid: str, plugin: str, message: str, *, notify: bool = True) -> None:
        waiting = self.waiting.pop(uid)
        self._forget(waiting.state, waiting.info, waiting.node)
        if notify:
            self._failure(waiting.qpi, Status(UNSCHEDULABLE, (message,), plugin), set(), "")

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
        gang = self._gang.group_cycle(pod) if self._gang is not None else None
        if gang is not None:
            self._schedule_group(qpi, *gang)
            return
        state = CycleState()
        host, fail = self._place(qpi, state)
        if host is None:
            fail()
            return
        self._assume(qpi, state, host)

    def _place(self, qpi: QueuedPodInfo, state: CycleState):
        """The scheduling algorithm for one pod: (its host, None), or (None, the failure to report)."""
        pod = qpi.info
        if not self.cache.nodes:
            return None, lambda: self._failure(qpi, Status(ERROR, (NO_NODES_AVAILABLE_ERROR,)), set(), None)
        framework = self.framework
        pre = framework.run_pre_filter(state, pod)
        if pre is not None:
            if not pre.rejected:
                return None, lambda: self._failure(qpi, pre, set(), None)
            search = Search(framework, state, pod)
            search.diagnosis.pre_filter_msg = pre.message
            search.diagnosis.add(pre, self.cache.all_mask)
            return None, lambda: self._unschedulable(qpi, state, search.diagnosis, {pre.plugin})
        try:
            host = self._nominated_host(state, pod)
            if host is None:
                search = Search(framework, state, pod)
                search.run()
        except FilterError as exc:
            return None, lambda status=exc.status: self._failure(qpi, status, set(), None)
        if host is None:
            if not search.cells:
                return None, lambda: self._unschedulable(qpi, state, search.diagnosis,
                                                         search.diagnosis.unschedulable_plugins())
            host = search.only_node() or search.select(self.rng)
        return host, None

    def _schedule_group(self, qpi: QueuedPodInfo, min_count: int, others: list[str], scheduled: int) -> None:
        """The pod group scheduling cycle (schedule_one_podgroup.go, GangScheduling's PlacementFeasible): the
        gang's queued pods are placed one by one, each seeing the earlier ones assumed; the placements go on
        to Permit and binding only when at least ``minCount`` of the gang's pods are then placed, otherwise
        all are undone (nothing is held) and each pod is reported: its own failure, or the group's."""
        group = [qpi] + [q for q in map(self.queue.take, others) if q is not None]
        remaining, placed, failed, verdict = len(group), [], [], None
        for index, member in enumerate(group):
            state = CycleState()
            host, fail = self._place(member, state)
            if host is not None:
                self.cache.add_pod(member.info, host, assumed=True)
                status = self.framework.run_reserve(state, member.info, host)
                if status is not None:
                    self._forget(state, member.info, host)
                    host, fail = None, (lambda m=member, s=status: self._reject_at_reserve_or_permit(m, s))
            remaining -= 1
            if host is None:
                failed.append(fail)
            else:
                placed.append((member, state, host))
                scheduled += 1
            if remaining + scheduled < min_count:
                verdict = f"minCount ({min_count}) cannot be satisfied: {scheduled} scheduled, {remaining} remaining"
                break
        else:
            index = len(group)
            if scheduled < min_count:
                verdict = f"minCount ({min_count}) is not yet satisfied: {scheduled} scheduled, {remaining} remaining"
        if verdict is None:
            for member, state, host in placed:
                self._assume(member, state, host, reserved=True)
        else:
            for member, state, host in reversed(placed):
                self._forget(state, member.info, host, notify=False)  # undone in the snapshot upstream
            rejected = Status(UNSCHEDULABLE, (f"pod group is unschedulable, {verdict}",), GANG_SCHEDULING)
            for member in [m for m, _, _ in placed] + group[index + 1:]:
                self._failure(member, rejected, {GANG_SCHEDULING}, "")
        for fail in failed:
            fail()

    def _nominated_host(self, state: CycleState, pod: PodInfo) -> str | None:
        """evaluateNominatedNode: a preemptor whose nominated node now fits goes there without scoring."""
        name = pod.nominated_node
        info = self.cache.nodes.get(name) if name else None
        if info is not None and self.framework.run_filters_with_nominated(state, pod, info) is None:
            return name
        return None

    def _unschedulable(self, qpi: QueuedPodInfo, state: CycleState, diagnosis, plugins: set[str]) -> None:
        """FitError: run the PostFilter plugins, then handle the failure."""
        diagnosis.freeze()
        status, nominated = self.framework.run_post_filter(state, qpi.info, diagnosis)
        if status is not None and status.code == ERROR:
            self._failure(qpi, status, set(), None)
            return
        diagnosis.post_filter_msg = status.message if status is not None else ""
        self._failure(qpi, Status(UNSCHEDULABLE, (diagnosis.message(),)), plugins, nominated)

    def _assume(self, qpi: QueuedPodInfo, state: CycleState, host: str, *, reserved: bool = False) -> None:
        """assume, Reserve and Permit (``reserved``: the pod group cycle assumed and reserved it already);
        then the binding cycle, unless Permit holds the pod."""
        pod, framework = qpi.info, self.framework
        status = None
        if not reserved:
            self.cache.add_pod(pod, host, assumed=True)
            status = framework.run_reserve(state, pod, host)
        timeout = 0.0
        if status is None:
            status, timeout = framework.run_permit(state, pod, host)
        if status is not None and status.code == WAIT:
            self.queue.done(pod.uid)
            self.waiting[pod.uid] = WaitingPod(qpi, host, self.clock() + timeout, timeout, status.plugin, state)
            return
        if status is not None:
            self._forget(state, pod, host)
            self._reject_at_reserve_or_permit(qpi, status)
            return
        self._binding_cycle(qpi, state, host)

    def _reject_at_reserve_or_permit(self, qpi: QueuedPodInfo, status: Status) -> None:
        if status.rejected:  # a rejection at Reserve or Permit reads as a FitError on one node
            status = Status(status.code, (fit_error_message(1, {r: 1 for r in status.reasons}),), status.plugin)
        self._failure(qpi, status, {status.plugin} if status.rejected else set(), "")

    # --- timers ----------------------------------------------------------------
    def run_timers(self) -> None:
        """Reject pods whose Permit wait timed out; flush the unschedulable pool every 30 s."""
        now = self.clock()
        for uid, waiting in list(self.waiting.items()):
            if waiting.deadline <= now and uid in self.waiting:
                self.reject_waiting_pod(uid, waiting.plugin, f"rejected due to timeout after waiting "
                                                             f"{go_duration(waiting.wait)} at plugin {waiting.plugin}")
        if now - self.queue.last_flush >= FLUSH_UNSCHEDULABLE_INTERVAL:
            self.queue.flush()

    def next_deadline(self) -> float:
        deadlines = [w.deadline for w in self.waiting.values()]
        deadlines.append(self.queue.next_wakeup())
        return min(deadlines)

    def _forget(self, state: CycleState, pod: PodInfo, node: str, *, notify: bool = True) -> None:
        """Unreserve and ForgetPod; freeing the assumed resources counts as an assigned pod's deletion (unless
        ``notify`` is off: a placement the pod group cycle undoes was never seen outside it)."""
        self.framework.run_unreserve(state, pod, node)
        if self.cache.node_of(pod.uid) == node and self.cache.is_assumed(pod.uid):
            self.cache.remove_pod(pod.uid)
            if not notify:
                return
            gone = {**pod.pod, "spec": {**pod.spec, "nodeName": node}}
            self._cluster_event(ClusterEvent(POD, DELETE, gone, None), exclude=pod.uid)

    # --- binding -------------------------------------------------------------
    def _binding_cycle(self, qpi: QueuedPodInfo, state: CycleState, host: str) -> None:
        pod = qpi.info
        self.queue.done(pod.uid)
        status = self.framework.run_pre_bind(state, pod, host) or self.framework.run_bind(state, pod, host)
        if status is not None:
            self._forget(state, pod, host)
            if self.api.try_get("pods", pod.name, pod.namespace) is None:
                return
            self._failure(qpi, status, set(), "")
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
        self.set_pod_status(latest, condition, nominated)

    def set_pod_status(self, pod: dict, condition: dict | None, nominated: str | None) -> None:
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
