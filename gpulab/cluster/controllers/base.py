"""The controller pattern of kube-controller-manager, in asyncio: watch, queue keys, reconcile.

Like client-go's workqueue, a key waits in the queue at most once however many
changes arrive for it, a key being processed is not processed again in
parallel, and a failed reconcile is retried with exponential backoff
(5 ms doubling to 1000 s in client-go; here capped at 30 s so a lab never
waits long for a retry).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Hashable

from ..api import Api
from ..errors import ApiError

log = logging.getLogger("gpulab.controllers")


class WorkQueue:
    """Deduplicating queue of keys with delayed adds."""

    def __init__(self) -> None:
        self._order: list[Hashable] = []
        self._queued: set[Hashable] = set()
        self._processing: set[Hashable] = set()
        self._dirty_while_processing: set[Hashable] = set()
        self._ready = asyncio.Event()
        self._timers: dict[Hashable, asyncio.TimerHandle] = {}

    def add(self, key: Hashable) -> None:
        if key in self._processing:
            self._dirty_while_processing.add(key)
            return
        if key in self._queued:
            return
        self._queued.add(key)
        self._order.append(key)
        self._ready.set()

    def add_after(self, key: Hashable, delay: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        old = self._timers.pop(key, None)
        loop = asyncio.get_running_loop()
        when = loop.time() + delay
        if old is not None and old.when() < when:
            self._timers[key] = old
            return
        if old is not None:
            old.cancel()
        self._timers[key] = loop.call_at(when, self._fire, key)

    def _fire(self, key: Hashable) -> None:
        self._timers.pop(key, None)
        self.add(key)

    async def get(self) -> Hashable:
        while not self._order:
            self._ready.clear()
            await self._ready.wait()
        key = self._order.pop(0)
        self._queued.discard(key)
        self._processing.add(key)
        return key

    def done(self, key: Hashable) -> None:
        self._processing.discard(key)
        if key in self._dirty_while_processing:
            self._dirty_while_processing.discard(key)
            self.add(key)

    def __len__(self) -> int:
        return len(self._order)


class Controller:
    """Subclasses set ``watches`` (storage keys) and implement :meth:`reconcile`.

    ``keys_for(key, obj)`` maps a changed object to the work keys it affects
    (by default its own ``(namespace, name)``); ``reconcile(work_key)`` returns
    None when done or a delay in seconds to look again.
    """

    name = "controller"
    watches: tuple[str, ...] = ()

    def __init__(self, api: Api):
        self.api = api
        self.queue = WorkQueue()
        self._failures: dict[Hashable, int] = {}

    def keys_for(self, key: str, obj: dict) -> list[Hashable]:
        m = obj["metadata"]
        return [(m.get("namespace", ""), m["name"])]

    def initial_keys(self) -> list[Hashable]:
        keys: list[Hashable] = []
        for key in self.watches[:1]:
            for obj in self.api.store.list(key):
                keys.extend(self.keys_for(key, obj))
        return keys

    async def reconcile(self, work_key) -> float | None:
        raise NotImplementedError

    def _on_change(self, key: str):
        def handler(event_type: str, obj: dict, old: dict | None) -> None:
            for k in self.keys_for(key, obj):
                self.queue.add(k)
        return handler

    async def run(self) -> None:
        for key in self.watches:
            self.api.subscribe(key, self._on_change(key))
        for k in self.initial_keys():
            self.queue.add(k)
        while True:
            work_key = await self.queue.get()
            try:
                again = await self.reconcile(work_key)
                self._failures.pop(work_key, None)
                if again is not None:
                    self.queue.add_after(work_key, again)
            except ApiError as exc:
                self._retry(work_key, exc)
            except Exception:  # noqa: BLE001 - one bad object must not stop the controller
                log.exception("%s: reconciling %s failed", self.name, work_key)
                self._retry(work_key, None)
            finally:
                self.queue.done(work_key)
            await asyncio.sleep(0)

    def _retry(self, work_key, exc: ApiError | None) -> None:
        n = self._failures.get(work_key, 0) + 1
        self._failures[work_key] = n
        if exc is not None and exc.code == 404:
            return
        self.queue.add_after(work_key, min(30.0, 0.005 * 2 ** n))
