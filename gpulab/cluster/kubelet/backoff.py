"""client-go's ``flowcontrol.Backoff``: the per-key exponential back-off of crash loops and image pulls.

The kubelet keeps one for restarting containers (key: pod, container) and one for pulls (key:
pod UID and image), both 10 s doubling to 300 s (pkg/kubelet/kubelet.go). An entry idle for twice the
maximum starts over. Durations are kept as the kubelet states them (for messages such as
``back-off 20s restarting failed container=...``); ``scale`` shortens the real waits for tests.
Port of k8s.io/client-go/util/flowcontrol/backoff.go (no jitter: the kubelet configures none).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class _Entry:
    backoff: float
    last_update: float


class Backoff:
    def __init__(self, initial: float, maximum: float, scale: float = 1.0):
        self.initial, self.maximum, self.scale = initial, maximum, scale
        self._entries: dict[object, _Entry] = {}

    def _expired(self, event_time: float, entry: _Entry) -> bool:
        return event_time - entry.last_update > self.maximum * 2 * self.scale

    def next(self, key, event_time: float, now: float) -> None:
        entry = self._entries.get(key)
        if entry is None or self._expired(event_time, entry):
            entry = self._entries[key] = _Entry(self.initial, now)
        else:
            entry.backoff = min(entry.backoff * 2, self.maximum)
        entry.last_update = now

    def get(self, key) -> float:
        """The stated back-off of ``key`` (seconds, unscaled); 0 when none."""
        entry = self._entries.get(key)
        return entry.backoff if entry else 0.0

    def in_backoff_since(self, key, event_time: float, now: float) -> bool:
        """IsInBackOffSince: ``now`` is within the back-off that started at ``event_time``."""
        entry = self._entries.get(key)
        if entry is None or self._expired(event_time, entry):
            return False
        return now - event_time < entry.backoff * self.scale

    def in_backoff_since_update(self, key, now: float) -> bool:
        """IsInBackOffSinceUpdate: within the back-off counted from the last :meth:`next`."""
        entry = self._entries.get(key)
        if entry is None or self._expired(now, entry):
            return False
        return now - entry.last_update < entry.backoff * self.scale

    def ends_at(self, key, since: float) -> float:
        """When a back-off counted from ``since`` ends (real seconds)."""
        entry = self._entries.get(key)
        return since + (entry.backoff * self.scale if entry else 0.0)

    def update_ends_at(self, key) -> float:
        """When the back-off counted from the last :meth:`next` ends (real seconds)."""
        entry = self._entries.get(key)
        return entry.last_update + entry.backoff * self.scale if entry else 0.0

    def forget(self, key) -> None:
        self._entries.pop(key, None)
