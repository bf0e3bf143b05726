"""Object storage for the embedded API server: in memory for speed, SQLite on disk for durability.

kube-apiserver keeps objects in etcd and serves reads from a watch cache; here
every object lives in a dict (the "cache") and every write is also written to
SQLite in WAL mode with ``synchronous=FULL``. Writes are grouped: they go into
an open transaction and :meth:`Store.commit` makes them durable. The HTTP layer
calls ``commit`` before it acknowledges a client's write, so a ``kill -9`` of
the server never loses an acknowledged write; writes made by in-process
controllers are committed at most ``FLUSH_INTERVAL`` later (a crash can lose
those, and the controllers redo them on restart, as they would after a
kube-controller-manager restart).

A change reaches watchers only once it is durable (:meth:`Store.make_durable`, called by the watch
streams before they send it), as etcd's watchers see only committed revisions: a watcher never sees a
resourceVersion that a crash then takes back and gives to another write.

The global ``resourceVersion`` is a counter, like etcd's revision. A window of
recent changes lets a watch resume from an older resourceVersion; older than
the window gives ``410 Gone``, as the watch cache does
(staging/src/k8s.io/apiserver/pkg/storage/cacher/watch_cache.go). The window
is bounded by count, as upstream's (at most 100 * 1024 events), and by the
serialized size of the objects it holds (HISTORY_MAX_BYTES), so repeated
writes of large objects cannot grow it without end; a change's ``old`` object
is usually the previous change's, so the memory held stays within about twice
that figure.

The database and its journal files are created readable by the owner only:
Secrets are stored in clear, as etcd stores them without an encryption
provider.
"""
from __future__ import annotations

import collections
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import orjson

from . import jsonio

HISTORY_MAX_EVENTS = 100 * 1024  # watch_cache.go defaultUpperBoundCapacity
HISTORY_MAX_BYTES = 16 * 1024 * 1024


@dataclass(slots=True)
class Change:
    """One committed change: ``type`` is ADDED, MODIFIED or DELETED."""

    rv: int
    key: str
    type: str
    obj: dict
    old: dict | None
    size: int = 0  # bytes of ``obj`` serialized, for the history's bound


class CorruptStateError(RuntimeError):
    """The state database cannot be read."""


class Store:
    """Objects by storage key, then by (namespace, name)."""

    def __init__(self, db_path: Path | None = None):
        self._objects: dict[str, dict[tuple[str, str], dict]] = collections.defaultdict(dict)
        self._history: collections.deque[Change] = collections.deque()
        self._history_bytes = 0
        self._horizon = 0  # the oldest resourceVersion a watch can resume from
        self.evicted_bytes = 0  # serialized bytes dropped from the history so far (a hint to return memory)
        self._listeners: list[Callable[[Change], None]] = []
        self._indexes: dict[str, dict[str, Callable[[dict], str | None]]] = {}
        self._index_data: dict[tuple[str, str], dict[str, dict[tuple[str, str], dict]]] = {}
        self.rv = 0
        self.durable_rv = 0  # every change up to this resourceVersion is on disk
        self._db: sqlite3.Connection | None = None
        self._dirty = False
        if db_path is not None:
            self._open(db_path)

    # --- persistence ------------------------------------------------------
    def _open(self, path: Path) -> None:
        try:
            # Created 0600 before SQLite opens it; SQLite gives the -wal and -shm files the same mode.
            os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
            db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.execute("CREATE TABLE IF NOT EXISTS objects (key TEXT NOT NULL, namespace TEXT NOT NULL, "
                       "name TEXT NOT NULL, data BLOB NOT NULL, PRIMARY KEY (key, namespace, name))")
            db.execute("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL)")
            row = db.execute("SELECT v FROM meta WHERE k='rv'").fetchone()
            self.rv = int(row[0]) if row else 0
            for key, ns, name, data in db.execute("SELECT key, namespace, name, data FROM objects"):
                self._objects[key][(ns, name)] = jsonio.loads(data)
        except (sqlite3.DatabaseError, orjson.JSONDecodeError, ValueError) as exc:
            raise CorruptStateError(f"{path}: {exc}") from exc
        self._db = db
        self._horizon = self.durable_rv = self.rv
        for key, objs in self._objects.items():
            for obj in objs.values():
                self._index_add(key, obj)

    def _begin(self) -> None:
        if self._db is not None and not self._dirty:
            self._db.execute("BEGIN")
            self._dirty = True

    def commit(self) -> None:
        """Make every write so far durable (one fsync for the whole group)."""
        if self._db is not None and self._dirty:
            self._db.execute("INSERT OR REPLACE INTO meta (k, v) VALUES ('rv', ?)", (str(self.rv),))
            self._db.execute("COMMIT")
            self._dirty = False
        self.durable_rv = self.rv

    def make_durable(self, rv: int) -> None:
        """Before a change at ``rv`` is shown to a watcher: commit, unless it is on disk already."""
        if rv > self.durable_rv:
            self.commit()

    def ping(self) -> None:
        """Raise if the database does not answer (the health checks' ``etcd``)."""
        if self._db is not None:
            self._db.execute("SELECT 1").fetchone()

    def close(self) -> None:
        if self._db is not None:
            self.commit()
            self._db.close()
            self._db = None

    # --- reads ------------------------------------------------------------
    def get(self, key: str, namespace: str, name: str) -> dict | None:
        return self._objects[key].get((namespace, name))

    def list(self, key: str, namespace: str | None = None) -> list[dict]:
        """Objects in etcd key order (namespace, then name)."""
        items = self._objects[key]
        if namespace:
            return [items[k] for k in sorted(k for k in items if k[0] == namespace)]
        return [items[k] for k in sorted(items)]

    def count(self, key: str) -> int:
        return len(self._objects[key])

    def keys(self) -> Iterable[str]:
        return list(self._objects)

    def history_since(self, rv: int) -> list[Change] | None:
        """Changes after ``rv``; None when ``rv`` is older than the history kept (410 Gone)."""
        if rv >= self.rv:
            return []
        if rv < self._horizon:
            return None
        newer = []
        for change in reversed(self._history):
            if change.rv <= rv:
                break
            newer.append(change)
        newer.reverse()
        return newer

    def watch_horizon(self) -> int:
        """The oldest resourceVersion a watch can resume from: the watch cache's ``oldest - 1``, which its
        410 names (``too old resource version: 5 (120)``)."""
        return self._horizon

    @property
    def history_bytes(self) -> int:
        """Serialized bytes of the objects the history holds (at most HISTORY_MAX_BYTES, or one change)."""
        return self._history_bytes

    # --- indexes (e.g. pods by spec.nodeName) ----------------------------
    def add_index(self, key: str, index_name: str, fn: Callable[[dict], str | None]) -> None:
        self._indexes.setdefault(key, {})[index_name] = fn
        data: dict[str, dict[tuple[str, str], dict]] = {}
        for obj_key, obj in self._objects[key].items():
            value = fn(obj)
            if value is not None:
                data.setdefault(value, {})[obj_key] = obj
        self._index_data[(key, index_name)] = data

    def by_index(self, key: str, index_name: str, value: str) -> list[dict]:
        bucket = self._index_data[(key, index_name)].get(value, {})
        return [bucket[k] for k in sorted(bucket)]

    def has_index(self, key: str, index_name: str) -> bool:
        return (key, index_name) in self._index_data

    def _index_add(self, key: str, obj: dict) -> None:
        for index_name, fn in self._indexes.get(key, {}).items():
            value = fn(obj)
            if value is not None:
                m = obj["metadata"]
                self._index_data[(key, index_name)].setdefault(value, {})[(m.get("namespace", ""), m["name"])] = obj

    def _index_remove(self, key: str, obj: dict) -> None:
        for index_name, fn in self._indexes.get(key, {}).items():
            value = fn(obj)
            if value is not None:
                m = obj["metadata"]
                bucket = self._index_data[(key, index_name)].get(value)
                if bucket is not None:
                    bucket.pop((m.get("namespace", ""), m["name"]), None)

    # --- writes -----------------------------------------------------------
    def next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def put(self, key: str, obj: dict, old: dict | None) -> Change:
        """Store ``obj`` (whose metadata.resourceVersion the caller set from :meth:`next_rv`)."""
        m = obj["metadata"]
        ident = (m.get("namespace", "") or "", m["name"])
        if old is not None:
            self._index_remove(key, old)
        self._objects[key][ident] = obj
        self._index_add(key, obj)
        data = jsonio.dumps(obj)
        if self._db is not None:
            self._begin()
            self._db.execute("INSERT OR REPLACE INTO objects (key, namespace, name, data) VALUES (?, ?, ?, ?)",
                             (key, ident[0], ident[1], data))
        return self._emit(Change(int(m["resourceVersion"]), key, "ADDED" if old is None else "MODIFIED", obj, old,
                                 len(data)))

    def remove(self, key: str, obj: dict) -> Change:
        """Delete ``obj``; the DELETED event carries it with a fresh resourceVersion, as etcd3 storage does."""
        m = obj["metadata"]
        ident = (m.get("namespace", "") or "", m["name"])
        old = self._objects[key].pop(ident, None)
        if old is not None:
            self._index_remove(key, old)
        if self._db is not None:
            self._begin()
            self._db.execute("DELETE FROM objects WHERE key=? AND namespace=? AND name=?", (key, *ident))
        return self._emit(Change(int(m["resourceVersion"]), key, "DELETED", obj, old, len(jsonio.dumps(obj))))

    # --- change notification ---------------------------------------------
    def listen(self, fn: Callable[[Change], None]) -> None:
        self._listeners.append(fn)

    def unlisten(self, fn: Callable[[Change], None]) -> None:
        if fn in self._listeners:
            self._listeners.remove(fn)

    def _emit(self, change: Change) -> Change:
        self._remember(change)
        for fn in list(self._listeners):
            fn(change)
        return change

    def _remember(self, change: Change) -> None:
        """Append to the history, dropping its oldest changes past either bound (the newest always stays)."""
        history = self._history
        history.append(change)
        self._history_bytes += change.size
        while len(history) > 1 and (len(history) > HISTORY_MAX_EVENTS or self._history_bytes > HISTORY_MAX_BYTES):
            dropped = history.popleft()
            self._history_bytes -= dropped.size
            self.evicted_bytes += dropped.size
            self._horizon = history[0].rv - 1
