"""The CronJob controller: Jobs on a schedule, on the cluster clock.

Port of pkg/controller/cronjob (cronjob_controllerv2.go ``syncCronJob``,
utils.go ``mostRecentScheduleTime``, ``getJobFromTemplate2``,
``getTimeHashInMinutes``) as of v1.37:

- the schedule (``TZ=<timeZone>`` prefixed when ``spec.timeZone`` is set) is
  read by :mod:`gpulab.cluster.cron`; an unparseable one gives the
  ``UnparseableSchedule`` warning event, one that never fires (31 February) the ``InvalidSchedule`` one;
- at each missed activation not older than ``startingDeadlineSeconds`` the
  controller creates Job ``NAME-<minutes since the epoch>`` from the job
  template, owned by the CronJob and annotated
  ``batch.kubernetes.io/cronjob-scheduled-timestamp``; too late:
  ``MissSchedule``; more than 100 missed: ``TooManyMissedTimes``;
- concurrencyPolicy Forbid skips while a Job is active (``JobAlreadyActive``),
  Replace deletes the active Jobs first;
- ``status.active`` lists the running Jobs, ``lastScheduleTime`` and
  ``lastSuccessfulTime`` are kept, finished Jobs beyond
  successful/failedJobsHistoryLimit are deleted oldest first;
- the next sync is due 100 ms after the next activation.

Time is :meth:`Api.clock`, so a test can move the cluster's clock.
"""
from __future__ import annotations

from datetime import datetime, timezone
from zoneinfo import ZoneInfo

from .. import cron
from ..errors import ApiError
from ..objects import clone, controller_of, owner_reference, parse_time, rfc3339
from .base import Controller
from .job import condition, is_finished
from .workload import MANAGER, index_by_controller, controlled

COMPONENT = "cronjob-controller"
CRONJOBS = "cronjobs.batch"
JOBS = "jobs.batch"
SCHEDULED_TIMESTAMP = "batch.kubernetes.io/cronjob-scheduled-timestamp"
_NEXT_SYNC_DELAY = 0.1  # nextScheduleDelta: requeue a little after the activation
_MAX_MISSED = 100


def schedule_text(cj: dict) -> str:
    """formatSchedule: the timeZone field as a TZ= prefix."""
    spec = cj.get("spec") or {}
    zone = spec.get("timeZone")
    return f"TZ={zone} {spec.get('schedule', '')}" if zone else spec.get("schedule", "")


def job_name(cj: dict, scheduled: float) -> str:
    """getJobName: the CronJob's name and the scheduled time in minutes since the epoch."""
    return f"{cj['metadata']['name']}-{int(scheduled) // 60}"


class InvalidSchedule(ValueError):
    """A schedule that parses but cannot be followed (``InvalidSchedule`` event)."""


def most_recent_schedule(cj: dict, now: float, schedule: cron.Schedule) -> tuple[float | None, int]:
    """mostRecentScheduleTime: the latest activation not after ``now`` that is due, and how many were missed."""
    status, spec = cj.get("status") or {}, cj.get("spec") or {}
    earliest = parse_time(status.get("lastScheduleTime")) or parse_time(cj["metadata"].get("creationTimestamp"))
    if spec.get("startingDeadlineSeconds") is not None:
        earliest = max(earliest, now - int(spec["startingDeadlineSeconds"]))
    if earliest is None or earliest > now:
        return None, 0
    # robfig/cron's Next gives the zero time for a schedule that never fires (31 February); the controller then
    # finds less than a second between two activations and refuses the schedule
    never = InvalidSchedule("time difference between two schedules is less than 1 second")
    first = schedule.next(earliest)
    if first is None:
        raise never
    if first > now:
        return None, 0
    second = schedule.next(first)
    if second is not None and now < second:
        return first, 1
    if second is None or second - first < 1:
        raise never
    missed, latest, t = 1, first, second
    while t is not None and t <= now:
        missed, latest = missed + 1, t
        if missed > 10_000:  # a very frequent schedule far behind: the count only has to exceed the limit
            break
        t = schedule.next(t)
    return latest, missed


def job_from_template(cj: dict, scheduled: float) -> dict:
    """getJobFromTemplate2."""
    template = (cj.get("spec") or {}).get("jobTemplate") or {}
    tmeta = template.get("metadata") or {}
    zone = (cj.get("spec") or {}).get("timeZone")
    when = datetime.fromtimestamp(scheduled, ZoneInfo(zone) if zone else timezone.utc)
    stamp = when.isoformat().replace("+00:00", "Z")
    meta = {"name": job_name(cj, scheduled), "namespace": cj["metadata"]["namespace"],
            "labels": dict(tmeta.get("labels") or {}),
            "annotations": {**(tmeta.get("annotations") or {}), SCHEDULED_TIMESTAMP: stamp},
            "ownerReferences": [owner_reference(cj)]}
    if not meta["labels"]:
        del meta["labels"]
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": clone(template.get("spec") or {})}


def _reference(job: dict) -> dict:
    m = job["metadata"]
    return {"kind": "Job", "namespace": m["namespace"], "name": m["name"], "uid": m["uid"],
            "apiVersion": "batch/v1", "resourceVersion": m["resourceVersion"]}


def _finished_at(job: dict) -> float:
    done = next((c for c in (job.get("status") or {}).get("conditions") or []
                 if c.get("type") in ("Complete", "Failed") and c.get("status") == "True"), {})
    return parse_time(done.get("lastTransitionTime")) or 0.0


class CronJobController(Controller):
    name = COMPONENT
    watches = (CRONJOBS, JOBS)

    def __init__(self, api):
        super().__init__(api)
        index_by_controller(api, JOBS)

    def keys_for(self, key: str, obj: dict):
        m = obj["metadata"]
        if key == CRONJOBS:
            return [(m.get("namespace", ""), m["name"])]
        ref = controller_of(obj)
        if ref is not None and ref.get("kind") == "CronJob":
            return [(m.get("namespace", ""), ref["name"])]
        return []

    async def reconcile(self, work_key) -> float | None:
        ns, name = work_key
        cj = self.api.store.get(CRONJOBS, ns, name)
        if cj is None:
            return None
        jobs = controlled(self.api, JOBS, cj["metadata"]["uid"])
        status = clone(cj.get("status") or {})
        self._track_active(cj, jobs, status)
        again = None
        if not cj["metadata"].get("deletionTimestamp"):
            again = self._schedule(cj, jobs, status)
        self._clean_history(cj, jobs)
        if status != (cj.get("status") or {}):
            new = clone(cj)
            new["status"] = {k: v for k, v in status.items() if v not in (None, [])}
            self.api.update(CRONJOBS, new, ns, subresource="status", manager=MANAGER)
        return again

    def _track_active(self, cj: dict, jobs: list[dict], status: dict) -> None:
        """The active list: running Jobs in, finished or vanished Jobs out (SawCompletedJob)."""
        by_uid = {j["metadata"]["uid"]: j for j in jobs}
        active = []
        for ref in status.get("active") or []:
            job = by_uid.get(ref.get("uid"))
            if job is None:
                continue
            if is_finished(job):
                done = "Complete" if (condition(job, "Complete") or {}).get("status") == "True" else "Failed"
                self.api.record_event(cj, "Normal", "SawCompletedJob",
                                      f"Saw completed job: {job['metadata']['name']}, condition: {done}", COMPONENT)
                if done == "Complete":
                    finished = _finished_at(job)
                    last = parse_time(status.get("lastSuccessfulTime"))
                    if last is None or finished > last:
                        status["lastSuccessfulTime"] = rfc3339(finished)
                continue
            active.append(_reference(job))
        known = {r.get("uid") for r in status.get("active") or []}
        for job in jobs:
            if not is_finished(job) and job["metadata"]["uid"] not in {r["uid"] for r in active}:
                if job["metadata"]["uid"] not in known:
                    self.api.record_event(cj, "Warning", "UnexpectedJob",
                                          f"Saw a job that the controller did not create or forgot: "
                                          f"{job['metadata']['name']}", COMPONENT)
                active.append(_reference(job))
        status["active"] = active

    def _schedule(self, cj: dict, jobs: list[dict], status: dict) -> float | None:
        spec = cj["spec"]
        try:
            schedule = cron.parse_standard(schedule_text(cj))
        except cron.CronError as exc:
            self.api.record_event(cj, "Warning", "UnparseableSchedule",
                                  f'unparseable schedule: "{spec.get("schedule", "")}" : {exc}', COMPONENT)
            return None
        if spec.get("suspend"):
            return None
        now = self.api.clock()
        try:
            scheduled, missed = most_recent_schedule({**cj, "status": status}, now, schedule)
        except InvalidSchedule as exc:
            self.api.record_event(cj, "Warning", "InvalidSchedule",
                                  f'invalid schedule: {spec.get("schedule", "")} : {exc}', COMPONENT)
            return None
        if missed > _MAX_MISSED:
            self.api.record_event(cj, "Warning", "TooManyMissedTimes",
                                  "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or "
                                  "check clock skew", COMPONENT)
        if scheduled is not None:
            self._start(cj, jobs, status, scheduled, now)
        following = schedule.next(now)
        return None if following is None else max(following - now, 0) + _NEXT_SYNC_DELAY

    def _start(self, cj: dict, jobs: list[dict], status: dict, scheduled: float, now: float) -> None:
        spec = cj["spec"]
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None and scheduled + int(deadline) < now:
            self.api.record_event(cj, "Warning", "MissSchedule",
                                  f"Missed scheduled time to start a job: {rfc3339(scheduled)}", COMPONENT)
            return
        name = job_name(cj, scheduled)
        if any(ref.get("name") == name for ref in status.get("active") or []):
            return
        policy = spec.get("concurrencyPolicy", "Allow")
        if policy == "Forbid" and status.get("active"):
            self.api.record_event(cj, "Normal", "JobAlreadyActive",
                                  "Not starting job because prior execution is running and concurrency policy is "
                                  "Forbid", COMPONENT)
            return
        if policy == "Replace":
            for ref in list(status.get("active") or []):
                try:
                    self.api.delete(JOBS, ref["name"], ref["namespace"], propagation_policy="Background")
                except ApiError as exc:
                    if exc.code != 404:
                        raise
                self.api.record_event(cj, "Normal", "SuccessfulDelete", f"Deleted job {ref['name']}", COMPONENT)
            status["active"] = []
        try:
            job = self.api.create(JOBS, job_from_template(cj, scheduled), cj["metadata"]["namespace"],
                                  manager=MANAGER)
        except ApiError as exc:
            if exc.code == 409:  # created by an earlier sync: it is in the active list already or done
                status["lastScheduleTime"] = rfc3339(scheduled)
                return
            self.api.record_event(cj, "Warning", "FailedCreate", f"Error creating job: {exc.message}", COMPONENT)
            raise
        self.api.record_event(cj, "Normal", "SuccessfulCreate", f"Created job {job['metadata']['name']}", COMPONENT)
        status["active"] = list(status.get("active") or []) + [_reference(job)]
        status["lastScheduleTime"] = rfc3339(scheduled)

    def _clean_history(self, cj: dict, jobs: list[dict]) -> None:
        """cleanupFinishedJobs: keep the newest successful/failed Jobs up to the history limits."""
        if cj["metadata"].get("deletionTimestamp"):
            return
        spec = cj["spec"]
        finished = [j for j in jobs if is_finished(j) and not j["metadata"].get("deletionTimestamp")]
        for kind, limit in (("Complete", spec.get("successfulJobsHistoryLimit")),
                            ("Failed", spec.get("failedJobsHistoryLimit"))):
            if limit is None:
                continue
            done = sorted((j for j in finished if (condition(j, kind) or {}).get("status") == "True"),
                          key=lambda j: (parse_time((j.get("status") or {}).get("startTime"))
                                         or parse_time(j["metadata"].get("creationTimestamp")) or 0))
            for job in done[:max(len(done) - int(limit), 0)]:
                try:
                    self.api.delete(JOBS, job["metadata"]["name"], job["metadata"]["namespace"],
                                    propagation_policy="Background")
                except ApiError as exc:
                    if exc.code != 404:
                        raise
                    continue
                self.api.record_event(cj, "Normal", "SuccessfulDelete", f"Deleted job {job['metadata']['name']}",
                                      COMPONENT)
