"""Watch streams: newline-delimited ``WatchEvent`` JSON over a chunked HTTP response.

Semantics follow staging/src/k8s.io/apiserver/pkg/storage/cacher and
endpoints/handlers/watch.go: no resourceVersion (or "0") starts with synthetic
ADDED events for the current state; a resourceVersion resumes after it, or
answers an ERROR event with 410 Expired ``too old resource version: X (Y)``
when it is older than the history kept (:meth:`Store.watch_horizon` is Y); a
future resourceVersion waits for the events after it; ``sendInitialEvents=true`` (WatchList, used by client-go informers)
sends the current state then a BOOKMARK annotated
``k8s.io/initial-events-end: "true"``; selectors turn MODIFIED events into
ADDED or DELETED when an object enters or leaves the selection. Nothing is sent before it is durable
(:meth:`Store.make_durable`): etcd reports only committed revisions to its watchers.
"""
from __future__ import annotations

import asyncio
import base64
import collections
import logging
from typing import Callable

import orjson
from aiohttp import web

from .. import jsonio
from ..api import Api
from ..errors import ApiError, gone
from ..registry import ResourceType
from ..store import Change
from . import status, versions

log = logging.getLogger("gpulab.apiserver.watch")

BOOKMARK_INTERVAL = 60.0
# watch_cache.go suggestedWatchChannelSize: a watcher's channel holds at most 100 events without an index
# (maxWatchChanSizeWithoutIndex), 1,000 with one
MAX_PENDING_EVENTS = 100
WRITE_TIMEOUT = 60.0  # the apiserver's request timeout: no single write may wait longer for the client


class _Filter:
    def __init__(self, rt: ResourceType, namespace: str | None, labels, fields, matches_labels, matches_fields):
        self.rt, self.namespace = rt, namespace
        self.labels, self.fields = labels, fields
        self._ml, self._mf = matches_labels, matches_fields

    def __call__(self, obj: dict | None) -> bool:
        if obj is None:
            return False
        if self.namespace and obj["metadata"].get("namespace") != self.namespace:
            return False
        if self.labels and not self._ml(self.labels, obj["metadata"].get("labels")):
            return False
        return not self.fields or self._mf(self.fields, obj)


def classify(change: Change, selected: Callable[[dict | None], bool]) -> str | None:
    """The event type a filtered watcher sees for a change, or None to skip it."""
    now_in, was_in = selected(change.obj), selected(change.old)
    if change.type == "ADDED":
        return "ADDED" if now_in else None
    if change.type == "DELETED":
        return "DELETED" if (was_in or now_in) else None
    if now_in and was_in:
        return "MODIFIED"
    if now_in:
        return "ADDED"
    if was_in:
        return "DELETED"
    return None


async def serve(request: web.Request, api: Api, rt: ResourceType, *, namespace, labels, fields, resource_version: int,
                send_initial_events: bool, allow_bookmarks: bool, timeout: float | None,
                encode: Callable[[dict, bool], dict], matches_labels, matches_fields) -> web.StreamResponse:
    """Stream a watch from ``resource_version`` (0: the current state first); ``encode(obj, first)`` turns a
    served object into what goes on the wire (e.g. a Table)."""
    from ..conversion import from_storage

    selected = _Filter(rt, namespace, labels, fields, matches_labels, matches_fields)
    pending = _Pending()

    def listener(change: Change) -> None:
        if change.key == rt.storage_key and change.rv > resource_version:
            pending.put(change)

    store = api.store
    store.listen(listener)
    try:
        initial: list[tuple[str, dict]] = []
        bookmark_after_initial = False
        if send_initial_events or resource_version == 0:
            if resource_version > store.rv:
                try:
                    await versions.wait_until_fresh(store, resource_version)
                except ApiError as err:
                    return await _error_event(request, err)
            for obj in store.list(rt.storage_key, namespace if rt.namespaced else None):
                if selected(obj):
                    initial.append(("ADDED", obj))
            bookmark_after_initial = send_initial_events and allow_bookmarks
            pending.clear()  # the current state already holds them
        else:
            history = store.history_since(resource_version)
            if history is None:
                return await _error_event(request, gone(
                    f"too old resource version: {resource_version} ({store.watch_horizon()})"))
            for change in history:
                if change.key != rt.storage_key:
                    continue
                kind = classify(change, selected)
                if kind:
                    initial.append((kind, change.obj))
            pending.clear()  # the history already holds them
        store.make_durable(store.rv)   # what follows is all committed: a crash cannot take it back
        resp = await _start(request)
        first = True
        for kind, obj in initial:
            await _send(request, resp, _line(kind, encode(from_storage(rt, obj), first)))
            first = False
        if bookmark_after_initial:
            store.make_durable(store.rv)
            await _send(request, resp, _line("BOOKMARK", _bookmark(rt, store.rv, initial_end=True)))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout if timeout else None
        next_bookmark = loop.time() + BOOKMARK_INTERVAL
        while True:
            wait = next_bookmark - loop.time()
            if deadline is not None:
                wait = min(wait, deadline - loop.time())
            if wait <= 0:
                if deadline is not None and loop.time() >= deadline:
                    break
                if allow_bookmarks:
                    store.make_durable(store.rv)
                    await _send(request, resp, _line("BOOKMARK", _bookmark(rt, store.rv)))
                next_bookmark = loop.time() + BOOKMARK_INTERVAL
                continue
            change = await pending.get(wait)
            if change is _OVERFLOW:
                log.info("closing a %s watcher that does not keep up (%d events behind)", rt.storage_key,
                         MAX_PENDING_EVENTS)
                break
            if change is None:
                continue
            kind = classify(change, selected)
            if kind:
                store.make_durable(change.rv)
                await _send(request, resp, _line(kind, encode(from_storage(rt, change.obj), first)))
                first = False
        return resp
    except ConnectionResetError:
        # The client went away mid-write: one line, and the stream ends, as the watch handler's serve loop does
        # when a write fails (endpoints/handlers/watch.go: HandleError, then "client disconnect"); aiohttp then
        # finds the connection gone and logs nothing more.
        log.info("unable to encode watch object *v1.WatchEvent: write: connection reset by peer")
        return web.Response()
    finally:
        store.unlisten(listener)


class _Pending:
    """Changes a watcher has yet to send, at most MAX_PENDING_EVENTS of them.

    A watcher whose client stops reading falls behind; kube-apiserver's cacher then closes it rather than
    buffer without end (cacher/cache_watcher.go ``add``: "Forcing ... watcher close due to
    unresponsiveness"). Here the queue stops growing and the watcher ends its stream after what it was
    writing, and the connection's write watchdog (:mod:`.listener`) drops a client that never reads again.
    """

    def __init__(self):
        self._items: collections.deque = collections.deque()
        self._ready = asyncio.Event()
        self._overflowed = False

    def put(self, change: Change) -> None:
        if self._overflowed:
            return
        if len(self._items) >= MAX_PENDING_EVENTS:
            self._overflowed = True
            self._items.clear()  # drop the references: the objects may be large
        else:
            self._items.append(change)
        self._ready.set()

    def clear(self) -> None:
        self._items.clear()

    async def get(self, wait: float):
        """The next change, :data:`_OVERFLOW` once the watcher fell too far behind, or None after ``wait``."""
        if not self._items and not self._overflowed:
            self._ready.clear()
            try:
                await asyncio.wait_for(self._ready.wait(), timeout=wait)
            except asyncio.TimeoutError:
                return None
        if self._overflowed:
            return _OVERFLOW
        return self._items.popleft() if self._items else None


_OVERFLOW = object()


async def _error_event(request: web.Request, err: ApiError) -> web.StreamResponse:
    """A watch that fails after it was accepted: one ERROR event carrying the Status (cacher newErrWatcher)."""
    resp = await _start(request)
    await resp.write(b'{"type":"ERROR","object":' + status.encode(err.status()).rstrip(b"\n") + b"}\n")
    return resp


async def _send(request: web.Request, resp: web.StreamResponse, data: bytes) -> None:
    """Write an event; a client that has read nothing for WRITE_TIMEOUT seconds is disconnected."""
    try:
        await asyncio.wait_for(resp.write(data), WRITE_TIMEOUT)
    except asyncio.TimeoutError:
        log.info("disconnecting a watch client that has read nothing for %gs", WRITE_TIMEOUT)
        if request.transport is not None:
            request.transport.abort()
        raise ConnectionResetError("the watch client stopped reading") from None


async def _start(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    return resp


def _line(kind: str, obj: dict) -> bytes:
    return jsonio.dumps({"type": kind, "object": obj}) + b"\n"


def _bookmark(rt: ResourceType, rv: int, *, initial_end: bool = False) -> dict:
    meta: dict = {"resourceVersion": str(rv), "creationTimestamp": None}
    if initial_end:
        blueprint = {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": {}, "items": []}
        meta["annotations"] = {
            "k8s.io/initial-events-end": "true",
            "kubernetes.io/initial-events-list-blueprint": base64.b64encode(orjson.dumps(blueprint)).decode(),
        }
    return {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta}
