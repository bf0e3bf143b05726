"""The Deployment controller: roll a pod template out through ReplicaSets.

Port of pkg/controller/deployment (v1.36): deployment_controller.go
(``syncDeployment``), sync.go (``getNewReplicaSet``, ``scale``,
``scaleReplicaSet``, ``cleanupDeployment``, ``isScalingEvent``,
``syncDeploymentStatus``), rolling.go, recreate.go and progress.go
(``syncRolloutStatus``, ``requeueStuckDeployment``). The new ReplicaSet is
named ``<deployment>-<pod-template-hash>`` and carries the hash as the
``pod-template-hash`` label (see ``workload.compute_hash`` for how the hash
differs from upstream's). Upstream writes the ``deployment.kubernetes.io/revision``
annotation through the status subresource, which lets annotations through for
Deployments; here the status subresource keeps metadata, so the annotation is
written by a separate update of the Deployment (no spec change, no new generation).
"""
from __future__ import annotations

from ..errors import ApiError
from ..objects import clone, controller_of, owner_reference, parse_time
from ..selectors import label_selector_from_dict
from . import deploymentutil as du
from .workload import (MANAGER, OwnerKeyedController, claim, compute_hash, controlled, index_by_controller,
                       selector_owners)

COMPONENT = "deployment-controller"
DEPLOY = "deployments.apps"
RS = "replicasets.apps"


class DeploymentController(OwnerKeyedController):
    name = COMPONENT
    watches = (DEPLOY, RS, "pods")

    def __init__(self, api):
        super().__init__(api)
        index_by_controller(api, RS)
        index_by_controller(api, "pods")

    def keys_for(self, key: str, obj: dict):
        m = obj["metadata"]
        ns = m.get("namespace", "")
        if key == DEPLOY:
            return [(ns, m["name"])]
        ref = controller_of(obj)
        if key == RS:
            if ref is not None:
                return [(ns, ref["name"])] if ref.get("kind") == "Deployment" else []
            return selector_owners(self.api, DEPLOY, obj)
        # Pods matter only to Recreate, which waits for the old ones to go.
        if ref is None or ref.get("kind") != "ReplicaSet":
            return []
        rs = self.api.store.get(RS, ns, ref["name"])
        owner = controller_of(rs) if rs is not None else None
        if owner is None or owner.get("kind") != "Deployment":
            return []
        d = self.api.store.get(DEPLOY, ns, owner["name"])
        if d is None or (d["spec"].get("strategy") or {}).get("type") != "Recreate":
            return []
        return [(ns, owner["name"])]

    # --- syncDeployment ----------------------------------------------------------
    async def reconcile(self, work_key) -> float | None:
        ns, name = work_key
        stored = self.api.store.get(DEPLOY, ns, name)
        if stored is None:
            return None
        d = clone(stored)
        selector = d["spec"].get("selector")
        if selector == {}:
            self.api.record_event(d, "Warning", "SelectingAll",
                                  "This deployment is selecting all pods. A non-empty selector is required.",
                                  COMPONENT)
            if (d.get("status") or {}).get("observedGeneration", 0) < d["metadata"]["generation"]:
                d.setdefault("status", {})["observedGeneration"] = d["metadata"]["generation"]
                self._write(stored, d)
            return None
        rs_list = claim(self.api, RS, d, label_selector_from_dict(selector))
        if d["metadata"].get("deletionTimestamp"):
            new_rs, old_rss = self._all_replica_sets(d, rs_list, create=False)
            return self._sync_status(d, [*old_rss, new_rs], new_rs)
        d = self._check_paused_conditions(d)
        if d["spec"].get("paused"):
            return self._sync(d, rs_list)
        if self._is_scaling_event(d, rs_list):
            return self._sync(d, rs_list)
        if (d["spec"].get("strategy") or {}).get("type") == "Recreate":
            return self._rollout_recreate(d, rs_list)
        return self._rollout_rolling(d, rs_list)

    # --- writes -----------------------------------------------------------------------
    def _write(self, old: dict, new: dict) -> dict:
        """Persist ``new``'s annotations and status (the two writes upstream's UpdateStatus covers)."""
        ns = old["metadata"]["namespace"]
        current = old
        if du.annotations(new) != du.annotations(old):
            meta_only = clone(old)
            meta_only["metadata"]["annotations"] = du.annotations(new)
            current = self.api.update(DEPLOY, meta_only, ns, manager=MANAGER)
        if (new.get("status") or {}) != (current.get("status") or {}):
            with_status = clone(current)
            with_status["status"] = new.get("status") or {}
            current = self.api.update(DEPLOY, with_status, ns, subresource="status", manager=MANAGER)
        new["metadata"] = clone(current["metadata"])
        return new

    def _update_rs(self, rs: dict) -> dict:
        return self.api.update(RS, rs, rs["metadata"]["namespace"], manager=MANAGER)

    # --- revisions and the new ReplicaSet ---------------------------------------------------
    def _all_replica_sets(self, d: dict, rs_list: list[dict], *, create: bool) -> tuple[dict | None, list[dict]]:
        """getAllReplicaSetsAndSyncRevision (on the ReplicaSets as stored now: earlier steps may have written them)."""
        fresh = (self.api.store.get(RS, rs["metadata"]["namespace"], rs["metadata"]["name"]) for rs in rs_list)
        rs_list = [rs for rs in fresh if rs is not None]
        old_rss = du.find_old_replica_sets(d, rs_list)
        return self._new_replica_set(d, rs_list, old_rss, create), old_rss

    def _new_replica_set(self, d: dict, rs_list: list[dict], old_rss: list[dict], create: bool) -> dict | None:
        """getNewReplicaSet: sync the existing new ReplicaSet's annotations, or create it."""
        existing = du.find_new_replica_set(d, rs_list)
        new_revision = str(du.max_revision(old_rss) + 1)
        now = self.api.clock()
        status = d.setdefault("status", {})
        if existing is not None:
            rs = clone(existing)
            changed = du.set_new_replica_set_annotations(d, rs, new_revision, True)
            if changed or rs["spec"].get("minReadySeconds", 0) != d["spec"].get("minReadySeconds", 0):
                rs["spec"]["minReadySeconds"] = d["spec"].get("minReadySeconds", 0)
                return self._update_rs(rs)
            needs_update = self._set_revision(d, du.annotations(rs).get(du.REVISION, ""))
            if du.has_progress_deadline(d) and du.get_condition(status, "Progressing") is None:
                du.set_condition(status, du.new_condition("Progressing", "True", du.FOUND_NEW_RS,
                                                          f'Found new replica set "{rs["metadata"]["name"]}"', now))
                needs_update = True
            if needs_update:
                self._write(self.api.store.get(DEPLOY, d["metadata"]["namespace"], d["metadata"]["name"]), d)
            return rs
        if not create:
            return None
        return self._create_new_replica_set(d, old_rss, new_revision, now)

    def _create_new_replica_set(self, d: dict, old_rss: list[dict], new_revision: str, now: float) -> dict | None:
        status = d["status"]
        template = clone(d["spec"]["template"])
        pod_hash = compute_hash(template, status.get("collisionCount"))
        labels = {**((template.get("metadata") or {}).get("labels") or {}), du.POD_TEMPLATE_HASH: pod_hash}
        template.setdefault("metadata", {})["labels"] = labels
        selector = clone(d["spec"]["selector"])
        selector.setdefault("matchLabels", {})[du.POD_TEMPLATE_HASH] = pod_hash
        new_rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                  "metadata": {"name": f'{d["metadata"]["name"]}-{pod_hash}', "namespace": d["metadata"]["namespace"],
                               "labels": dict(labels), "ownerReferences": [owner_reference(d)]},
                  "spec": {"replicas": 0, "minReadySeconds": d["spec"].get("minReadySeconds", 0),
                           "selector": selector, "template": template}}
        count = du.new_rs_new_replicas(d, [*old_rss, new_rs], new_rs)
        new_rs["spec"]["replicas"] = count
        du.set_new_replica_set_annotations(d, new_rs, new_revision, False)
        already_exists = False
        try:
            created = self.api.create(RS, new_rs, d["metadata"]["namespace"], manager=MANAGER)
        except ApiError as exc:
            if exc.code == 409 and exc.reason == "AlreadyExists":
                created = self._existing_or_collision(d, new_rs)
                already_exists = True
            elif exc.code == 403:
                raise
            else:
                msg = f'Failed to create new replica set "{new_rs["metadata"]["name"]}": {exc.message}'
                if du.has_progress_deadline(d):
                    du.set_condition(status, du.new_condition("Progressing", "False", du.FAILED_RS_CREATE, msg, now))
                    self._write(self.api.store.get(DEPLOY, d["metadata"]["namespace"], d["metadata"]["name"]), d)
                self.api.record_event(d, "Warning", du.FAILED_RS_CREATE, msg, COMPONENT)
                raise
        if not already_exists and count > 0:
            self.api.record_event(d, "Normal", "ScalingReplicaSet",
                                  f'Scaled up replica set {created["metadata"]["name"]} from 0 to {count}', COMPONENT)
        needs_update = self._set_revision(d, new_revision)
        if not already_exists and du.has_progress_deadline(d):
            du.set_condition(status, du.new_condition("Progressing", "True", du.NEW_RS_CREATED,
                                                      f'Created new replica set "{created["metadata"]["name"]}"',
                                                      now))
            needs_update = True
        if needs_update:
            self._write(self.api.store.get(DEPLOY, d["metadata"]["namespace"], d["metadata"]["name"]), d)
        return created

    def _existing_or_collision(self, d: dict, new_rs: dict) -> dict:
        """A ReplicaSet of that name exists: ours with our template, or a hash collision (bump collisionCount)."""
        rs = self.api.store.get(RS, d["metadata"]["namespace"], new_rs["metadata"]["name"])
        ref = controller_of(rs) if rs is not None else None
        if rs is not None and ref is not None and ref.get("uid") == d["metadata"]["uid"] and \
                du.equal_ignore_hash(d["spec"]["template"], rs["spec"]["template"]):
            return rs
        d["status"]["collisionCount"] = int(d["status"].get("collisionCount") or 0) + 1
        self._write(self.api.store.get(DEPLOY, d["metadata"]["namespace"], d["metadata"]["name"]), d)
        raise ApiError(409, "AlreadyExists", f'replicasets.apps "{new_rs["metadata"]["name"]}" already exists')

    @staticmethod
    def _set_revision(d: dict, rev: str) -> bool:
        """SetDeploymentRevision."""
        ann = d["metadata"].setdefault("annotations", {})
        if ann.get(du.REVISION) != rev:
            ann[du.REVISION] = rev
            return True
        return False

    # --- scaling ------------------------------------------------------------------------------
    def _scale_and_record(self, rs: dict, new_scale: int, d: dict) -> tuple[bool, dict]:
        """scaleReplicaSetAndRecordEvent."""
        if du.replicas(rs) == new_scale:
            return False, rs
        return self._scale(rs, new_scale, d, "up" if du.replicas(rs) < new_scale else "down")

    def _scale(self, rs: dict, new_scale: int, d: dict, operation: str) -> tuple[bool, dict]:
        """scaleReplicaSet: spec.replicas and the desired/max annotations, with the ScalingReplicaSet event."""
        size_changed = du.replicas(rs) != new_scale
        desired, maximum = du.replicas(d), du.replicas(d) + du.max_surge(d)
        if not size_changed and not du.replicas_annotations_need_update(rs, desired, maximum):
            return False, rs
        old_scale = du.replicas(rs)
        copy = clone(self.api.store.get(RS, rs["metadata"]["namespace"], rs["metadata"]["name"]) or rs)
        copy["spec"]["replicas"] = new_scale
        du.set_replicas_annotations(copy, desired, maximum)
        updated = self._update_rs(copy)
        if size_changed:
            self.api.record_event(d, "Normal", "ScalingReplicaSet",
                                  f'Scaled {operation} replica set {updated["metadata"]["name"]} from {old_scale} '
                                  f'to {new_scale}', COMPONENT)
        return size_changed, updated

    def _is_scaling_event(self, d: dict, rs_list: list[dict]) -> bool:
        new_rs, old_rss = self._all_replica_sets(d, rs_list, create=False)
        for rs in du.active([*old_rss, new_rs]):
            desired = du.desired_replicas_annotation(rs)
            if desired is not None and desired != du.replicas(d):
                return True
        return False

    def _sync(self, d: dict, rs_list: list[dict]) -> float | None:
        """sync: scaling events and paused Deployments."""
        new_rs, old_rss = self._all_replica_sets(d, rs_list, create=False)
        new_rs, old_rss = self._scale_proportionally(d, new_rs, old_rss)
        if d["spec"].get("paused"):
            self._cleanup(d, old_rss)
        return self._sync_status(d, [*old_rss, new_rs], new_rs)

    def _scale_proportionally(self, d: dict, new_rs: dict | None,
                              old_rss: list[dict]) -> tuple[dict | None, list[dict]]:
        """scale: the one active ReplicaSet takes everything, or all share the change by size."""
        latest = du.find_active_or_latest(new_rs, old_rss)
        if latest is not None:
            if du.replicas(latest) != du.replicas(d):
                _, updated = self._scale_and_record(latest, du.replicas(d), d)
                return self._replace(new_rs, old_rss, updated)
            return new_rs, old_rss
        if du.is_saturated(d, new_rs):
            for old in du.active(old_rss):
                _, updated = self._scale_and_record(old, 0, d)
                new_rs, old_rss = self._replace(new_rs, old_rss, updated)
            return new_rs, old_rss
        if not du.is_rolling_update(d):
            return new_rs, old_rss
        all_rss = du.active([*old_rss, new_rs])
        allowed = du.replicas(d) + du.max_surge(d) if du.replicas(d) > 0 else 0
        to_add = allowed - du.spec_replicas(all_rss)
        operation = ""
        if to_add > 0:
            all_rss, operation = du.by_size_newer(all_rss), "up"
        elif to_add < 0:
            all_rss, operation = du.by_size_older(all_rss), "down"
        added = 0
        sizes: dict[str, int] = {}
        for rs in all_rss:
            if to_add != 0:
                share = du.proportion(rs, d, to_add, added)
                sizes[rs["metadata"]["name"]] = du.replicas(rs) + share
                added += share
            else:
                sizes[rs["metadata"]["name"]] = du.replicas(rs)
        for i, rs in enumerate(all_rss):
            name = rs["metadata"]["name"]
            if i == 0 and to_add != 0:
                sizes[name] = max(sizes[name] + to_add - added, 0)
            _, updated = self._scale(rs, sizes[name], d, operation)
            new_rs, old_rss = self._replace(new_rs, old_rss, updated)
        return new_rs, old_rss

    @staticmethod
    def _replace(new_rs: dict | None, old_rss: list[dict], updated: dict) -> tuple[dict | None, list[dict]]:
        uid = updated["metadata"]["uid"]
        if new_rs is not None and new_rs["metadata"]["uid"] == uid:
            return updated, old_rss
        return new_rs, [updated if rs["metadata"]["uid"] == uid else rs for rs in old_rss]

    def _cleanup(self, d: dict, old_rss: list[dict]) -> None:
        """cleanupDeployment: delete the oldest idle ReplicaSets beyond revisionHistoryLimit."""
        if not du.has_revision_history_limit(d):
            return
        alive = [rs for rs in old_rss if not rs["metadata"].get("deletionTimestamp")]
        diff = len(alive) - int(d["spec"]["revisionHistoryLimit"])
        if diff <= 0:
            return
        for rs in sorted(alive, key=lambda r: (du.revision(r), r["metadata"].get("creationTimestamp", "")))[:diff]:
            if du.status_count(rs, "replicas") != 0 or du.replicas(rs) != 0 or \
                    rs["metadata"].get("generation", 0) > (rs.get("status") or {}).get("observedGeneration", 0):
                continue
            try:
                self.api.delete(RS, rs["metadata"]["name"], rs["metadata"]["namespace"])
            except ApiError as exc:
                if exc.code != 404:
                    raise

    # --- rollouts -----------------------------------------------------------------------------
    def _rollout_rolling(self, d: dict, rs_list: list[dict]) -> float | None:
        new_rs, old_rss = self._all_replica_sets(d, rs_list, create=True)
        all_rss = [*old_rss, new_rs]
        if new_rs is not None and self._reconcile_new(d, all_rss, new_rs):
            return self._sync_rollout_status(d, all_rss, new_rs)
        if new_rs is not None and self._reconcile_old(d, all_rss, du.active(old_rss), new_rs):
            return self._sync_rollout_status(d, all_rss, new_rs)
        if du.deployment_complete(d, d.get("status") or {}):
            self._cleanup(d, old_rss)
        return self._sync_rollout_status(d, all_rss, new_rs)

    def _reconcile_new(self, d: dict, all_rss: list[dict], new_rs: dict) -> bool:
        if du.replicas(new_rs) == du.replicas(d):
            return False
        if du.replicas(new_rs) > du.replicas(d):
            scaled, _ = self._scale_and_record(new_rs, du.replicas(d), d)
            return scaled
        scaled, _ = self._scale_and_record(new_rs, du.new_rs_new_replicas(d, all_rss, new_rs), d)
        return scaled

    def _reconcile_old(self, d: dict, all_rss: list[dict], old_rss: list[dict], new_rs: dict) -> bool:
        if du.spec_replicas(old_rss) == 0:
            return False
        min_available = du.replicas(d) - du.max_unavailable(d)
        new_unavailable = du.replicas(new_rs) - du.status_count(new_rs, "availableReplicas")
        max_scaled_down = du.spec_replicas(all_rss) - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False
        old_rss, cleaned = self._cleanup_unhealthy(d, old_rss, max_scaled_down)
        scaled = self._scale_down_old_for_rolling_update(d, [*old_rss, new_rs], old_rss)
        return cleaned + scaled > 0

    def _cleanup_unhealthy(self, d: dict, old_rss: list[dict], max_cleanup: int) -> tuple[list[dict], int]:
        """cleanupUnhealthyReplicas: scale down the unavailable pods of old ReplicaSets first."""
        total = 0
        result = []
        for rs in du.by_creation(old_rss):
            if total >= max_cleanup or du.replicas(rs) == 0 or \
                    du.replicas(rs) == du.status_count(rs, "availableReplicas"):
                result.append(rs)
                continue
            down = min(max_cleanup - total, du.replicas(rs) - du.status_count(rs, "availableReplicas"))
            _, updated = self._scale_and_record(rs, du.replicas(rs) - down, d)
            total += down
            result.append(updated)
        return result, total

    def _scale_down_old_for_rolling_update(self, d: dict, all_rss: list[dict], old_rss: list[dict]) -> int:
        min_available = du.replicas(d) - du.max_unavailable(d)
        available = du.available_replicas(all_rss)
        if available <= min_available:
            return 0
        total, budget = 0, available - min_available
        for rs in du.by_creation(old_rss):
            if total >= budget:
                break
            if du.replicas(rs) == 0:
                continue
            down = min(du.replicas(rs), budget - total)
            self._scale_and_record(rs, du.replicas(rs) - down, d)
            total += down
        return total

    def _rollout_recreate(self, d: dict, rs_list: list[dict]) -> float | None:
        new_rs, old_rss = self._all_replica_sets(d, rs_list, create=False)
        all_rss = [*old_rss, new_rs]
        scaled_down = False
        for rs in du.active(old_rss):
            scaled, updated = self._scale_and_record(rs, 0, d)
            if scaled:
                scaled_down = True
                new_rs, old_rss = self._replace(new_rs, old_rss, updated)
        if scaled_down:
            return self._sync_rollout_status(d, [*old_rss, new_rs], new_rs)
        if self._old_pods_running(new_rs, old_rss):
            return self._sync_rollout_status(d, all_rss, new_rs)
        if new_rs is None:
            new_rs, old_rss = self._all_replica_sets(d, rs_list, create=True)
            all_rss = [*old_rss, new_rs]
        if new_rs is not None:
            self._scale_and_record(new_rs, du.replicas(d), d)
        if du.deployment_complete(d, d.get("status") or {}):
            self._cleanup(d, old_rss)
        return self._sync_rollout_status(d, all_rss, new_rs)

    def _old_pods_running(self, new_rs: dict | None, old_rss: list[dict]) -> bool:
        if du.actual_replicas(old_rss) > 0:
            return True
        for rs in old_rss:
            for pod in controlled(self.api, "pods", rs["metadata"]["uid"]):
                if (pod.get("status") or {}).get("phase") not in ("Failed", "Succeeded"):
                    return True
        return False

    # --- status --------------------------------------------------------------------------------
    def _check_paused_conditions(self, d: dict) -> dict:
        if not du.has_progress_deadline(d):
            return d
        status = d.setdefault("status", {})
        cond = du.get_condition(status, "Progressing")
        if cond is not None and cond.get("reason") == du.TIMED_OUT:
            return d
        paused_cond = cond is not None and cond.get("reason") == du.PAUSED
        now = self.api.clock()
        if d["spec"].get("paused") and not paused_cond:
            du.set_condition(status, du.new_condition("Progressing", "Unknown", du.PAUSED, "Deployment is paused", now))
        elif not d["spec"].get("paused") and paused_cond:
            du.set_condition(status, du.new_condition("Progressing", "Unknown", du.RESUMED, "Deployment is resumed",
                                                      now))
        else:
            return d
        return self._write(self.api.store.get(DEPLOY, d["metadata"]["namespace"], d["metadata"]["name"]), d)

    def _sync_status(self, d: dict, all_rss: list[dict | None], new_rs: dict | None) -> None:
        """syncDeploymentStatus."""
        status = du.calculate_status(all_rss, new_rs, d, self.api.clock())
        if status != (d.get("status") or {}):
            d["status"] = status
            self._write(self.api.store.get(DEPLOY, d["metadata"]["namespace"], d["metadata"]["name"]), d)
        return None

    def _sync_rollout_status(self, d: dict, all_rss: list[dict | None], new_rs: dict | None) -> float | None:
        """syncRolloutStatus: the Progressing condition, then requeueStuckDeployment."""
        now = self.api.clock()
        status = du.calculate_status(all_rss, new_rs, d, now)
        if not du.has_progress_deadline(d):
            du.remove_condition(status, "Progressing")
        current = du.get_condition(d.get("status") or {}, "Progressing")
        complete_already = status.get("replicas", 0) == status.get("updatedReplicas", 0) and \
            current is not None and current.get("reason") == du.NEW_RS_AVAILABLE
        if du.has_progress_deadline(d) and not complete_already:
            subject = f'ReplicaSet "{new_rs["metadata"]["name"]}"' if new_rs is not None \
                else f'Deployment "{d["metadata"]["name"]}"'
            if du.deployment_complete(d, status):
                du.set_condition(status, du.new_condition("Progressing", "True", du.NEW_RS_AVAILABLE,
                                                          f"{subject} has successfully progressed.", now))
            elif du.deployment_progressing(d, status):
                cond = du.new_condition("Progressing", "True", du.RS_UPDATED, f"{subject} is progressing.", now)
                if current is not None:
                    if current.get("status") == "True":
                        cond["lastTransitionTime"] = current.get("lastTransitionTime")
                    du.remove_condition(status, "Progressing")
                du.set_condition(status, cond)
            elif du.deployment_timed_out(d, status, now):
                du.set_condition(status, du.new_condition("Progressing", "False", du.TIMED_OUT,
                                                          f"{subject} has timed out progressing.", now))
        failure = self._replica_failure(all_rss, new_rs)
        if failure is not None:
            du.set_condition(status, failure)
        else:
            du.remove_condition(status, "ReplicaFailure")
        if status == (d.get("status") or {}):
            return self._requeue_stuck(d, status, now)
        d["status"] = status
        self._write(self.api.store.get(DEPLOY, d["metadata"]["namespace"], d["metadata"]["name"]), d)
        return None

    @staticmethod
    def _replica_failure(all_rss: list[dict | None], new_rs: dict | None) -> dict | None:
        """getReplicaFailures: the new ReplicaSet's ReplicaFailure condition first, else an old one's."""
        ordered = [new_rs] if new_rs is not None else []
        ordered += [rs for rs in all_rss if rs is not None and rs is not new_rs]
        for rs in ordered:
            for c in (rs.get("status") or {}).get("conditions") or ():
                if c.get("type") == "ReplicaFailure":
                    return {"type": "ReplicaFailure", "status": c.get("status"),
                            "lastUpdateTime": c.get("lastTransitionTime"),
                            "lastTransitionTime": c.get("lastTransitionTime"), "reason": c.get("reason"),
                            "message": c.get("message")}
        return None

    @staticmethod
    def _requeue_stuck(d: dict, status: dict, now: float) -> float | None:
        """requeueStuckDeployment: look again when the progress deadline passes."""
        current = du.get_condition(d.get("status") or {}, "Progressing")
        if not du.has_progress_deadline(d) or current is None:
            return None
        if du.deployment_complete(d, status) or current.get("reason") == du.TIMED_OUT:
            return None
        since = parse_time(current.get("lastUpdateTime"))
        if since is None:
            return None
        after = since + int(d["spec"]["progressDeadlineSeconds"]) - now
        return 0.005 if after < 1 else after + 1
