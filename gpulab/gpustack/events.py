"""Kubernetes Events as the emulated NVIDIA components record them (client-go's ``EventRecorder`` shape).

A core/v1 Event named ``<object>.<hex of the creation time in ns>`` (client-go
``makeEvent``), in the object's namespace (``default`` for cluster-scoped
objects such as Nodes), with ``source.component``,
``reportingComponent`` and counts as client-go's recorder writes them; a
repeat of the same reason and message on the same object bumps ``count``
instead of adding an Event (the recorder's aggregation).

The name matters for order: Event timestamps have whole seconds, and
``kubectl events`` sorts by them with a sort that keeps the list's order among
equal times only when that order is already sorted; the API lists by name, so
time-ordered names keep one second's events (a driver upgrade's states) in the
order they happened.
"""
from __future__ import annotations

import logging
import time
from datetime import datetime, timezone

from ..kubeclient import ApiException

from .. import kubeclient

log = logging.getLogger("gpulab.gpustack.events")


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Recorder:
    """Records events for one component; remembers what it wrote to aggregate repeats."""

    def __init__(self, kube: kubeclient.Kube, component: str):
        self.kube = kube
        self.component = component
        self._seen: dict[tuple, tuple[str, str, int]] = {}

    def event(self, obj: dict, type_: str, reason: str, message: str, host: str | None = None) -> None:
        meta = obj["metadata"]
        namespace = meta.get("namespace") or "default"
        key = (obj.get("kind"), namespace, meta["name"], meta.get("uid"), type_, reason, message)
        now = _now()
        try:
            if key in self._seen:
                name, ns, count = self._seen[key]
                self.kube.patch(kubeclient.EVENTS, name, {"count": count + 1, "lastTimestamp": now}, ns)
                self._seen[key] = (name, ns, count + 1)
                return
            name = f"{meta['name']}.{time.time_ns():x}"
            source = {"component": self.component}
            if host:
                source["host"] = host
            self.kube.create(kubeclient.EVENTS, {
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"name": name, "namespace": namespace},
                "involvedObject": {"apiVersion": obj.get("apiVersion", "v1"), "kind": obj.get("kind"),
                                   "name": meta["name"], "namespace": meta.get("namespace"),
                                   "uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")},
                "reason": reason, "message": message, "type": type_, "source": source,
                "firstTimestamp": now, "lastTimestamp": now, "count": 1,
                "reportingComponent": self.component, "reportingInstance": host or "",
            }, namespace)
            self._seen[key] = (name, namespace, 1)
        except ApiException as exc:
            log.debug("cannot record event %s on %s: %s", reason, meta["name"], exc)
        if len(self._seen) > 4096:
            self._seen.clear()
