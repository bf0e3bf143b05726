"""Watch streams: newline-delimited ``WatchEvent`` JSON over a chunked HTTP response.

Semantics follow staging/src/k8s.io/apiserver/pkg/storage/cacher and
endpoints/handlers/watch.go: no resourceVersion (or "0") starts with synthetic
ADDED events for the current state; a resourceVersion resumes after it, or
answers an ERROR event with 410 Expired when it is older than the history
kept; ``sendInitialEvents=true`` (WatchList, used by client-go informers)
sends the current state then a BOOKMARK annotated
``k8s.io/initial-events-end: "true"``; selectors turn MODIFIED events into
ADDED or DELETED when an object enters or leaves the selection.
"""
from __future__ import annotations

import asyncio
import base64
from typing import Callable

import orjson
from aiohttp import web

from ..api import Api
from ..registry import ResourceType
from ..store import Change

BOOKMARK_INTERVAL = 60.0


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


async def serve(request: web.Request, api: Api, rt: ResourceType, *, namespace, labels, fields, resource_version,
                send_initial_events: bool, allow_bookmarks: bool, timeout: float | None,
                encode: Callable[[dict, bool], dict], matches_labels, matches_fields) -> web.StreamResponse:
    """Stream a watch; ``encode(obj, first)`` turns a served object into what goes on the wire (e.g. a Table)."""
    from ..conversion import from_storage

    selected = _Filter(rt, namespace, labels, fields, matches_labels, matches_fields)
    queue: asyncio.Queue = asyncio.Queue()

    def listener(change: Change) -> None:
        if change.key == rt.storage_key:
            queue.put_nowait(change)

    store = api.store
    store.listen(listener)
    try:
        initial: list[tuple[str, dict]] = []
        bookmark_after_initial = False
        if send_initial_events or resource_version in (None, "", "0"):
            for obj in store.list(rt.storage_key, namespace if rt.namespaced else None):
                if selected(obj):
                    initial.append(("ADDED", obj))
            bookmark_after_initial = send_initial_events and allow_bookmarks
        else:
            try:
                since = int(resource_version)
            except ValueError:
                since = -1
            history = store.history_since(since) if since >= 0 else None
            if history is None:
                resp = await _start(request)
                status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                          "message": f"too old resource version: {resource_version} ({store.oldest_history_rv()})",
                          "reason": "Expired", "code": 410}
                await resp.write(orjson.dumps({"type": "ERROR", "object": status}) + b"\n")
                return resp
            for change in history:
                if change.key != rt.storage_key:
                    continue
                kind = classify(change, selected)
                if kind:
                    initial.append((kind, change.obj))
        resp = await _start(request)
        first = True
        for kind, obj in initial:
            await resp.write(_line(kind, encode(from_storage(rt, obj), first)))
            first = False
        if bookmark_after_initial:
            await resp.write(_line("BOOKMARK", _bookmark(rt, store.rv, initial_end=True)))
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
                    await resp.write(_line("BOOKMARK", _bookmark(rt, store.rv)))
                next_bookmark = loop.time() + BOOKMARK_INTERVAL
                continue
            try:
                change = await asyncio.wait_for(queue.get(), timeout=wait)
            except asyncio.TimeoutError:
                continue
            kind = classify(change, selected)
            if kind:
                await resp.write(_line(kind, encode(from_storage(rt, change.obj), first)))
                first = False
        return resp
    except (ConnectionResetError, asyncio.CancelledError):
        raise
    finally:
        store.unlisten(listener)


async def _start(request: web.Request) -> web.StreamResponse:
    resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    return resp


def _line(kind: str, obj: dict) -> bytes:
    return orjson.dumps({"type": kind, "object": obj}) + b"\n"


def _bookmark(rt: ResourceType, rv: int, *, initial_end: bool = False) -> dict:
    meta: dict = {"resourceVersion": str(rv), "creationTimestamp": None}
    if initial_end:
        blueprint = {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": {}, "items": []}
        meta["annotations"] = {
            "k8s.io/initial-events-end": "true",
            "kubernetes.io/initial-events-list-blueprint": base64.b64encode(orjson.dumps(blueprint)).decode(),
        }
    return {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta}
