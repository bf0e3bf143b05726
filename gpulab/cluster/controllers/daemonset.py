"""The DaemonSet controller: one pod on every eligible node, rolled out through ControllerRevisions.

Port of pkg/controller/daemon (v1.36): daemon_controller.go (``syncDaemonSet``,
``manage``, ``podsShouldBeOnNode``, ``syncNodes``, ``updateDaemonSetStatus``),
update.go (``rollingUpdate`` without surge, ``constructHistory``,
``cleanupHistory``). Since v1.12 the controller does not bind daemon pods: it
creates each with a required node affinity ``metadata.name In [node]`` and the
scheduler places it. A node's eligibility follows ``NodeShouldRunDaemonPod``
(see daemonsetutil). Failed daemon pods are deleted with a per-node backoff
(1 s doubling to 15 min, as ``failedPodsBackoff``).
"""
from __future__ import annotations

import asyncio

from ..errors import ApiError
from ..objects import clone, controller_of, owner_reference, parse_time
from ..selectors import label_selector_from_dict
from . import daemonsetutil as util
from .workload import (MANAGER, OwnerKeyedController, claim, compute_hash, controlled, create_pod, delete_pod,
                       index_by_controller, is_available, is_ready, is_terminal, pod_from_template, scaled_value,
                       selector_owners)

COMPONENT = "daemonset-controller"
DS = "daemonsets.apps"
REVISIONS = "controllerrevisions.apps"
BURST_REPLICAS = 250  # daemon_controller.go BurstReplicas
_BACKOFF_INITIAL, _BACKOFF_MAX = 1.0, 15 * 60.0


class DaemonSetController(OwnerKeyedController):
    name = COMPONENT
    watches = (DS, "pods", "nodes", REVISIONS)

    def __init__(self, api):
        super().__init__(api)
        index_by_controller(api, "pods")
        index_by_controller(api, REVISIONS)
        self._backoff: dict[tuple[str, str, str], tuple[float, float]] = {}  # (ns, ds, node) -> (delay, until)

    def keys_for(self, key: str, obj: dict):
        m = obj["metadata"]
        if key == DS:
            return [(m.get("namespace", ""), m["name"])]
        if key == "nodes":
            return [(d["metadata"]["namespace"], d["metadata"]["name"]) for d in self.api.store.list(DS)]
        ref = controller_of(obj)
        if ref is not None:
            return [(m.get("namespace", ""), ref["name"])] if ref.get("kind") == "DaemonSet" else []
        return selector_owners(self.api, DS, obj) if key == "pods" else []

    def keys_for_change(self, key: str, obj: dict, old: dict | None):
        if key == "nodes" and old is not None and _same_placement(old, obj):
            return []  # heartbeats and status changes do not move daemon pods
        return super().keys_for_change(key, obj, old)

    # --- syncDaemonSet --------------------------------------------------------------
    async def reconcile(self, work_key) -> float | None:
        ns, name = work_key
        ds = self.api.store.get(DS, ns, name)
        if ds is None:
            return None
        if ds["spec"].get("selector") == {}:
            self.api.record_event(ds, "Warning", "SelectingAll",
                                  "This daemon set is selecting all pods. A non-empty selector is required.", COMPONENT)
            return None
        if ds["metadata"].get("deletionTimestamp"):
            return None
        current, old_revisions = self._construct_history(ds)
        revision_hash = current["metadata"]["labels"][util.REVISION_HASH]
        nodes = self.api.store.list("nodes")
        self.sizes[work_key] = len(nodes)
        eligible = util.Eligibility(ds)
        verdicts = {n["metadata"]["name"]: eligible(n) for n in nodes}
        by_node = self._nodes_to_pods(ds)
        changed, retry_after = await self._manage(ds, verdicts, by_node, revision_hash)
        if not changed and (ds["spec"].get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate":
            changed = await self._rolling_update(ds, verdicts, by_node, revision_hash)
        if changed:
            by_node = self._nodes_to_pods(ds)
        self._cleanup_history(ds, old_revisions)
        again = self._update_status(ds, verdicts, by_node, revision_hash)
        delays = [d for d in (retry_after, again) if d is not None]
        return min(delays) if delays else None

    def _nodes_to_pods(self, ds: dict, include_deleted_terminal: bool = False) -> dict[str, list[dict]]:
        """getNodesToDaemonPods: claimed pods by target node."""
        pods = claim(self.api, "pods", ds, label_selector_from_dict(ds["spec"].get("selector")))
        by_node: dict[str, list[dict]] = {}
        for pod in pods:
            if not include_deleted_terminal and is_terminal(pod) and pod["metadata"].get("deletionTimestamp"):
                continue
            node = util.target_node(pod)
            if node is not None:
                by_node.setdefault(node, []).append(pod)
        return by_node

    # --- manage --------------------------------------------------------------------------
    async def _manage(self, ds: dict, verdicts: dict[str, tuple[bool, bool]], by_node: dict[str, list[dict]],
                      revision_hash: str) -> tuple[bool, float | None]:
        """Create the missing daemon pods and delete the misplaced, failed and surplus ones."""
        to_create: list[str] = []
        to_delete: list[dict] = []
        retry_after: float | None = None
        for node_name, verdict in verdicts.items():
            create, delete, wait = self._pods_should_be_on_node(ds, node_name, by_node.get(node_name), verdict)
            to_create += create
            to_delete += delete
            if wait is not None:
                retry_after = wait if retry_after is None else min(retry_after, wait)
        for node_name, pods in by_node.items():
            if node_name not in verdicts:
                to_delete += [p for p in pods if not (p.get("spec") or {}).get("nodeName")]
        await self._sync_nodes(ds, to_delete, to_create, revision_hash)
        return bool(to_create or to_delete), retry_after

    def _pods_should_be_on_node(self, ds: dict, node_name: str, pods: list[dict] | None,
                                verdict: tuple[bool, bool]) -> tuple[list[str], list[dict], float | None]:
        should_run, should_continue = verdict
        if should_run and not pods:
            return [node_name], [], None
        if not should_continue:
            return [], [p for p in pods or () if not p["metadata"].get("deletionTimestamp")], None
        running: list[dict] = []
        delete: list[dict] = []
        wait = None
        for pod in pods or ():
            if pod["metadata"].get("deletionTimestamp"):
                continue
            phase = (pod.get("status") or {}).get("phase")
            ident = f'{pod["metadata"]["namespace"]}/{pod["metadata"]["name"]}'
            if phase == "Failed":
                wait = self._failed_pod_backoff(ds, node_name)
                if wait is not None:
                    continue
                self.api.record_event(ds, "Warning", "FailedDaemonPod",
                                      f"Found failed daemon pod {ident} on node {node_name}, will try to kill it",
                                      COMPONENT)
                delete.append(pod)
            elif phase == "Succeeded":
                self.api.record_event(ds, "Normal", "SucceededDaemonPod",
                                      f"Found succeeded daemon pod {ident} on node {node_name}, will try to delete it",
                                      COMPONENT)
                delete.append(pod)
            else:
                running.append(pod)
        if len(running) > 1:
            delete += sorted(running, key=_scheduled_then_oldest)[1:]
        return [], delete, wait

    def _failed_pod_backoff(self, ds: dict, node_name: str) -> float | None:
        """failedPodsBackoff: None when a failed pod may be deleted now, else the seconds to wait."""
        key = (ds["metadata"]["namespace"], ds["metadata"]["name"], node_name)
        now = self.api.clock()
        delay, until = self._backoff.get(key, (0.0, 0.0))
        if now < until:
            return until - now
        delay = _BACKOFF_INITIAL if delay == 0 else min(delay * 2, _BACKOFF_MAX)
        self._backoff[key] = (delay, now + delay)
        return None

    async def _sync_nodes(self, ds: dict, to_delete: list[dict], to_create: list[str], revision_hash: str) -> None:
        """syncNodes: at most BurstReplicas creations and deletions, pods pinned to their node by affinity."""
        template = util.pod_template(ds, revision_hash)
        for i, node_name in enumerate(to_create[:BURST_REPLICAS]):
            pod = pod_from_template(template, ds)
            util.pin_to_node(pod["spec"], node_name)
            create_pod(self.api, ds, pod, COMPONENT)
            if i % 50 == 49:
                await asyncio.sleep(0)
        for pod in to_delete[:BURST_REPLICAS]:
            delete_pod(self.api, ds, pod, COMPONENT)

    # --- rolling update ----------------------------------------------------------------------
    async def _rolling_update(self, ds: dict, verdicts: dict[str, tuple[bool, bool]],
                              by_node: dict[str, list[dict]], revision_hash: str) -> bool:
        """rollingUpdate without surge: delete old pods while at most maxUnavailable are unavailable."""
        by_node = dict(by_node)
        desired = 0
        for node_name, (should_run, _) in verdicts.items():
            if should_run:
                desired += 1
                by_node.setdefault(node_name, [])
        rolling = (ds["spec"].get("updateStrategy") or {}).get("rollingUpdate") or {}
        # Surge (maxSurge > 0) is not reproduced: such a DaemonSet rolls one node at a time at least.
        max_unavailable = max(scaled_value(rolling.get("maxUnavailable", 1), desired, True), 1)
        now = self.api.clock()
        min_ready = int(ds["spec"].get("minReadySeconds", 0))
        generation = util.template_generation(ds)
        unavailable = 0
        replace: list[dict] = []
        candidates: list[dict] = []
        for node_name in sorted(by_node):
            new_pod, old_pod, ok = _updated_pods_on_node(by_node[node_name], revision_hash, generation)
            if not ok or (old_pod is None) == (new_pod is None):
                unavailable += 1
            elif new_pod is not None:
                if not is_available(new_pod, min_ready, now):
                    unavailable += 1
            elif not is_available(old_pod, min_ready, now):
                replace.append(old_pod)
                unavailable += 1
            elif unavailable < max_unavailable:
                candidates.append(old_pod)
        remaining = min(max(max_unavailable - unavailable, 0), len(candidates))
        victims = replace + candidates[:remaining]
        await self._sync_nodes(ds, victims, [], revision_hash)
        return bool(victims)

    # --- history ------------------------------------------------------------------------------
    def _construct_history(self, ds: dict) -> tuple[dict, list[dict]]:
        """constructHistory: the ControllerRevision matching the template (created if missing) and the old ones."""
        patch = util.history_patch(ds)
        current: list[dict] = []
        old: list[dict] = []
        for rev in controlled(self.api, REVISIONS, ds["metadata"]["uid"]):
            if util.REVISION_HASH not in (rev["metadata"].get("labels") or {}):
                labelled = clone(rev)
                labelled["metadata"].setdefault("labels", {})[util.REVISION_HASH] = rev["metadata"]["name"]
                rev = self.api.update(REVISIONS, labelled, rev["metadata"]["namespace"], manager=MANAGER)
            (current if rev.get("data") == patch else old).append(rev)
        next_revision = max((int(r.get("revision", 0)) for r in old), default=0) + 1
        if not current:
            return self._snapshot(ds, patch, next_revision), old
        current.sort(key=lambda r: int(r.get("revision", 0)))
        keep = current[-1]
        for duplicate in current[:-1]:
            self._dedup(ds, duplicate, keep)
        if int(keep.get("revision", 0)) < next_revision:
            bumped = clone(keep)
            bumped["revision"] = next_revision
            keep = self.api.update(REVISIONS, bumped, keep["metadata"]["namespace"], manager=MANAGER)
        return keep, old

    def _snapshot(self, ds: dict, patch: dict, revision: int) -> dict:
        collisions = (ds.get("status") or {}).get("collisionCount")
        revision_hash = compute_hash(ds["spec"]["template"], collisions)
        labels = dict((ds["spec"]["template"].get("metadata") or {}).get("labels") or {})
        labels[util.REVISION_HASH] = revision_hash
        meta = {"name": f'{ds["metadata"]["name"]}-{revision_hash}', "namespace": ds["metadata"]["namespace"],
                "labels": labels, "ownerReferences": [owner_reference(ds)]}
        if ds["metadata"].get("annotations"):
            meta["annotations"] = dict(ds["metadata"]["annotations"])
        history = {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": meta, "data": patch,
                   "revision": revision}
        try:
            return self.api.create(REVISIONS, history, ds["metadata"]["namespace"], manager=MANAGER)
        except ApiError as exc:
            if exc.code != 409:
                raise
        existing = self.api.store.get(REVISIONS, ds["metadata"]["namespace"], meta["name"])
        if existing is not None and existing.get("data") == patch and \
                (controller_of(existing) or {}).get("uid") == ds["metadata"]["uid"]:
            return existing
        bumped = clone(ds)
        bumped["status"] = {**(ds.get("status") or {}), "collisionCount": int(collisions or 0) + 1}
        self.api.update(DS, bumped, ds["metadata"]["namespace"], subresource="status", manager=MANAGER)
        raise ApiError(409, "AlreadyExists", f'controllerrevisions.apps "{meta["name"]}" already exists')

    def _dedup(self, ds: dict, duplicate: dict, keep: dict) -> None:
        """dedupCurHistories: relabel the duplicate's pods with the kept hash, then delete the duplicate."""
        dup_hash = duplicate["metadata"]["labels"][util.REVISION_HASH]
        keep_hash = keep["metadata"]["labels"][util.REVISION_HASH]
        for pod in controlled(self.api, "pods", ds["metadata"]["uid"]):
            if (pod["metadata"].get("labels") or {}).get(util.REVISION_HASH) == dup_hash:
                self.api.patch("pods", pod["metadata"]["name"],
                               {"metadata": {"labels": {util.REVISION_HASH: keep_hash}}}, "merge",
                               pod["metadata"]["namespace"], manager=MANAGER)
        self.api.delete(REVISIONS, duplicate["metadata"]["name"], duplicate["metadata"]["namespace"])

    def _cleanup_history(self, ds: dict, old: list[dict]) -> None:
        """cleanupHistory: delete the oldest revisions beyond revisionHistoryLimit that no pod still runs."""
        to_kill = len(old) - int(ds["spec"].get("revisionHistoryLimit", 10))
        if to_kill <= 0:
            return
        live = {(p["metadata"].get("labels") or {}).get(util.REVISION_HASH)
                for pods in self._nodes_to_pods(ds, include_deleted_terminal=True).values() for p in pods}
        for rev in sorted(old, key=lambda r: int(r.get("revision", 0))):
            if to_kill <= 0:
                break
            if rev["metadata"]["labels"].get(util.REVISION_HASH) in live:
                continue
            self.api.delete(REVISIONS, rev["metadata"]["name"], rev["metadata"]["namespace"])
            to_kill -= 1

    # --- status ----------------------------------------------------------------------------
    def _update_status(self, ds: dict, verdicts: dict[str, tuple[bool, bool]], by_node: dict[str, list[dict]],
                       revision_hash: str) -> float | None:
        now = self.api.clock()
        min_ready = int(ds["spec"].get("minReadySeconds", 0))
        generation = util.template_generation(ds)
        desired = current = misscheduled = ready = updated = available = 0
        for node_name, (should_run, _) in verdicts.items():
            pods = by_node.get(node_name) or []
            if not should_run:
                misscheduled += 1 if pods else 0
                continue
            desired += 1
            if not pods:
                continue
            current += 1
            pod = sorted(pods, key=_scheduled_then_oldest)[0]
            if is_ready(pod):
                ready += 1
                if is_available(pod, min_ready, now):
                    available += 1
            if util.is_pod_updated(pod, revision_hash, generation):
                updated += 1
        fresh = self.api.store.get(DS, ds["metadata"]["namespace"], ds["metadata"]["name"]) or ds
        status = dict(fresh.get("status") or {})
        counts = {"currentNumberScheduled": current, "numberMisscheduled": misscheduled,
                  "desiredNumberScheduled": desired, "numberReady": ready}
        optional = {"observedGeneration": ds["metadata"].get("generation", 0), "updatedNumberScheduled": updated,
                    "numberAvailable": available, "numberUnavailable": desired - available}
        status.update(counts)
        for field, value in optional.items():
            if value:
                status[field] = value
            else:
                status.pop(field, None)
        if status != (fresh.get("status") or {}):
            new = clone(fresh)
            new["status"] = status
            self.api.update(DS, new, ds["metadata"]["namespace"], subresource="status", manager=MANAGER)
        if min_ready > 0 and ready != available:
            return float(min_ready)
        return None


def _same_placement(old: dict, new: dict) -> bool:
    """shouldIgnoreNodeUpdate, less the conditions (which no longer decide where daemon pods run)."""
    return old["metadata"].get("labels") == new["metadata"].get("labels") and \
        (old.get("spec") or {}) == (new.get("spec") or {})


def _scheduled_then_oldest(pod: dict) -> tuple:
    """podByCreationTimestampAndPhase: scheduled pods first, then the oldest, then by name."""
    return (0 if (pod.get("spec") or {}).get("nodeName") else 1,
            parse_time(pod["metadata"].get("creationTimestamp")) or 0.0, pod["metadata"]["name"])


def _updated_pods_on_node(pods: list[dict], revision_hash: str,
                          generation: int | None) -> tuple[dict | None, dict | None, bool]:
    """findUpdatedPodsOnNode: at most one new and one old live pod, else not ok."""
    new_pod = old_pod = None
    for pod in pods:
        if pod["metadata"].get("deletionTimestamp"):
            continue
        if util.is_pod_updated(pod, revision_hash, generation):
            if new_pod is not None:
                return None, None, False
            new_pod = pod
        else:
            if old_pod is not None:
                return None, None, False
            old_pod = pod
    return new_pod, old_pod, True
