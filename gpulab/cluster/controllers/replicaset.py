"""The ReplicaSet controller: keep ``spec.replicas`` pods of the template alive, and report them in status.

Port of pkg/controller/replicaset/replica_set.go (``syncReplicaSet``,
``manageReplicas``, ``getPodsToDelete``) and replica_set_utils.go
(``calculateStatus``, ``updateReplicaSetStatus``) as of v1.36, with the
DeploymentReplicaSetTerminatingReplicas feature (beta, on) counting
terminating pods. Pods are named by the API server from ``generateName``
``<replicaset>-`` plus five random characters. kube-controller-manager's
expectations (which guard its informer cache against its own in-flight writes)
are not needed: the store is read after every write.
"""
from __future__ import annotations

import asyncio

from ..errors import ApiError
from ..objects import clone, controller_of, rfc3339
from ..selectors import label_selector_from_dict
from .workload import (MANAGER, OwnerKeyedController, claim, controlled, create_pod, delete_pod, deletion_order,
                       index_by_controller, is_active, is_available, is_ready, is_terminating, pod_from_template,
                       selector_owners)

COMPONENT = "replicaset-controller"
RS = "replicasets.apps"
BURST_REPLICAS = 500  # replica_set.go BurstReplicas: creations or deletions per sync
_YIELD_EVERY = 50


class ReplicaSetController(OwnerKeyedController):
    name = COMPONENT
    watches = (RS, "pods")
    #: The kind this controller keeps replicas of (the ReplicationController manager reuses it, as upstream's does).
    resource, kind = RS, "ReplicaSet"

    def __init__(self, api):
        super().__init__(api)
        index_by_controller(api, "pods")
        index_by_controller(api, self.resource)

    @staticmethod
    def selector(owner: dict) -> list:
        return label_selector_from_dict((owner.get("spec") or {}).get("selector"))

    def keys_for(self, key: str, obj: dict):
        m = obj["metadata"]
        if key == self.resource:
            return [(m.get("namespace", ""), m["name"])]
        ref = controller_of(obj)
        if ref is not None:
            return [(m.get("namespace", ""), ref["name"])] if ref.get("kind") == self.kind else []
        return selector_owners(self.api, self.resource, obj, self.selector)

    async def reconcile(self, work_key) -> float | None:
        ns, name = work_key
        rs = self.api.store.get(self.resource, ns, name)
        if rs is None:
            return None
        selector = self.selector(rs)
        owned = controlled(self.api, "pods", rs["metadata"]["uid"])
        self.sizes[work_key] = len(owned)
        active: list[dict] = []
        terminating = 0
        for pod in claim(self.api, "pods", rs, selector, owned=owned):
            if is_active(pod):
                active.append(pod)
            elif is_terminating(pod):
                terminating += 1
        error: ApiError | None = None
        if not rs["metadata"].get("deletionTimestamp"):
            try:
                await self._manage(rs, active)
            except ApiError as exc:
                error = exc
        now = self.api.clock()
        status = calculate_status(rs, active, terminating, error, now)
        updated = self._write_status(rs, status)
        if error is not None:
            raise error
        spec = updated["spec"]
        st = updated.get("status") or {}
        if spec.get("minReadySeconds", 0) > 0 and st.get("readyReplicas", 0) == spec.get("replicas") and \
                st.get("availableReplicas", 0) != spec.get("replicas"):
            return float(spec["minReadySeconds"])
        return None

    # --- manageReplicas ------------------------------------------------------
    async def _manage(self, rs: dict, active: list[dict]) -> None:
        diff = len(active) - int(rs["spec"].get("replicas", 1))
        if diff < 0:
            for i in range(min(-diff, BURST_REPLICAS)):
                create_pod(self.api, rs, pod_from_template(rs["spec"]["template"], rs), self.name)
                if i % _YIELD_EVERY == _YIELD_EVERY - 1:
                    await asyncio.sleep(0)
        elif diff > 0:
            for i, pod in enumerate(self._pods_to_delete(rs, active, min(diff, BURST_REPLICAS))):
                delete_pod(self.api, rs, pod, self.name)
                if i % _YIELD_EVERY == _YIELD_EVERY - 1:
                    await asyncio.sleep(0)

    def _pods_to_delete(self, rs: dict, active: list[dict], diff: int) -> list[dict]:
        """getPodsToDelete: rank by the active pods of this and sibling ReplicaSets on the same node."""
        if diff >= len(active):
            return active[:diff]
        on_node: dict[str, int] = {}
        for pod in self._related_pods(rs):
            if is_active(pod):
                node = (pod.get("spec") or {}).get("nodeName") or ""
                on_node[node] = on_node.get(node, 0) + 1
        ranks = [on_node.get((p.get("spec") or {}).get("nodeName") or "", 0) for p in active]
        return deletion_order(active, ranks, self.api.clock())[:diff]

    def _related_pods(self, rs: dict) -> list[dict]:
        """getIndirectlyRelatedPods: pods of every ReplicaSet sharing this one's controller (or this one's)."""
        owner = controller_of(rs)
        siblings = controlled(self.api, self.resource, owner["uid"]) if owner else [rs]
        pods: list[dict] = []
        for sibling in siblings:
            pods.extend(controlled(self.api, "pods", sibling["metadata"]["uid"]))
        return pods

    def _write_status(self, rs: dict, status: dict) -> dict:
        """updateReplicaSetStatus: write only when a count, the generation or the conditions changed."""
        if rs.get("status") == status:
            return rs
        new = clone(rs)
        new["status"] = status
        return self.api.update(self.resource, new, rs["metadata"]["namespace"], subresource="status", manager=MANAGER)


def calculate_status(rs: dict, active: list[dict], terminating: int, error: ApiError | None, now: float) -> dict:
    """calculateStatus, serialized as the v1 API does (zero counts other than replicas omitted)."""
    spec = rs["spec"]
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    min_ready = int(spec.get("minReadySeconds", 0))
    fully = ready = available = 0
    for pod in active:
        labels = pod["metadata"].get("labels") or {}
        if all(labels.get(k) == v for k, v in template_labels.items()):
            fully += 1
        if is_ready(pod):
            ready += 1
            if is_available(pod, min_ready, now):
                available += 1
    old_conditions = (rs.get("status") or {}).get("conditions") or []
    conditions = [c for c in old_conditions if c.get("type") != "ReplicaFailure"]
    old_failure = next((c for c in old_conditions if c.get("type") == "ReplicaFailure"), None)
    if error is not None:
        if old_failure is not None:
            conditions.append(old_failure)
        else:
            diff = len(active) - int(spec.get("replicas", 1))
            reason = "FailedCreate" if diff < 0 else ("FailedDelete" if diff > 0 else "")
            failure = {"type": "ReplicaFailure", "status": "True", "lastTransitionTime": rfc3339(now),
                       "reason": reason, "message": error.message}
            conditions.append({k: v for k, v in failure.items() if v})
    status: dict = {"replicas": len(active)}
    for field, value in (("fullyLabeledReplicas", fully), ("readyReplicas", ready), ("availableReplicas", available)):
        if value:
            status[field] = value
    status["terminatingReplicas"] = terminating
    if rs["metadata"].get("generation"):
        status["observedGeneration"] = rs["metadata"]["generation"]
    if conditions:
        status["conditions"] = conditions
    return status
