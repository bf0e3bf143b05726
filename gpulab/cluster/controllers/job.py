"""The Job controller: run pods to completion, count them through finalizers, and finish the Job.

Port of pkg/controller/job (v1.36) for NonIndexed Jobs: job_controller.go
(``syncJob``, ``manageJob``, ``trackJobStatusAndRemoveFinalizers``,
``flushUncountedAndRemoveFinalizers``, ``enactJobFinished``,
``recordJobFinished``, ``syncOrphanPod``) and backoff_utils.go (pod-failure
backoff: 10 s doubling to 6 min). Every pod carries the
``batch.kubernetes.io/job-tracking`` finalizer until its end is counted, first
in ``status.uncountedTerminatedPods`` and then in ``succeeded``/``failed``.
With JobManagedBy and JobPodReplacementPolicy GA the terminal conditions are
two-step: ``FailureTarget`` then ``Failed`` (once no pod is terminating),
``SuccessCriteriaMet`` then ``Complete``. Not reproduced: Indexed completion,
podFailurePolicy, successPolicy and backoffLimitPerIndex.
"""
from __future__ import annotations

import asyncio

from ..errors import ApiError
from ..objects import clone, controller_of, parse_time, rfc3339
from ..selectors import label_selector_from_dict
from .workload import (MANAGER, OwnerKeyedController, claim, create_pod, delete_pod, deletion_order,
                       index_by_controller, is_active, is_ready, is_terminating, pod_from_template, selector_owners)

COMPONENT = "job-controller"
JOB = "jobs.batch"
TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
MANAGED_BY_DEFAULT = "kubernetes.io/job-controller"
MAX_POD_CREATE_DELETE_PER_SYNC = 500
MAX_UNCOUNTED_PODS = 500
DEFAULT_BACKOFF, MAX_BACKOFF = 10.0, 360.0


def condition(job: dict, type_: str) -> dict | None:
    return next((c for c in (job.get("status") or {}).get("conditions") or () if c.get("type") == type_), None)


def is_finished(job: dict) -> bool:
    """IsJobFinished: a Complete or Failed condition that is True."""
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or ())


def new_condition(type_: str, status: str, reason: str, message: str, now: float) -> dict:
    stamp = rfc3339(now)
    cond = {"type": type_, "status": status, "lastProbeTime": stamp, "lastTransitionTime": stamp}
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    return cond


def ensure_condition(conditions: list[dict], type_: str, status: str, reason: str, message: str,
                     now: float) -> bool:
    """ensureJobConditionStatus (mutates ``conditions``): True when the list changed."""
    for i, c in enumerate(conditions):
        if c.get("type") == type_:
            if c.get("status") != status or c.get("reason", "") != reason or c.get("message", "") != message:
                conditions[i] = new_condition(type_, status, reason, message, now)
                return True
            return False
    if status != "False":
        conditions.append(new_condition(type_, status, reason, message, now))
        return True
    return False


def has_finalizer(pod: dict) -> bool:
    return TRACKING_FINALIZER in (pod["metadata"].get("finalizers") or ())


def only_replace_failed(job: dict) -> bool:
    return job["spec"].get("podReplacementPolicy") == "Failed" or job["spec"].get("podFailurePolicy") is not None


def is_pod_failed(pod: dict, job: dict) -> bool:
    """isPodFailed: Failed, or (replacing terminating pods) deleted before it succeeded."""
    phase = (pod.get("status") or {}).get("phase")
    if phase == "Failed":
        return True
    if only_replace_failed(job):
        return False
    return bool(pod["metadata"].get("deletionTimestamp")) and phase != "Succeeded"


def finished_time(pod: dict) -> float:
    """getFinishedTime: the last container end, else when Ready went False, else the deletion timestamp."""
    ends = [parse_time(((s.get("state") or {}).get("terminated") or {}).get("finishedAt"))
            for s in (pod.get("status") or {}).get("containerStatuses") or ()]
    ends = [t for t in ends if t is not None]
    if ends:
        return max(ends)
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready" and c.get("status") == "False" and c.get("lastTransitionTime"):
            return parse_time(c["lastTransitionTime"])
    return parse_time(pod["metadata"].get("deletionTimestamp")) or 0.0


class JobController(OwnerKeyedController):
    name = COMPONENT
    watches = (JOB, "pods")

    def __init__(self, api):
        super().__init__(api)
        index_by_controller(api, "pods")
        self._backoff: dict[tuple[str, str], tuple[int, float | None]] = {}  # failures after last success, last

    def keys_for(self, key: str, obj: dict):
        m = obj["metadata"]
        ns = m.get("namespace", "")
        if key == JOB:
            return [(ns, m["name"])]
        ref = controller_of(obj)
        keys: list = []
        job = None
        if ref is not None and ref.get("kind") == "Job":
            keys.append((ns, ref["name"]))
            job = self.api.store.get(JOB, ns, ref["name"])
            if job is not None and job["metadata"]["uid"] != ref.get("uid"):
                job = None
        elif ref is None:
            keys.extend(selector_owners(self.api, JOB, obj))
        if has_finalizer(obj) and (ref is None or ref.get("kind") == "Job") and (job is None or is_finished(job)):
            keys.append(("pod", ns, m["name"]))
        return keys

    def initial_keys(self):
        """Every Job, and the pods whose finalizer outlived their Job (the informer's initial adds)."""
        stale = [k for pod in self.api.store.list("pods") if has_finalizer(pod)
                 for k in self.keys_for("pods", pod) if len(k) == 3]
        return super().initial_keys() + stale

    async def reconcile(self, work_key) -> float | None:
        if len(work_key) == 3:
            self._sync_orphan_pod(work_key[1], work_key[2])
            return None
        ns, name = work_key
        stored = self.api.store.get(JOB, ns, name)
        if stored is None:
            self._backoff.pop(work_key, None)
            return None
        if stored["spec"].get("managedBy", MANAGED_BY_DEFAULT) != MANAGED_BY_DEFAULT:
            return None
        if is_finished(stored):
            self._backoff.pop(work_key, None)
            return None
        return await _JobSync(self, clone(stored)).run()

    def _sync_orphan_pod(self, ns: str, name: str) -> None:
        """syncOrphanPod: drop the finalizer of a pod whose Job is gone or finished."""
        pod = self.api.store.get("pods", ns, name)
        if pod is None or not has_finalizer(pod):
            return
        ref = controller_of(pod)
        if ref is not None:
            if ref.get("kind") != "Job" or ref.get("apiVersion") != "batch/v1":
                return
            job = self.api.store.get(JOB, ns, ref["name"])
            if job is not None and job["metadata"]["uid"] == ref.get("uid") and not is_finished(job):
                return
        remove_finalizer(self.api, pod)

    # --- pod-failure backoff (backoff_utils.go) ------------------------------------------
    def backoff_record(self, key, succeeded: list[dict], failed: list[dict]) -> tuple[int, float | None]:
        failures, last = self._backoff.get(key, (0, None))
        failed = sorted(failed, key=finished_time)
        if not succeeded:
            if not failed:
                return failures, last
            return failures + len(failed), finished_time(failed[-1])
        last_success = max(finished_time(p) for p in succeeded)
        failures, last = 0, None
        for pod in reversed(failed):
            t = finished_time(pod)
            if t <= last_success:
                break
            last = t if last is None else last
            failures += 1
        return failures, last

    def remaining_backoff(self, record: tuple[int, float | None]) -> float:
        failures, last = record
        if failures == 0 or last is None:
            return 0.0
        delay = DEFAULT_BACKOFF
        for _ in range(1, failures):
            delay *= 2
            if delay >= MAX_BACKOFF:
                delay = MAX_BACKOFF
                break
        elapsed = self.api.clock() - last
        return 0.0 if delay < elapsed else delay - elapsed


def remove_finalizer(api, pod: dict) -> bool:
    finalizers = [f for f in pod["metadata"].get("finalizers") or () if f != TRACKING_FINALIZER]
    try:
        api.patch("pods", pod["metadata"]["name"], {"metadata": {"finalizers": finalizers or None}}, "merge",
                  pod["metadata"]["namespace"], manager=MANAGER)
    except ApiError as exc:
        if exc.code != 404:
            raise
    return True


class _JobSync:
    """One syncJob pass over one Job (syncJobCtx and the functions that share it)."""

    def __init__(self, controller: JobController, job: dict):
        self.c = controller
        self.api = controller.api
        self.job = job
        self.key = (job["metadata"]["namespace"], job["metadata"]["name"])
        self.now = self.api.clock()
        status = job.setdefault("status", {})
        status.setdefault("uncountedTerminatedPods", {})
        self.finished: dict | None = None
        self.requeue: float | None = None

    @property
    def status(self) -> dict:
        return self.job["status"]

    def _uncounted(self, field: str) -> set[str]:
        return set((self.status.get("uncountedTerminatedPods") or {}).get(field) or ())

    async def run(self) -> float | None:
        job, spec, status = self.job, self.job["spec"], self.status
        suspended = bool(spec.get("suspend"))
        self.pods = claim(self.api, "pods", job, label_selector_from_dict(spec.get("selector")))
        self.c.sizes[self.key] = len(self.pods)
        active_pods = [p for p in self.pods if is_active(p)]
        self.ready = sum(1 for p in active_pods if is_ready(p))
        self.terminating = sum(1 for p in self.pods if is_terminating(p))
        active = len(active_pods)
        uncounted_s, uncounted_f = self._uncounted("succeeded"), self._uncounted("failed")
        new_succeeded = [p for p in self.pods if has_finalizer(p) and p["metadata"]["uid"] not in uncounted_s
                         and (p.get("status") or {}).get("phase") == "Succeeded"]
        new_failed = [p for p in self.pods if has_finalizer(p) and p["metadata"]["uid"] not in uncounted_f
                      and is_pod_failed(p, job)]
        self.succeeded = status.get("succeeded", 0) + len(new_succeeded) + len(uncounted_s)
        failed = status.get("failed", 0) + len(new_failed) + len(uncounted_f)
        if status.get("startTime") is None and not suspended:
            status["startTime"] = rfc3339(self.now)
        self.backoff = self.c.backoff_record(self.key, new_succeeded, new_failed)

        self.finished = condition(job, "SuccessCriteriaMet")
        if self.finished is None:
            target = condition(job, "FailureTarget")
            if target is not None and target.get("status") == "True":
                self.finished = new_condition("Failed", "True", target.get("reason", ""), target.get("message", ""),
                                              self.now)
        if self.finished is None:
            if failed > int(spec.get("backoffLimit", 6)) or self._past_backoff_limit_on_failure():
                self.finished = new_condition("FailureTarget", "True", "BackoffLimitExceeded",
                                              "Job has reached the specified backoff limit", self.now)
            elif self._past_active_deadline():
                self.finished = new_condition("FailureTarget", "True", "DeadlineExceeded",
                                              "Job was active longer than specified deadline", self.now)
            elif spec.get("activeDeadlineSeconds") is not None and not suspended:
                started = parse_time(status.get("startTime")) or self.now
                self.requeue = max(started + int(spec["activeDeadlineSeconds"]) - self.now, 0.0)

        suspend_changed = False
        manage_error: ApiError | None = None
        if self.finished is not None:
            deleted_ready, deleted = self._delete_active(active_pods)
            if deleted != active:
                self.finished = None
            active -= deleted
            self.terminating += deleted
            self.ready -= deleted_ready
        else:
            managed = False
            if job["metadata"].get("deletionTimestamp") is None:
                try:
                    active = await self._manage(active_pods)
                except ApiError as exc:
                    manage_error = exc
                    active = len(active_pods)
                managed = True
            completions = spec.get("completions")
            if completions is None:
                complete = self.succeeded > 0 and active == 0
            else:
                complete = self.succeeded >= int(completions) and active == 0
            if complete:
                self.finished = new_condition("SuccessCriteriaMet", "True", "CompletionsReached",
                                              "Reached expected number of succeeded pods", self.now)
            elif managed:
                suspend_changed = self._suspend_condition(suspended)

        needs_flush = suspend_changed or active != status.get("active", 0) or \
            self.ready != status.get("ready") or self.terminating != status.get("terminating")
        _set_count(status, "active", active)
        status["ready"] = self.ready
        status["terminating"] = self.terminating
        self._track_status_and_remove_finalizers(needs_flush)
        if manage_error is not None:
            raise manage_error
        return self.requeue

    # --- conditions and deadlines ----------------------------------------------------
    def _past_backoff_limit_on_failure(self) -> bool:
        """pastBackoffLimitOnFailure: container restarts count as failures under restartPolicy OnFailure."""
        if self.job["spec"]["template"]["spec"].get("restartPolicy") != "OnFailure":
            return False
        restarts = 0
        for pod in self.pods:
            status = pod.get("status") or {}
            if status.get("phase") in ("Running", "Pending"):
                for s in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
                    restarts += int(s.get("restartCount", 0))
        limit = int(self.job["spec"].get("backoffLimit", 6))
        return restarts > 0 if limit == 0 else restarts >= limit

    def _past_active_deadline(self) -> bool:
        spec = self.job["spec"]
        started = parse_time(self.status.get("startTime"))
        if spec.get("activeDeadlineSeconds") is None or started is None or spec.get("suspend"):
            return False
        return self.now - started >= int(spec["activeDeadlineSeconds"])

    def _suspend_condition(self, suspended: bool) -> bool:
        conditions = self.status.setdefault("conditions", [])
        if suspended:
            changed = ensure_condition(conditions, "Suspended", "True", "JobSuspended", "Job suspended", self.now)
            if changed:
                self.api.record_event(self.job, "Normal", "Suspended", "Job suspended", COMPONENT)
        else:
            changed = ensure_condition(conditions, "Suspended", "False", "JobResumed", "Job resumed", self.now)
            if changed:
                self.api.record_event(self.job, "Normal", "Resumed", "Job resumed", COMPONENT)
                self.status["startTime"] = rfc3339(self.now)
        if not conditions:
            self.status.pop("conditions")
        return changed

    # --- pods ------------------------------------------------------------------------------
    def _delete_active(self, pods: list[dict]) -> tuple[int, int]:
        """deleteActivePods: the finalizers stay, so the deleted pods are counted as failed."""
        deleted = deleted_ready = 0
        for pod in pods:
            try:
                delete_pod(self.api, self.job, pod, COMPONENT)
            except ApiError:
                continue
            deleted += 1
            deleted_ready += 1 if is_ready(pod) else 0
        return deleted_ready, deleted

    def _delete_job_pods(self, pods: list[dict]) -> tuple[int, int]:
        """deleteJobPods: surplus pods lose their finalizer first, so they are not counted as failed."""
        deleted = deleted_ready = 0
        for pod in pods:
            try:
                if has_finalizer(pod):
                    remove_finalizer(self.api, pod)
                delete_pod(self.api, self.job, pod, COMPONENT)
            except ApiError:
                continue
            deleted += 1
            deleted_ready += 1 if is_ready(pod) else 0
        return deleted_ready, deleted

    async def _manage(self, active_pods: list[dict]) -> int:
        """manageJob: delete surplus pods or create missing ones (never both in one pass)."""
        spec = self.job["spec"]
        active = len(active_pods)
        parallelism = int(spec.get("parallelism", 1))
        if spec.get("suspend"):
            removed_ready, removed = self._delete_job_pods(active_pods)
            self.terminating += removed
            self.ready -= removed_ready
            return active - removed
        if spec.get("completions") is None:
            want = active if self.succeeded > 0 else parallelism
        else:
            want = max(min(int(spec["completions"]) - self.succeeded, parallelism), 0)
        surplus = max(active - want, 0)
        if surplus:
            victims = deletion_order(active_pods, [0] * active, self.now)[:min(surplus, MAX_POD_CREATE_DELETE_PER_SYNC)]
            removed_ready, removed = self._delete_job_pods(victims)
            self.terminating += removed
            self.ready -= removed_ready
            return active - removed
        terminating = self.terminating if only_replace_failed(self.job) else 0
        diff = want - terminating - active
        if diff <= 0:
            return active
        wait = self.c.remaining_backoff(self.backoff)
        if wait > 0:
            self.requeue = wait if self.requeue is None else min(self.requeue, wait)
            return active
        template = clone(spec["template"])
        finalizers = template.setdefault("metadata", {}).get("finalizers") or []
        if TRACKING_FINALIZER not in finalizers:
            template["metadata"]["finalizers"] = finalizers + [TRACKING_FINALIZER]
        created = 0
        for i in range(min(diff, MAX_POD_CREATE_DELETE_PER_SYNC)):
            try:
                create_pod(self.api, self.job, pod_from_template(template, self.job), COMPONENT)
            except ApiError as exc:
                if exc.code == 403 and "being terminated" in exc.message:
                    return active + created
                raise
            created += 1
            if i % 50 == 49:
                await asyncio.sleep(0)
        return active + created

    # --- status and finalizers -----------------------------------------------------------
    def _track_status_and_remove_finalizers(self, needs_flush: bool) -> None:
        job, status = self.job, self.status
        uncounted = status["uncountedTerminatedPods"]
        with_finalizer = {p["metadata"]["uid"] for p in self.pods if has_finalizer(p)}
        to_remove: list[dict] = []
        reached_max = False
        deleting = job["metadata"].get("deletionTimestamp") is not None
        for pod in self.pods:
            if not has_finalizer(pod):
                continue
            failed = is_pod_failed(pod, job)
            phase = (pod.get("status") or {}).get("phase")
            if not (deleting or self.finished is not None or phase == "Succeeded" or failed):
                continue
            to_remove.append(pod)
            uid = pod["metadata"]["uid"]
            if phase == "Succeeded" and uid not in (uncounted.get("failed") or ()):
                if uid not in (uncounted.get("succeeded") or ()):
                    uncounted.setdefault("succeeded", []).append(uid)
                    needs_flush = True
            elif failed or (self.finished is not None and self.finished["type"] != "SuccessCriteriaMet"):
                if uid not in (uncounted.get("failed") or ()):
                    uncounted.setdefault("failed", []).append(uid)
                    needs_flush = True
            if len(uncounted.get("succeeded") or ()) + len(uncounted.get("failed") or ()) >= MAX_UNCOUNTED_PODS:
                reached_max = True
                break
        conditions = status.setdefault("conditions", [])
        if self.finished is not None and self.finished["type"] == "FailureTarget":
            conditions.append(self.finished)
            needs_flush = True
            self.finished = new_condition("Failed", "True", self.finished.get("reason", ""),
                                          self.finished.get("message", ""), self.now)
        if self.finished is not None and self.finished["type"] == "SuccessCriteriaMet":
            if condition(job, "SuccessCriteriaMet") is None:
                conditions.append(self.finished)
                needs_flush = True
            self.finished = new_condition("Complete", "True", self.finished.get("reason", ""),
                                          self.finished.get("message", ""), self.now)
        if not conditions:
            status.pop("conditions")
        if needs_flush:
            self._write_status()
            self.c._backoff[self.key] = self.backoff
            needs_flush = False
        for pod in to_remove:
            remove_finalizer(self.api, pod)
            with_finalizer.discard(pod["metadata"]["uid"])
        if self._count_uncounted(with_finalizer):
            needs_flush = True
        finished = not reached_max and self._enact_finished()
        if finished or needs_flush:
            self._write_status()
            if finished:
                self._record_finished()

    def _count_uncounted(self, with_finalizer: set[str]) -> bool:
        """cleanUncountedPodsWithoutFinalizers: uncounted pods whose finalizer is gone move to the counters."""
        uncounted = self.status["uncountedTerminatedPods"]
        changed = False
        for field, counter in (("succeeded", "succeeded"), ("failed", "failed")):
            uids = uncounted.get(field) or []
            keep = [u for u in uids if u in with_finalizer]
            if len(keep) != len(uids):
                changed = True
                _set_count(self.status, counter, self.status.get(counter, 0) + len(uids) - len(keep))
                if keep:
                    uncounted[field] = keep
                else:
                    uncounted.pop(field, None)
        return changed

    def _enact_finished(self) -> bool:
        if self.finished is None:
            return False
        uncounted = self.status["uncountedTerminatedPods"]
        if uncounted.get("succeeded") or uncounted.get("failed") or self.terminating > 0:
            return False
        conditions = self.status.setdefault("conditions", [])
        ensure_condition(conditions, self.finished["type"], self.finished["status"], self.finished.get("reason", ""),
                         self.finished.get("message", ""), self.now)
        if self.finished["type"] == "Complete":
            self.status["completionTime"] = self.finished["lastTransitionTime"]
        return True

    def _record_finished(self) -> None:
        if self.finished["type"] == "Complete":
            completions = self.job["spec"].get("completions")
            if completions is not None and self.status.get("succeeded", 0) > int(completions):
                self.api.record_event(self.job, "Warning", "TooManySucceededPods",
                                      "Too many succeeded pods running after completion count reached", COMPONENT)
            self.api.record_event(self.job, "Normal", "Completed", "Job completed", COMPONENT)
        else:
            self.api.record_event(self.job, "Warning", self.finished.get("reason", ""),
                                  self.finished.get("message", ""), COMPONENT)

    def _write_status(self) -> None:
        stored = self.api.store.get(JOB, *self.key)
        if stored is None:
            return
        if (stored.get("status") or {}) == self.status:
            return
        new = clone(stored)
        new["status"] = clone(self.status)
        updated = self.api.update(JOB, new, self.key[0], subresource="status", manager=MANAGER)
        self.job["metadata"] = clone(updated["metadata"])


def _set_count(status: dict, field: str, value: int) -> None:
    """An omitempty int32 of JobStatus."""
    if value:
        status[field] = value
    else:
        status.pop(field, None)
