"""TTL after finished: delete a finished Job (and, in the foreground, its pods) ``ttlSecondsAfterFinished`` later.

Port of pkg/controller/ttlafterfinished/ttlafterfinished_controller.go (v1.36):
the clock starts at the ``lastTransitionTime`` of the Job's ``Complete`` or
``Failed`` condition; the deletion uses propagation ``Foreground`` and a uid
precondition. The controller records no events.
"""
from __future__ import annotations

from ..errors import ApiError
from ..objects import parse_time
from .base import Controller
from .job import JOB

COMPONENT = "ttl-after-finished-controller"


def finished_at(job: dict) -> float | None:
    for c in (job.get("status") or {}).get("conditions") or ():
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return parse_time(c.get("lastTransitionTime"))
    return None


class TTLAfterFinishedController(Controller):
    name = COMPONENT
    watches = (JOB,)

    async def reconcile(self, work_key) -> float | None:
        ns, name = work_key
        job = self.api.store.get(JOB, ns, name)
        if job is None or job["metadata"].get("deletionTimestamp"):
            return None
        ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
        finished = finished_at(job)
        if ttl is None or finished is None:
            return None
        left = finished + int(ttl) - self.api.clock()
        if left > 0:
            return left
        try:
            self.api.delete(JOB, name, ns, propagation_policy="Foreground",
                            preconditions={"uid": job["metadata"]["uid"]})
        except ApiError as exc:
            if exc.code not in (404, 409):
                raise
        return None
