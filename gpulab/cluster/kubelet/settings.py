"""The node agent's lifecycle data (data/lifecycle.yaml) as typed settings, with a time scale for tests.

``scale`` multiplies every wait the node agent chooses itself (sandbox creation, pulls, back-offs,
heartbeats, quarantines) so tests can run a crash loop in a fraction of a second. It never touches
what the user asked for: ``sleep 5`` in a container and a pod's termination grace period take real
seconds, and messages state the unscaled durations (``back-off 10s restarting failed container``).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import yaml


@dataclass(frozen=True)
class Timings:
    node_status_update: float
    node_status_report: float
    lease_duration: int          # the Lease's spec.leaseDurationSeconds (stated, not scaled)
    lease_renew: float
    network_ready: float
    sandbox_create: float
    container_start: float
    pull_latency: float
    pull_bytes_per_second: float
    pull_max: float
    pull_failure: float
    backoff_initial: float       # stated durations; Backoff applies the scale itself
    backoff_max: float
    error_resync: float
    backoff_resync: float
    mount_retry: float           # WaitForAttachAndMount's poll interval and its timeout
    mount_timeout: float
    status_flush: float
    scale: float

    def pull_seconds(self, size: int) -> float:
        return min(self.pull_max, self.pull_latency + size / self.pull_bytes_per_second) * self.scale


@dataclass(frozen=True)
class Lifecycle:
    node_conditions: tuple[dict, ...]
    ready: dict
    network_not_ready: dict
    timings: Timings


@lru_cache(maxsize=1)
def _document() -> dict:
    return yaml.safe_load(resources.files(__package__).joinpath("data/lifecycle.yaml").read_text())


def load_lifecycle(scale: float = 1.0) -> Lifecycle:
    doc = _document()
    t = doc["timings"]
    pull = t["imagePull"]
    timings = Timings(
        node_status_update=t["nodeStatusUpdate"] * scale, node_status_report=t["nodeStatusReport"] * scale,
        lease_duration=int(t["leaseDuration"]), lease_renew=t["leaseRenew"] * scale,
        network_ready=t["networkReady"] * scale, sandbox_create=t["sandboxCreate"] * scale,
        container_start=t["containerStart"] * scale, pull_latency=pull["latency"],
        pull_bytes_per_second=pull["bytesPerSecond"], pull_max=pull["max"], pull_failure=pull["failure"] * scale,
        backoff_initial=t["backOffInitial"], backoff_max=t["backOffMax"], error_resync=t["errorResync"] * scale,
        backoff_resync=t["backOffResync"] * scale, mount_retry=t["attachAndMountRetry"] * scale,
        mount_timeout=t["attachAndMountTimeout"] * scale,
        status_flush=t["statusFlush"] * scale, scale=scale)
    return Lifecycle(tuple(doc["nodeConditions"]), doc["ready"], doc["networkNotReady"], timings)
