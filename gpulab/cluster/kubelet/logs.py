"""``kubectl logs``: what the kubelet's containerLogs endpoint answers, served from the emulated runtime.

Errors are the kubelet's (pkg/kubelet/kubelet_pods.go validateContainerLogStatus), answered as
``400 BadRequest`` as the kube-apiserver relays them: ``container "x" in pod "y" is waiting to start:
ContainerCreating``, ``... image can't be pulled``, ``previous terminated container "x" in pod "y" not
found``. Options follow PodLogOptions (``tailLines``, ``timestamps`` with RFC3339Nano prefixes,
``sinceSeconds``/``sinceTime``, ``limitBytes``, ``previous``); a pod not yet on a node has no logs.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import bad_request
from ..gofmt import rfc3339_nano
from ..objects import parse_time
from .shell.octets import to_bytes, to_text

if TYPE_CHECKING:
    from .kubelet import Kubelet


def _status_of(pod: dict, container: str) -> dict | None:
    status = pod.get("status") or {}
    for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        for cs in status.get(key) or ():
            if cs.get("name") == container:
                return cs
    return None


def container_id_for_logs(pod: dict, container: str, previous: bool) -> str:
    """validateContainerLogStatus: the container ID whose log to read, or the error the kubelet gives."""
    name = pod["metadata"]["name"]
    cs = _status_of(pod, container)
    if cs is None:
        raise bad_request(f'container "{container}" in pod "{name}" is not available')
    last = (cs.get("lastState") or {}).get("terminated")
    state = cs.get("state") or {}
    if previous:
        if not last or not last.get("containerID"):
            raise bad_request(f'previous terminated container "{container}" in pod "{name}" not found')
        return last["containerID"]
    if "running" in state:
        return cs.get("containerID", "")
    if "terminated" in state:
        cid = state["terminated"].get("containerID") or (last or {}).get("containerID")
        if not cid:
            raise bad_request(f'container "{container}" in pod "{name}" is terminated')
        return cid
    if last is not None:
        if not last.get("containerID"):
            raise bad_request(f'container "{container}" in pod "{name}" is terminated')
        return last["containerID"]
    if "waiting" in state:
        reason = state["waiting"].get("reason", "")
        if reason == "ErrImagePull":
            raise bad_request(f'container "{container}" in pod "{name}" is waiting to start: image can\'t be pulled')
        if reason == "ImagePullBackOff":
            raise bad_request(f'container "{container}" in pod "{name}" is waiting to start: trying and failing to '
                              f"pull image")
        raise bad_request(f'container "{container}" in pod "{name}" is waiting to start: {reason}')
    raise bad_request(f'container "{container}" in pod "{name}" is waiting to start - no logs yet')


class LogProvider:
    """``api.log_provider``: fn(pod, container, opts) -> str."""

    def __init__(self, kubelet: "Kubelet"):
        self.kubelet = kubelet

    def __call__(self, pod: dict, container: str, opts: dict) -> str:
        if not (pod.get("spec") or {}).get("nodeName"):
            return ""
        cid = container_id_for_logs(pod, container, _flag(opts.get("previous")))
        lines = self.kubelet.log_lines(pod["metadata"]["uid"], container, cid.removeprefix("containerd://"))
        since = None
        if opts.get("sinceSeconds") not in (None, ""):
            since = self.kubelet.api.clock() - int(opts["sinceSeconds"])
        elif opts.get("sinceTime"):
            since = parse_time(opts["sinceTime"])
        if since is not None:
            lines = [(ns, text) for ns, text in lines if ns >= since * 1e9]
        tail = opts.get("tailLines")
        if tail not in (None, "") and int(tail) >= 0:
            lines = lines[-int(tail):] if int(tail) else []
        stamps = _flag(opts.get("timestamps"))
        out = "".join((f"{rfc3339_nano(ns)} " if stamps else "") + text + "\n" for ns, text in lines)
        limit = opts.get("limitBytes")
        if limit not in (None, ""):
            out = to_text(to_bytes(out)[: int(limit)])
        return out


def _flag(value) -> bool:
    return value is True or (isinstance(value, str) and value.lower() in ("true", "1"))
