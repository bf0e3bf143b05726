"""The StatefulSet controller: pods with stable names and claims, created, scaled and updated by ordinal.

Port of pkg/controller/statefulset (stateful_set.go, stateful_set_control.go
``updateStatefulSet``/``runForAll``, stateful_set_utils.go, stateful_pod_control.go)
as of v1.37:

- pod ``NAME-i`` for each ordinal ``i`` in [ordinals.start, start+replicas),
  with hostname ``NAME-i``, subdomain ``spec.serviceName`` and the labels
  ``statefulset.kubernetes.io/pod-name``, ``apps.kubernetes.io/pod-index`` and
  ``controller-revision-hash``;
- a claim ``TEMPLATE-NAME-i`` per volumeClaimTemplate, created before its pod
  and mounted as the template's volume (owner references per
  persistentVolumeClaimRetentionPolicy: Delete whenDeleted makes the
  StatefulSet own them, Delete whenScaled makes the condemned pod own its);
- OrderedReady: create in ordinal order, each only after every lower one is
  Running and Ready; delete from the highest ordinal, one at a time and only
  while all the others are healthy; Parallel: all at once;
- RollingUpdate: once every pod is Running and Ready, delete pods from the
  highest ordinal down to ``partition`` whose revision is not the update
  revision, at most ``maxUnavailable`` unavailable at a time (one for
  OrderedReady); OnDelete: only pods deleted by hand are recreated at the
  update revision;
- failed pods are deleted and recreated (``RecreatingFailedPod``);
- ControllerRevisions ``NAME-HASH`` holding the template as a strategic
  merge patch (``kubectl rollout history/undo``), revision history pruned
  to revisionHistoryLimit;
- status: replicas, readyReplicas, availableReplicas, currentReplicas,
  updatedReplicas, currentRevision, updateRevision, observedGeneration,
  collisionCount (what ``kubectl rollout status`` reads).

Events name the operation as stateful_pod_control.go does:
``Create Pod web-0 in StatefulSet web successful`` (the verb title-cased, as recordPodEvent does).
"""
from __future__ import annotations

import re

from ..errors import ApiError
from ..objects import clone, controller_of, owner_reference
from ..selectors import label_selector_from_dict, matches_labels
from . import history
from .workload import MANAGER, OwnerKeyedController, controlled, index_by_controller, is_available, is_ready

COMPONENT = "statefulset-controller"
STS = "statefulsets.apps"
PVCS = "persistentvolumeclaims"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def ordinal(sts_name: str, pod: dict) -> int | None:
    """getParentNameAndOrdinal: the ordinal of ``NAME-i``, None for any other name."""
    m = re.fullmatch(re.escape(sts_name) + r"-(\d+)", pod["metadata"]["name"])
    return int(m.group(1)) if m else None


def claim_name(template: dict, sts: dict, i: int) -> str:
    return f"{template['metadata']['name']}-{sts['metadata']['name']}-{i}"


def _running_and_ready(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and is_ready(pod)


def _failed(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") == "Failed"


def _terminating(pod: dict) -> bool:
    return pod["metadata"].get("deletionTimestamp") is not None


def _revision_of(pod: dict) -> str:
    return (pod["metadata"].get("labels") or {}).get(history.REVISION_HASH_LABEL, "")


class StatefulSetController(OwnerKeyedController):
    name = COMPONENT
    watches = (STS, "pods")

    def __init__(self, api):
        super().__init__(api)
        index_by_controller(api, "pods")
        index_by_controller(api, history.REVISIONS)

    def keys_for(self, key: str, obj: dict):
        m = obj["metadata"]
        if key == STS:
            return [(m.get("namespace", ""), m["name"])]
        ref = controller_of(obj)
        if ref is not None:
            return [(m.get("namespace", ""), ref["name"])] if ref.get("kind") == "StatefulSet" else []
        return []

    # --- the sync ---------------------------------------------------------------------------------
    async def reconcile(self, work_key) -> float | None:
        ns, name = work_key
        sts = self.api.store.get(STS, ns, name)
        if sts is None:
            return None
        if sts["metadata"].get("deletionTimestamp"):
            return None
        pods = self._claim_pods(sts)
        current, update, collisions = history.construct(self.api, sts)
        self._sync(sts, pods, current, update)
        pods = self._claim_pods(sts)
        status = self._status(sts, pods, current, update, collisions)
        history.truncate(self.api, sts, {_revision_of(p) for p in pods.values()}, current, update)
        if sts.get("status") != status:
            new = clone(sts)
            new["status"] = status
            self.api.update(STS, new, ns, subresource="status", manager=MANAGER)
        min_ready = int(sts["spec"].get("minReadySeconds") or 0)
        if min_ready and status.get("availableReplicas", 0) < status.get("readyReplicas", 0):
            return float(min_ready)
        return None

    def _claim_pods(self, sts: dict) -> dict[int, dict]:
        """The StatefulSet's pods by ordinal (owned ones, and orphans with its name pattern that match)."""
        selector = label_selector_from_dict(sts["spec"].get("selector"))
        out: dict[int, dict] = {}
        for pod in controlled(self.api, "pods", sts["metadata"]["uid"]):
            i = ordinal(sts["metadata"]["name"], pod)
            if i is not None and matches_labels(selector, pod["metadata"].get("labels")):
                out[i] = pod
        return out

    def _sync(self, sts: dict, pods: dict[int, dict], current: dict, update: dict) -> None:
        spec = sts["spec"]
        start = int((spec.get("ordinals") or {}).get("start") or 0)
        replicas = int(spec.get("replicas", 1))
        wanted = range(start, start + replicas)
        ordered = spec.get("podManagementPolicy", "OrderedReady") == "OrderedReady"
        min_ready = int(spec.get("minReadySeconds") or 0)
        now = self.api.clock()
        # pods for the ordinals wanted, lowest first
        for i in wanted:
            pod = pods.get(i)
            if pod is not None and _failed(pod) and not _terminating(pod):
                self._event(sts, "Warning", "RecreatingFailedPod",
                            f"StatefulSet {sts['metadata']['namespace']}/{sts['metadata']['name']} is recreating "
                            f"failed Pod {pod['metadata']['name']}")
                self._delete_pod(sts, pod)
                pod = pods[i] = None
                if ordered:
                    return
            if pod is None:
                revision = current if self._use_current(sts, i, current, update) else update
                self._create_pod(sts, i, revision)
                if ordered:
                    return
                continue
            self._ensure_claims(sts, i)
            if ordered and (_terminating(pod) or not _running_and_ready(pod) or
                            not is_available(pod, min_ready, now)):
                return
        # condemned pods (ordinals beyond the wanted range), highest first
        condemned = sorted((i for i in pods if i not in wanted), reverse=True)
        if condemned:
            healthy = all(_running_and_ready(p) and not _terminating(p) for j, p in pods.items() if j in wanted)
            for i in condemned:
                pod = pods[i]
                if _terminating(pod):
                    if ordered:
                        return
                    continue
                if ordered and not healthy:
                    return
                self._orphan_claims_when_scaled(sts, i, pod)
                self._delete_pod(sts, pod)
                if ordered:
                    return
        if spec.get("updateStrategy", {}).get("type") != "RollingUpdate":
            return
        self._rolling_update(sts, pods, wanted, update, ordered)

    def _use_current(self, sts: dict, i: int, current: dict, update: dict) -> bool:
        """newVersionedStatefulSetPod: an ordinal below the partition (or any, with OnDelete) keeps the current
        revision until the rollout reaches it."""
        strategy = sts["spec"].get("updateStrategy") or {}
        if strategy.get("type") == "OnDelete":
            return False
        partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0)
        return current["metadata"]["name"] != update["metadata"]["name"] and i < partition

    def _rolling_update(self, sts: dict, pods: dict[int, dict], wanted: range, update: dict, ordered: bool) -> None:
        """updateStatefulSet's rolling update: highest ordinal first, down to the partition."""
        live = [pods[i] for i in wanted if i in pods]
        if len(live) < len(wanted) or not all(_running_and_ready(p) and not _terminating(p) for p in live):
            if ordered:
                return
        rolling = (sts["spec"].get("updateStrategy") or {}).get("rollingUpdate") or {}
        partition = int(rolling.get("partition") or 0)
        budget = 1 if ordered else _max_unavailable(rolling.get("maxUnavailable", 1), len(wanted))
        unavailable = sum(1 for i in wanted if i not in pods or not _running_and_ready(pods[i]) or
                          _terminating(pods[i]))
        for i in sorted(wanted, reverse=True):
            if i < partition or i not in pods:
                continue
            pod = pods[i]
            if _revision_of(pod) == update["metadata"]["name"]:
                continue
            if _terminating(pod):
                return
            if unavailable >= budget:
                return
            self._delete_pod(sts, pod)
            unavailable += 1

    # --- pods and claims ---------------------------------------------------------------------------------
    def _pod(self, sts: dict, i: int, revision: dict) -> dict:
        """newVersionedStatefulSetPod: the revision's template, the identity, and the claim volumes."""
        name = f"{sts['metadata']['name']}-{i}"
        template = history.template_of(revision) or sts["spec"]["template"]
        tmeta = template.get("metadata") or {}
        labels = dict(tmeta.get("labels") or {})
        labels.update({POD_NAME_LABEL: name, POD_INDEX_LABEL: str(i),
                       history.REVISION_HASH_LABEL: revision["metadata"]["name"]})
        meta = {"name": name, "labels": labels, "ownerReferences": [owner_reference(sts)]}
        for field in ("annotations", "finalizers"):
            if tmeta.get(field):
                meta[field] = clone(tmeta[field])
        spec = clone(template.get("spec") or {})
        spec["hostname"] = name
        if sts["spec"].get("serviceName"):
            spec["subdomain"] = sts["spec"]["serviceName"]
        claims = {t["metadata"]["name"]: claim_name(t, sts, i) for t in sts["spec"].get("volumeClaimTemplates") or []}
        volumes = [v for v in spec.get("volumes") or [] if v.get("name") not in claims]
        volumes += [{"name": vol, "persistentVolumeClaim": {"claimName": claim}} for vol, claim in claims.items()]
        if volumes:
            spec["volumes"] = volumes
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}

    def _create_pod(self, sts: dict, i: int, revision: dict) -> None:
        if not self._ensure_claims(sts, i):
            return
        pod = self._pod(sts, i, revision)
        ns, name = sts["metadata"]["namespace"], pod["metadata"]["name"]
        try:
            self.api.create("pods", pod, ns, manager=MANAGER)
        except ApiError as exc:
            if exc.code == 409:
                return
            self._event(sts, "Warning", "FailedCreate",
                        f"Create Pod {name} in StatefulSet {sts['metadata']['name']} failed error: {exc.message}")
            raise
        self._event(sts, "Normal", "SuccessfulCreate",
                    f"Create Pod {name} in StatefulSet {sts['metadata']['name']} successful")

    def _ensure_claims(self, sts: dict, i: int) -> bool:
        """createPersistentVolumeClaims: the claims of ordinal ``i`` (False when one is being deleted)."""
        ns = sts["metadata"]["namespace"]
        pod_name = f"{sts['metadata']['name']}-{i}"
        retention = sts["spec"].get("persistentVolumeClaimRetentionPolicy") or {}
        for template in sts["spec"].get("volumeClaimTemplates") or []:
            name = claim_name(template, sts, i)
            existing = self.api.store.get(PVCS, ns, name)
            if existing is not None:
                if existing["metadata"].get("deletionTimestamp"):
                    return False
                continue
            claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                     "metadata": {"name": name, "namespace": ns,
                                  "labels": {**((template.get("metadata") or {}).get("labels") or {}),
                                             **((sts["spec"].get("selector") or {}).get("matchLabels") or {})}},
                     "spec": clone(template.get("spec") or {})}
            if (template.get("metadata") or {}).get("annotations"):
                claim["metadata"]["annotations"] = dict(template["metadata"]["annotations"])
            if retention.get("whenDeleted") == "Delete":
                claim["metadata"]["ownerReferences"] = [owner_reference(sts, controller=False,
                                                                        block_owner_deletion=True)]
            try:
                self.api.create(PVCS, claim, ns, manager=MANAGER)
            except ApiError as exc:
                if exc.code == 409:
                    continue
                self._event(sts, "Warning", "FailedCreate",
                            f"Create Claim {name} for Pod {pod_name} in StatefulSet {sts['metadata']['name']} "
                            f"failed error: {exc.message}")
                raise
            self._event(sts, "Normal", "SuccessfulCreate",
                        f"Create Claim {name} Pod {pod_name} in StatefulSet {sts['metadata']['name']} success")
        return True

    def _orphan_claims_when_scaled(self, sts: dict, i: int, pod: dict) -> None:
        """With whenScaled Delete, a condemned pod owns its claims so they go with it."""
        retention = sts["spec"].get("persistentVolumeClaimRetentionPolicy") or {}
        if retention.get("whenScaled") != "Delete":
            return
        ns = sts["metadata"]["namespace"]
        for template in sts["spec"].get("volumeClaimTemplates") or []:
            claim = self.api.store.get(PVCS, ns, claim_name(template, sts, i))
            if claim is None:
                continue
            refs = [r for r in claim["metadata"].get("ownerReferences") or [] if r.get("uid") != sts["metadata"]["uid"]]
            refs.append(owner_reference(pod, controller=False, block_owner_deletion=True))
            self.api.patch(PVCS, claim["metadata"]["name"], {"metadata": {"ownerReferences": refs}}, "merge", ns,
                           manager=MANAGER)

    def _delete_pod(self, sts: dict, pod: dict) -> None:
        name = pod["metadata"]["name"]
        try:
            self.api.delete("pods", name, pod["metadata"]["namespace"])
        except ApiError as exc:
            if exc.code == 404:
                return
            self._event(sts, "Warning", "FailedDelete",
                        f"Delete Pod {name} in StatefulSet {sts['metadata']['name']} failed error: {exc.message}")
            raise
        self._event(sts, "Normal", "SuccessfulDelete",
                    f"Delete Pod {name} in StatefulSet {sts['metadata']['name']} successful")

    def _event(self, sts: dict, type_: str, reason: str, message: str) -> None:
        self.api.record_event(sts, type_, reason, message, COMPONENT)

    # --- status -----------------------------------------------------------------------------------------------
    def _status(self, sts: dict, pods: dict[int, dict], current: dict, update: dict,
                collisions: int | None) -> dict:
        """computeReplicaStatus and the revision bookkeeping of updateStatefulSet."""
        now = self.api.clock()
        min_ready = int(sts["spec"].get("minReadySeconds") or 0)
        counted = [p for p in pods.values() if not _terminating(p)]
        current_name, update_name = current["metadata"]["name"], update["metadata"]["name"]
        ready = sum(1 for p in counted if _running_and_ready(p))
        available = sum(1 for p in counted if _running_and_ready(p) and is_available(p, min_ready, now))
        current_count = sum(1 for p in counted if _revision_of(p) == current_name)
        updated = sum(1 for p in counted if _revision_of(p) == update_name)
        replicas = int(sts["spec"].get("replicas", 1))
        status = {"observedGeneration": sts["metadata"].get("generation", 1), "replicas": len(counted)}
        for field, value in (("readyReplicas", ready), ("currentReplicas", current_count),
                             ("updatedReplicas", updated)):
            if value:
                status[field] = value
        status["availableReplicas"] = available
        if updated == replicas and ready == replicas and len(counted) == replicas:
            # the rollout is complete: the update revision becomes the current one
            current_name = update_name
            status["currentReplicas"] = updated
        status["currentRevision"] = current_name
        status["updateRevision"] = update_name
        status["collisionCount"] = collisions or 0     # updateStatefulSet always sets the pointer
        if not status.get("currentReplicas"):
            status.pop("currentReplicas", None)
        return status


def _max_unavailable(value, replicas: int) -> int:
    """getStatefulSetMaxUnavailable: an int or a percentage of replicas (rounded down), at least 1."""
    if isinstance(value, str) and value.endswith("%"):
        value = int(value[:-1]) * replicas // 100
    return max(int(value or 0), 1)
