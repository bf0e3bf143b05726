"""List-and-watch caches and a work queue: client-go's informer and workqueue, reduced to what the stack needs.

Every emulated component (the operator, NFD, GFD, the device plugin, the MIG
manager) reacts to changes of a handful of kinds; like controller-runtime they
share one cache per kind, fed by a watch, and turn changes into keys on a
de-duplicating queue that one worker drains. A watch lasts ``RESYNC_SECONDS``
and is then re-opened from the last resourceVersion, so an idle cluster costs
one request per kind every half minute, never a polling loop. A ``410 Gone``
(the resourceVersion left the server's window) re-lists, as client-go's
reflector does.

Hand-written because the official Python client has the watch but no informer.
"""
from __future__ import annotations

import heapq
import logging
import threading
import time
from typing import Callable, Hashable

from urllib3.exceptions import HTTPError

from ..kubeclient import ApiException, Kube, Resource

log = logging.getLogger("gpulab.gpustack.informer")

RESYNC_SECONDS = 30
RETRY_SECONDS = 2.0

Handler = Callable[[str, dict, "dict | None"], None]


def object_key(obj: dict) -> tuple[str, str]:
    meta = obj["metadata"]
    return meta.get("namespace", ""), meta["name"]


class Informer:
    """A thread keeping ``store`` equal to the server's objects of one kind, calling ``handler`` on changes."""

    def __init__(self, kube: Kube, resource: Resource, handler: Handler, *, namespace: str | None = None,
                 label_selector: str | None = None, stop: threading.Event):
        self.kube = kube
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.handler = handler
        self.stop = stop
        self.store: dict[tuple[str, str], dict] = {}
        self.synced = threading.Event()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, name=f"informer-{resource.plural}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def items(self) -> list[dict]:
        with self.lock:
            return list(self.store.values())

    def get(self, name: str, namespace: str = "") -> dict | None:
        with self.lock:
            return self.store.get((namespace, name))

    def _run(self) -> None:
        version: str | None = None
        while not self.stop.is_set():
            try:
                if version is None:
                    version = self._relist()
                for event in self.kube.watch(self.resource, version, namespace=self.namespace,
                                             label_selector=self.label_selector, timeout_seconds=RESYNC_SECONDS):
                    if self.stop.is_set():
                        return
                    version = self._apply(event) or version
            except ApiException as exc:
                if exc.status == 410:
                    version = None
                    continue
                log.debug("watch of %s failed: %s", self.resource.plural, exc)
                self.stop.wait(RETRY_SECONDS if exc.status != 404 else RESYNC_SECONDS / 3)
            except (HTTPError, OSError, ValueError) as exc:
                log.debug("watch of %s interrupted: %s", self.resource.plural, exc)
                version = None
                self.stop.wait(RETRY_SECONDS)

    def _relist(self) -> str:
        listed = self.kube.list(self.resource, self.namespace, label_selector=self.label_selector)
        fresh = {object_key(o): o for o in listed.get("items") or []}
        with self.lock:
            old = self.store
            self.store = fresh
        for key, obj in fresh.items():
            self.handler("ADDED" if key not in old else "MODIFIED", obj, old.get(key))
        for key, obj in old.items():
            if key not in fresh:
                self.handler("DELETED", obj, obj)
        self.synced.set()
        return listed["metadata"]["resourceVersion"]

    def _apply(self, event: dict) -> str | None:
        kind = event.get("type")
        obj = event.get("raw_object") or event.get("object")
        if not isinstance(obj, dict):
            return None
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if kind == "BOOKMARK":
            return version
        if kind == "ERROR":
            raise ApiException(status=obj.get("code", 500), reason=obj.get("message", ""))
        key = object_key(obj)
        with self.lock:
            old = self.store.get(key)
            if kind == "DELETED":
                self.store.pop(key, None)
            else:
                self.store[key] = obj
        self.handler(kind, obj, old)
        return version


class WorkQueue:
    """Keys to reconcile, each at most once in the queue, some of them after a delay."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._ready: list[Hashable] = []
        self._queued: set[Hashable] = set()
        self._later: list[tuple[float, int, Hashable]] = []
        self._counter = 0

    def add(self, key: Hashable) -> None:
        with self._cond:
            if key not in self._queued:
                self._queued.add(key)
                self._ready.append(key)
                self._cond.notify()

    def add_after(self, key: Hashable, delay: float) -> None:
        with self._cond:
            self._counter += 1
            heapq.heappush(self._later, (time.monotonic() + delay, self._counter, key))
            self._cond.notify()

    def get(self, stop: threading.Event, idle: float = 1.0) -> Hashable | None:
        """The next key, or None after ``idle`` seconds (so the caller can notice ``stop``)."""
        with self._cond:
            deadline = time.monotonic() + idle
            while not stop.is_set():
                now = time.monotonic()
                while self._later and self._later[0][0] <= now:
                    _, _, key = heapq.heappop(self._later)
                    if key not in self._queued:
                        self._queued.add(key)
                        self._ready.append(key)
                if self._ready:
                    key = self._ready.pop(0)
                    self._queued.discard(key)
                    return key
                wait = deadline - now
                if self._later:
                    wait = min(wait, self._later[0][0] - now)
                if wait <= 0:
                    return None
                self._cond.wait(wait)
            return None
