"""The node agent: one component playing the kubelet of every node in the cluster, like KWOK.

It watches nodes and pods through :class:`~gpulab.cluster.api.Api` notifications, keeps a
:class:`NodeAgent` per node (status, Lease, IPs, images) and a :class:`PodWorker` per pod bound to a
node, and drives them with event-loop timers only: a change or a deadline puts the pod in a queue that
is drained in batches, and pod status updates are written in batches too (the kubelet's status
manager also coalesces). Nothing blocks the loop for long, and ten thousand pods cost ten thousand
timers at most, not tasks. It also serves ``kubectl logs`` (``api.log_provider``). Pods left on a
node that was deleted are the pod garbage collector's (controllers/podgc.py), as upstream.
"""
from __future__ import annotations

import asyncio
import logging
import time
import zlib

from ..api import Api
from ..errors import ApiError
from .backoff import Backoff
from .cpu import Cpu
from .events import Recorder
from .images import Catalog, default_catalog
from .logs import LogProvider
from .nodeagent import NodeAgent
from .podworker import PodWorker
from .settings import load_lifecycle
from .streaming import StreamingServer

log = logging.getLogger("gpulab.kubelet")
_SLICE = 0.02   # seconds of work per loop callback before other tasks get a turn
_START_SPREAD = 1.0   # node agents of a large cluster start within this many seconds, not all at once


class Kubelet:
    name = "kubelet"

    def __init__(self, api: Api, *, scale: float = 1.0, catalog: Catalog | None = None):
        self.api = api
        self.lifecycle = load_lifecycle(scale)
        self.timings = self.lifecycle.timings
        self.catalog = catalog or default_catalog()
        self.recorder = Recorder(api)
        self.crash_backoff = Backoff(self.timings.backoff_initial, self.timings.backoff_max, scale)
        self.pull_backoff = Backoff(self.timings.backoff_initial, self.timings.backoff_max, scale)
        self.pull_errors: dict[str, str] = {}
        self.agents: dict[str, NodeAgent] = {}
        self.workers: dict[str, PodWorker] = {}
        self._by_node: dict[str, set[str]] = {}
        self._queue: dict[tuple, object] = {}
        self._dirty: dict[str, None] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._node_timers: dict[str, asyncio.TimerHandle] = {}
        self._drain_pending = False
        self._flush_pending = False
        self._writing = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self.cpu = Cpu()   # where programs that compute without pausing take turns

    # --- component ------------------------------------------------------------
    async def run(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.api.log_provider = LogProvider(self)
        self.api.node_streams = StreamingServer(self)
        self.api.subscribe("nodes", self._on_node)
        self.api.subscribe("pods", self._on_pod)
        try:
            for node in self.api.store.list("nodes"):
                self._add_node(node)
            for pod in self.api.store.list("pods"):
                self._on_pod("ADDED", pod, None, adopt=True)
            await asyncio.Event().wait()
        finally:
            self.api.unsubscribe("nodes", self._on_node)
            self.api.unsubscribe("pods", self._on_pod)
            for handle in [*self._timers.values(), *self._node_timers.values()]:
                handle.cancel()

    def _call_later(self, delay: float, fn, *args) -> asyncio.TimerHandle:
        return self._loop.call_later(max(0.0, delay), self._guarded, fn, *args)

    def _guarded(self, fn, *args) -> None:
        try:
            fn(*args)
        except Exception:  # noqa: BLE001 - one broken pod or node must not stop the node agent
            log.exception("kubelet: %s failed", getattr(fn, "__name__", fn))

    # --- notifications ------------------------------------------------------------
    def _on_node(self, event_type: str, node: dict, old: dict | None) -> None:
        if self._writing:
            return
        name = node["metadata"]["name"]
        if event_type == "DELETED":
            self._remove_node(name)
        elif name not in self.agents:
            self._add_node(node)
        else:
            for uid in self._by_node.get(name, ()):
                worker = self.workers[uid]
                if worker.admitted and not worker.terminal and worker.sandbox == "none":
                    self._enqueue(uid)

    def _on_pod(self, event_type: str, pod: dict, old: dict | None, adopt: bool = False) -> None:
        if self._writing:
            return
        uid = pod["metadata"]["uid"]
        if event_type == "DELETED":
            if uid in self.workers:
                self._enqueue(uid)
            return
        node = (pod.get("spec") or {}).get("nodeName")
        if not node:
            return
        if node not in self.agents:
            return
        if uid not in self.workers:
            worker = PodWorker(self, pod)
            self.workers[uid] = worker
            self._by_node.setdefault(node, set()).add(uid)
            if adopt:
                worker.adopt()
        elif old is not None and (old.get("status") or {}) != (pod.get("status") or {}):
            # Another component wrote the status (the node controller's Ready=False on a node it found silent):
            # the status manager reconciles the API's status with its own (status_manager.go needsReconcile).
            self.mark_dirty(self.workers[uid])
        self._enqueue(uid)

    # --- the work queue ------------------------------------------------------------
    def _submit(self, key: tuple, work) -> None:
        """Queue ``work()`` (once per key); the queue is drained a time slice at a time."""
        self._queue[key] = work
        if not self._drain_pending:
            self._drain_pending = True
            self._loop.call_soon(self._guarded, self._drain)

    def _drain(self) -> None:
        self._drain_pending = False
        deadline = time.perf_counter() + _SLICE
        while self._queue and time.perf_counter() < deadline:
            key = next(iter(self._queue))
            work = self._queue.pop(key)
            try:
                self._write(work)
            except Exception:  # noqa: BLE001 - one broken pod or node must not stop the node agent
                log.exception("kubelet: %s failed", key)
        if self._queue and not self._drain_pending:
            self._drain_pending = True
            self._loop.call_soon(self._guarded, self._drain)

    # --- nodes --------------------------------------------------------------------
    def _add_node(self, node: dict) -> None:
        name = node["metadata"]["name"]
        self.agents[name] = NodeAgent(self.api, self.recorder, self.lifecycle, self.catalog, node)
        spread = (zlib.crc32(name.encode()) % 1000) / 1000
        self._node_timers[name] = self._call_later(spread * min(_START_SPREAD, self.timings.lease_renew),
                                                   self._submit, ("start", name), lambda: self._start_node(name, spread))

    def _start_node(self, name: str, spread: float) -> None:
        agent = self.agents.get(name)
        if agent is None:
            return
        agent.start()
        for uid in self._by_node.get(name, ()):
            self._enqueue(uid)
        self._node_timers[name] = self._call_later(spread * self.timings.lease_renew or self.timings.lease_renew,
                                                   self._submit, ("tick", name), lambda: self._node_tick(name))
        ready_at = agent.next_network_check(self.api.clock())
        if ready_at is not None:
            self._call_later(ready_at - self.api.clock(), self._submit, ("status", name), agent.sync_status)

    def _remove_node(self, name: str) -> None:
        """The Node object is gone: this kubelet stops; its pods are left to the pod garbage collector."""
        self.agents.pop(name, None)
        handle = self._node_timers.pop(name, None)
        if handle is not None:
            handle.cancel()
        now = self.api.clock()
        for uid in list(self._by_node.pop(name, ())):
            worker = self.workers.pop(uid, None)
            if worker is not None:
                worker.stop_all(now)
                self._drop_timer(uid)

    def _node_tick(self, name: str) -> None:
        """Renew the Lease and sync the node status; the next tick is armed first, so a step that fails does not
        end the heartbeat (the kubelet's loops are wait.Until: an error waits for the next period)."""
        agent = self.agents.get(name)
        if agent is None:
            return
        self._node_timers[name] = self._call_later(self.timings.lease_renew, self._submit, ("tick", name),
                                                   lambda: self._node_tick(name))
        agent.renew_lease()
        agent.sync_status()

    # --- pods ---------------------------------------------------------------------
    def workers_on(self, node: str) -> list[PodWorker]:
        return [self.workers[uid] for uid in self._by_node.get(node, ()) if uid in self.workers]

    def wake(self, uid: str) -> None:
        """Sync a pod now (an attached session's input reached one of its programs)."""
        if uid in self.workers:
            self._enqueue(uid)

    def _enqueue(self, uid: str) -> None:
        self._submit(("pod", uid), lambda: self._sync_pod(uid))

    def _sync_pod(self, uid: str) -> None:
        worker = self.workers.get(uid)
        if worker is None or not self.agents[worker.node_name].started:
            return   # a node's pods run once its kubelet has started (_start_node queues them then)
        worker.sync(self.api.clock())
        if worker.deleted:
            self._forget(worker)
        else:
            self._arm(worker)

    def _arm(self, worker: PodWorker) -> None:
        self._drop_timer(worker.uid)
        if worker.computing:
            self.cpu.run(("pod", worker.uid), lambda: self._write(self._sync_pod, worker.uid))
        elif worker.next_wake is not None:
            self._timers[worker.uid] = self._call_later(worker.next_wake - self.api.clock(), self._enqueue, worker.uid)

    def _drop_timer(self, uid: str) -> None:
        handle = self._timers.pop(uid, None)
        if handle is not None:
            handle.cancel()

    def _forget(self, worker: PodWorker) -> None:
        self.workers.pop(worker.uid, None)
        self._by_node.get(worker.node_name, set()).discard(worker.uid)
        self._dirty.pop(worker.uid, None)
        self._drop_timer(worker.uid)
        self._forget_backoffs(worker)
        self.recorder.forget(worker.uid)

    def _forget_backoffs(self, worker: PodWorker) -> None:
        for run in worker.runs.values():
            self.crash_backoff.forget((worker.uid, run.name))
            key = f"{worker.uid}_{run.spec.get('image', '')}"
            self.pull_backoff.forget(key)
            self.pull_errors.pop(key, None)

    def mark_dirty(self, worker: PodWorker) -> None:
        self._dirty[worker.uid] = None
        if not self._flush_pending:
            self._flush_pending = True
            self._call_later(self.timings.status_flush, self._flush)

    def _flush(self) -> None:
        self._flush_pending = False
        now = self.api.clock()
        deadline = time.perf_counter() + _SLICE
        while self._dirty and time.perf_counter() < deadline:
            uid = next(iter(self._dirty))
            del self._dirty[uid]
            worker = self.workers.get(uid)
            if worker is not None and not worker.deleted:
                self._write(worker.write_status, now)
        if self._dirty and not self._flush_pending:
            self._flush_pending = True
            self._loop.call_soon(self._guarded, self._flush)

    def finish_deletion(self, worker: PodWorker) -> None:
        """All containers stopped: write the terminal phase, then confirm the deletion (grace period 0)."""
        worker.write_status(self.api.clock())
        try:
            self.api.delete("pods", worker.name, worker.namespace, grace_period_seconds=0,
                            preconditions={"uid": worker.uid})
        except ApiError as exc:
            if exc.code not in (404, 409):
                raise
        worker.deleted = True

    def _write(self, fn, *args):
        """Run a step that writes through the API without reacting to our own change notifications."""
        self._writing += 1
        try:
            return fn(*args)
        finally:
            self._writing -= 1

    # --- logs -----------------------------------------------------------------------
    def log_lines(self, uid: str, container: str, container_id: str) -> list[tuple[int, str]]:
        worker = self.workers.get(uid)
        run = worker.runs.get(container) if worker else None
        if run is None:
            return []
        for inst in (run.current, run.previous):
            if inst is not None and inst.id == container_id and inst.process is not None:
                return list(inst.process.log)
        return []
