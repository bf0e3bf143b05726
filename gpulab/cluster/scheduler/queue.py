"""The scheduling queue: activeQ, backoffQ and the unschedulable pod pool.

Follows pkg/scheduler/backend/queue/scheduling_queue.go as of v1.36:

* PreEnqueue plugins (SchedulingGates) keep a pod out of activeQ ("gated")
  until an update clears them;
* a pod that fails with a rejection waits in the unschedulable pool until a
  cluster event that one of its rejecting plugins' queueing hints accepts, or
  until it has waited ``POD_MAX_IN_UNSCHEDULABLE`` (5 min, checked every 30 s
  by ``flushUnschedulablePodsLeftover``); an event seen while the pod was being
  scheduled sends it straight to backoff;
* backoff lasts 1 s doubling per attempt up to 10 s
  (``calculateBackoffDuration``), and with ``SchedulerPopFromBackoffQ`` (beta,
  on) a backing-off pod is popped anyway when activeQ is empty;
* activeQ is ordered by the profile's QueueSort plugin.
"""
from __future__ import annotations

import heapq
import itertools
from typing import Callable

from .events import ClusterEvent
from .podinfo import PodInfo

POD_INITIAL_BACKOFF = 1.0
POD_MAX_BACKOFF = 10.0
POD_MAX_IN_UNSCHEDULABLE = 300.0
FLUSH_UNSCHEDULABLE_INTERVAL = 30.0

ACTIVE, BACKOFF, UNSCHEDULABLE, IN_FLIGHT = "active", "backoff", "unschedulable", "in-flight"


class QueuedPodInfo:
    __slots__ = ("info", "timestamp", "initial_attempt", "seq", "attempts", "unschedulable_plugins", "gated_by",
                 "state", "events_in_flight", "entry")

    def __init__(self, info: PodInfo, now: float, seq: int):
        self.info = info
        self.timestamp = now
        self.initial_attempt = now
        self.seq = seq
        self.attempts = 0
        self.unschedulable_plugins: set[str] = set()
        self.gated_by = None
        self.state = ""
        self.events_in_flight: list[ClusterEvent] = []
        self.entry = 0

    @property
    def uid(self) -> str:
        return self.info.uid

    def backoff_expiry(self) -> float:
        if self.attempts == 0:
            return self.timestamp
        duration = POD_INITIAL_BACKOFF
        for _ in range(1, self.attempts):
            if duration > POD_MAX_BACKOFF - duration:
                return self.timestamp + POD_MAX_BACKOFF
            duration += duration
        return self.timestamp + duration


class SchedulingQueue:
    def __init__(self, sort_key: Callable[[QueuedPodInfo], tuple], clock: Callable[[], float],
                 pre_enqueue: Callable[[PodInfo], object | None]):
        self._sort_key = sort_key
        self._clock = clock
        self._pre_enqueue = pre_enqueue
        self._pods: dict[str, QueuedPodInfo] = {}
        self._active: list = []
        self._backoff: list = []
        self._error_backoff: list = []
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._by_plugin: dict[str, set[str]] = {}
        self._in_flight: dict[str, QueuedPodInfo] = {}
        self._seq = itertools.count()
        self._entries = itertools.count(1)
        self.last_flush = clock()
        self.on_ready: Callable[[], None] = lambda: None

    # --- membership -------------------------------------------------------
    def __contains__(self, uid: str) -> bool:
        return uid in self._pods

    def get(self, uid: str) -> QueuedPodInfo | None:
        return self._pods.get(uid)

    def __len__(self) -> int:
        return len(self._pods)

    def add(self, info: PodInfo) -> None:
        qpi = self._pods.get(info.uid)
        if qpi is not None:
            self.update(info)
            return
        qpi = self._pods[info.uid] = QueuedPodInfo(info, self._clock(), next(self._seq))
        self._enqueue(qpi)

    def update(self, info: PodInfo) -> None:
        """A newer version of a queued pod. A new PodInfo means its requests, tolerations, node constraints,
        labels or priority changed, which may make an unschedulable pod fit."""
        qpi = self._pods.get(info.uid)
        if qpi is None:
            self.add(info)
            return
        relevant = info is not qpi.info
        qpi.info = info
        if qpi.state == UNSCHEDULABLE and (qpi.gated_by is not None or relevant):
            self._leave_unschedulable(qpi)
            self._enqueue(qpi, backoff_if_due=qpi.gated_by is None)

    def delete(self, uid: str) -> QueuedPodInfo | None:
        qpi = self._pods.pop(uid, None)
        self._in_flight.pop(uid, None)
        if qpi is not None:
            self._leave_unschedulable(qpi)
            qpi.state = ""
        return qpi

    # --- internal moves ---------------------------------------------------
    def _enqueue(self, qpi: QueuedPodInfo, *, backoff_if_due: bool = False, error: bool = False) -> None:
        """movePodsToActiveOrBackoffQueue / activeQ add, after the PreEnqueue plugins.

        Pods that failed with an error back off in their own heap, never popped early.
        """
        qpi.gated_by = self._pre_enqueue(qpi.info)
        if qpi.gated_by is not None:
            self._to_unschedulable(qpi)
            return
        now = self._clock()
        if backoff_if_due and qpi.backoff_expiry() > now:
            qpi.state = BACKOFF
            qpi.entry = next(self._entries)
            heapq.heappush(self._error_backoff if error else self._backoff,
                           (qpi.backoff_expiry(), qpi.seq, qpi.entry, qpi.uid))
        else:
            self._activate(qpi)
        self.on_ready()

    def _activate(self, qpi: QueuedPodInfo) -> None:
        qpi.state = ACTIVE
        qpi.entry = next(self._entries)
        heapq.heappush(self._active, (self._sort_key(qpi), qpi.entry, qpi.uid))

    def _flush_backoff_completed(self) -> None:
        """flushBackoffQCompleted: pods whose backoff is over join activeQ (in queue order)."""
        now = self._clock()
        for heap in (self._backoff, self._error_backoff):
            while heap and heap[0][0] <= now:
                _, _, entry, uid = heapq.heappop(heap)
                qpi = self._pods.get(uid)
                if qpi is not None and qpi.entry == entry and qpi.state == BACKOFF:
                    self._activate(qpi)

    def _to_unschedulable(self, qpi: QueuedPodInfo) -> None:
        qpi.state = UNSCHEDULABLE
        self._unschedulable[qpi.uid] = qpi
        for plugin in qpi.unschedulable_plugins:
            self._by_plugin.setdefault(plugin, set()).add(qpi.uid)

    def _leave_unschedulable(self, qpi: QueuedPodInfo) -> None:
        if self._unschedulable.pop(qpi.uid, None) is not None:
            for plugin in qpi.unschedulable_plugins:
                self._by_plugin.get(plugin, set()).discard(qpi.uid)

    # --- the scheduling loop's side ---------------------------------------
    def pop(self) -> QueuedPodInfo | None:
        """The next pod to schedule: activeQ first, else the earliest backing-off pod (SchedulerPopFromBackoffQ)."""
        self._flush_backoff_completed()
        for heap, pos in ((self._active, 1), (self._backoff, 2)):
            while heap:
                entry = heapq.heappop(heap)
                qpi = self._pods.get(entry[-1])
                if qpi is None or qpi.entry != entry[pos] or qpi.state not in (ACTIVE, BACKOFF):
                    continue
                qpi.state = IN_FLIGHT
                qpi.attempts += 1
                qpi.events_in_flight = []
                self._in_flight[qpi.uid] = qpi
                return qpi
        return None

    def take(self, uid: str) -> QueuedPodInfo | None:
        """Pop one given pod that waits in the queue (a gang's member, scheduled in its group's cycle), or None
        when it is not there (in flight, held by PreEnqueue, gone)."""
        qpi = self._pods.get(uid)
        if qpi is None or qpi.state not in (ACTIVE, BACKOFF, UNSCHEDULABLE) or qpi.gated_by is not None:
            return None
        self._leave_unschedulable(qpi)
        qpi.state = IN_FLIGHT
        qpi.attempts += 1
        qpi.events_in_flight = []
        self._in_flight[qpi.uid] = qpi
        return qpi

    def done(self, uid: str) -> None:
        """The pod left the queue (bound, or waiting at Permit: ``requeue_unschedulable`` takes it back)."""
        self._pods.pop(uid, None)
        self._in_flight.pop(uid, None)

    def requeue_unschedulable(self, qpi: QueuedPodInfo, plugins: set[str],
                              hint: Callable[[str, QueuedPodInfo, ClusterEvent], bool], *, error: bool = False) -> None:
        """AddUnschedulableIfNotPresent: to the pool, or to backoff if an event seen meanwhile may help.

        A pod without a rejecting plugin (a Permit rejection, an error) goes to backoff directly; after an
        error it waits the whole backoff.
        """
        self._pods.setdefault(qpi.uid, qpi)
        self._in_flight.pop(qpi.uid, None)
        events, qpi.events_in_flight = qpi.events_in_flight, []
        qpi.unschedulable_plugins = set(plugins)
        qpi.timestamp = self._clock()
        if not plugins:
            self._enqueue(qpi, backoff_if_due=True, error=error)
        elif any(hint(p, qpi, ev) for ev in events for p in plugins):
            self._enqueue(qpi, backoff_if_due=True)
        else:
            self._to_unschedulable(qpi)

    def on_event(self, event: ClusterEvent, plugins: list[str],
                 hint: Callable[[str, QueuedPodInfo, ClusterEvent], bool]) -> None:
        """MoveAllToActiveOrBackoffQueue for the pods rejected by ``plugins``, filtered by their queueing hints."""
        for qpi in self._in_flight.values():
            qpi.events_in_flight.append(event)
        moved: list[QueuedPodInfo] = []
        for plugin in plugins:
            for uid in list(self._by_plugin.get(plugin, ())):
                qpi = self._unschedulable.get(uid)
                if qpi is not None and qpi.gated_by is None and hint(plugin, qpi, event):
                    self._leave_unschedulable(qpi)
                    moved.append(qpi)
        # Pods a PreEnqueue plugin of these holds back (DynamicResources waiting for a claim) get asked again.
        for qpi in [q for q in self._unschedulable.values() if q.gated_by is not None and q.gated_by.plugin in plugins]:
            self._leave_unschedulable(qpi)
            moved.append(qpi)
        for qpi in moved:
            self._enqueue(qpi, backoff_if_due=True)

    def activate(self, uids) -> None:
        """Activate: move waiting pods straight to activeQ (Coscheduling's ActivateSiblings)."""
        for uid in uids:
            qpi = self._pods.get(uid)
            if qpi is None or qpi.state not in (UNSCHEDULABLE, BACKOFF) or qpi.gated_by is not None:
                continue
            self._leave_unschedulable(qpi)
            self._activate(qpi)
            self.on_ready()

    def flush(self) -> None:
        """flushUnschedulablePodsLeftover: pods unschedulable for over 5 minutes get another try."""
        now = self._clock()
        self.last_flush = now
        stale = [q for q in self._unschedulable.values() if now - q.timestamp > POD_MAX_IN_UNSCHEDULABLE]
        for qpi in stale:
            self._leave_unschedulable(qpi)
            self._enqueue(qpi, backoff_if_due=True)

    def next_wakeup(self) -> float:
        """When a pod waiting in error backoff becomes ready, or the next periodic flush is due."""
        due = self.last_flush + FLUSH_UNSCHEDULABLE_INTERVAL
        return min(due, self._error_backoff[0][0]) if self._error_backoff else due
