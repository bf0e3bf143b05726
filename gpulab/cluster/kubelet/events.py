"""The kubelet's event recorder: events about pods, their containers and nodes, from ``kubelet`` on a host.

Container events name the container in ``involvedObject.fieldPath`` (``spec.containers{nginx}``,
kubecontainer.GenerateContainerRef), which ``kubectl describe pod`` (v1.35+) prints before the
message; node events refer to the node by name with the name as UID, as the kubelet's nodeRef does
(pkg/kubelet/kubelet.go). Repeats are aggregated like client-go's EventCorrelator: the same source,
object, field path, type, reason and message bump ``count`` and ``lastTimestamp`` of one Event.
``Api.record_event`` has no field path, hence this recorder.
"""
from __future__ import annotations

import time

from ..api import Api
from ..errors import ApiError
from ..objects import clone, rfc3339

COMPONENT = "kubelet"


def container_field_path(pod: dict, container: str) -> str:
    spec = pod.get("spec") or {}
    for c in spec.get("initContainers") or ():
        if c["name"] == container:
            return f"spec.initContainers{{{container}}}"
    for c in spec.get("ephemeralContainers") or ():
        if c["name"] == container:
            return f"spec.ephemeralContainers{{{container}}}"
    return f"spec.containers{{{container}}}"


class Recorder:
    def __init__(self, api: Api):
        self.api = api
        # involved object UID -> aggregation key -> (namespace, event name)
        self._seen: dict[str, dict[tuple, tuple[str, str]]] = {}

    def pod(self, pod: dict, type_: str, reason: str, message: str, container: str | None = None) -> None:
        meta = pod["metadata"]
        ref = {"kind": "Pod", "namespace": meta.get("namespace", "default"), "name": meta["name"],
               "uid": meta["uid"], "apiVersion": "v1", "resourceVersion": meta.get("resourceVersion", "")}
        if container:
            ref["fieldPath"] = container_field_path(pod, container)
        self._record(ref, meta.get("namespace") or "default", pod["spec"].get("nodeName", ""), type_, reason,
                     message)

    def node(self, node_name: str, type_: str, reason: str, message: str) -> None:
        ref = {"kind": "Node", "name": node_name, "uid": node_name}
        self._record(ref, "default", node_name, type_, reason, message)

    def _record(self, ref: dict, namespace: str, host: str, type_: str, reason: str, message: str) -> None:
        key = (host, ref["kind"], ref.get("namespace"), ref["name"], ref.get("fieldPath"), type_, reason, message)
        stamp = rfc3339(self.api.clock())
        seen = self._seen.get(ref["uid"], {}).get(key)
        if seen is not None:
            event = self.api.store.get("events", *seen)
            if event is not None:
                updated = clone(event)
                updated["count"] = int(event.get("count", 1)) + 1
                updated["lastTimestamp"] = stamp
                try:
                    self.api.update("events", updated, seen[0])
                    return
                except ApiError:
                    pass
        event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{ref['name']}.{time.time_ns():x}", "namespace": namespace},
            "involvedObject": ref, "reason": reason, "message": message,
            "source": {"component": COMPONENT, "host": host} if host else {"component": COMPONENT},
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1, "type": type_, "eventTime": None,
            "reportingComponent": COMPONENT, "reportingInstance": host,
        }
        try:
            created = self.api.create("events", event, namespace)
        except ApiError:
            return  # events are best effort, as in client-go
        self._seen.setdefault(ref["uid"], {})[key] = (namespace, created["metadata"]["name"])

    def forget(self, uid: str) -> None:
        """Drop the aggregation keys of an object that is gone (bounded memory at scale)."""
        self._seen.pop(uid, None)
