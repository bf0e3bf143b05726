"""GangScheduling (pkg/scheduler/framework/plugins/gangscheduling): all-or-nothing for PodGroups of KEP-4671.

Pods name their group in ``spec.schedulingGroup.podGroupName``; a
``scheduling.k8s.io/v1beta1`` PodGroup with ``schedulingPolicy.gang.minCount``
makes them a gang:

* PreEnqueue keeps a pod out of the queue while its PodGroup does not exist
  (``waiting for pod's pod group "x" to appear in scheduling queue``) or fewer
  than ``minCount`` of the group's pods exist (``waiting for minCount pods from
  a gang to appear in scheduling queue``);
* the scheduler takes a gang's queued pods together (``group_cycle``: its pod
  group scheduling cycle, schedule_one_podgroup.go) and places them one by
  one on the cluster as the earlier ones leave it; when fewer than
  ``minCount`` can be placed, every placement is undone before Permit, so a
  gang that does not fit holds nothing (``pod group is unschedulable,
  minCount (4) cannot be satisfied: 3 scheduled, 0 remaining``, the
  PlacementFeasible verdict) and two gangs cannot each hold half the nodes;
* Permit holds each placed pod (its node reserved in this scheduler only)
  with ``waiting for minCount pods from a gang to be scheduled`` and activates
  the group's other pods; the pod that brings the assumed and bound pods to
  ``minCount`` releases them all to binding, and the PodGroup gets
  ``PodGroupInitiallyScheduled=True``. After 5 minutes a waiting pod is
  rejected (``rejected due to timeout after waiting 5m0s at plugin
  GangScheduling``) and its node freed.

Acts only with the ``GangScheduling`` gate (off by default in v1.37, as the
API it reads). Distinct from scheduler-plugins' Coscheduling, which reads the
``scheduling.x-k8s.io`` PodGroup CRD and pods' ``scheduling.x-k8s.io/pod-group``
label (plugins/coscheduling).
"""
from __future__ import annotations

from ... import features
from ...errors import ApiError
from ...objects import clone, rfc3339
from ..events import ADD, POD, UPDATE, ClusterEventWithHint
from ..interface import EnqueueExtensions, PermitPlugin, PreEnqueuePlugin
from ..status import ERROR, WAIT, Status, unresolvable

NAME = "GangScheduling"
PODGROUPS = "podgroups.scheduling.k8s.io"
PERMIT_TIMEOUT = 300.0  # permitTimeoutDuration: 5 minutes
SCHEDULED = "PodGroupInitiallyScheduled"
MANAGER = "kube-scheduler"


_GROUP_INDEX = "spec.schedulingGroup.podGroupName"


def _group_key(pod: dict) -> str | None:
    name = ((pod.get("spec") or {}).get("schedulingGroup") or {}).get("podGroupName")
    return f"{pod['metadata'].get('namespace', '')}/{name}" if name else None


def group_of(pod) -> str:
    """The pod's PodGroup name (``spec.schedulingGroup.podGroupName``), or ""."""
    return ((pod.spec.get("schedulingGroup") or {}).get("podGroupName")) or ""


class GangScheduling(PreEnqueuePlugin, PermitPlugin, EnqueueExtensions):
    NAME = NAME

    def __init__(self, handle, args: dict | None = None):
        super().__init__(handle, args)
        self.active = features.enabled("GenericWorkload")     # the gate that adds the plugin to the default profile
        store = handle.api.store
        if self.active and not store.has_index("pods", _GROUP_INDEX):
            store.add_index("pods", _GROUP_INDEX, _group_key)

    def events_to_register(self) -> list:
        if not self.active:
            return []
        return [ClusterEventWithHint(POD, frozenset({ADD})),
                ClusterEventWithHint(PODGROUPS, frozenset({ADD, UPDATE}))]

    def _gang(self, pod) -> tuple[str, dict | None, int]:
        """(group name, PodGroup, minCount); minCount 0 when the pod is not in a gang."""
        name = group_of(pod) if self.active else ""
        if not name:
            return "", None, 0
        pg = self.handle.api.try_get(PODGROUPS, name, pod.namespace)
        gang = (((pg or {}).get("spec") or {}).get("schedulingPolicy") or {}).get("gang")
        return name, pg, int((gang or {}).get("minCount") or 0)

    def _members(self, namespace: str, name: str) -> list[dict]:
        """The group's pods that are not done (PodGroupState.AllPods), from the store's index."""
        return [p for p in self.handle.api.store.by_index("pods", _GROUP_INDEX, f"{namespace}/{name}")
                if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]

    def group_cycle(self, pod) -> tuple[int, list[str], int] | None:
        """For the scheduler's pod group cycle: (minCount, the uids of the group's other unscheduled pods, how
        many of its pods are assumed or bound), or None when the pod is in no gang."""
        name, pg, min_count = self._gang(pod)
        if not name or pg is None or not min_count:
            return None
        cache = self.handle.cache
        others, scheduled = [], 0
        for member in self._members(pod.namespace, name):
            uid = member["metadata"].get("uid", "")
            if cache.node_of(uid) is not None:
                scheduled += 1
            elif uid != pod.uid and not (member.get("spec") or {}).get("nodeName"):
                others.append(uid)
        return min_count, others, scheduled

    def pre_enqueue(self, pod) -> Status | None:
        name, pg, min_count = self._gang(pod)
        if not name:
            return None
        if pg is None:
            return unresolvable(f'waiting for pod\'s pod group "{name}" to appear in scheduling queue', plugin=NAME)
        if min_count and len(self._members(pod.namespace, name)) < min_count:
            return unresolvable("waiting for minCount pods from a gang to appear in scheduling queue", plugin=NAME)
        return None

    def permit(self, state, pod, node_name: str) -> tuple[Status | None, float]:
        name, pg, min_count = self._gang(pod)
        if not name:
            return None, 0
        if pg is None:
            return Status(ERROR, (f"failed to get podGroup {pod.namespace}/{name}: podgroup.scheduling.k8s.io "
                                  f'"{name}" not found',), NAME), 0
        if not min_count:
            return None, 0
        members = self._members(pod.namespace, name)
        cache = self.handle.cache
        # ScheduledPodsCount: assumed (this pod among them) or bound
        scheduled = sum(1 for p in members if cache.node_of(p["metadata"].get("uid", "")) is not None)
        if scheduled < min_count:
            self.handle.activate([p["metadata"]["uid"] for p in members
                                  if cache.node_of(p["metadata"].get("uid", "")) is None])
            return Status(WAIT, ("waiting for minCount pods from a gang to be scheduled",), NAME), PERMIT_TIMEOUT
        self.handle.allow_waiting(lambda info: info.namespace == pod.namespace and group_of(info) == name)
        self._mark_scheduled(pg)
        return None, 0

    def _mark_scheduled(self, pg: dict) -> None:
        """The PodGroup's ``PodGroupInitiallyScheduled=True`` (once: it never goes back to False)."""
        status = pg.get("status") or {}
        if any(c.get("type") == SCHEDULED and c.get("status") == "True" for c in status.get("conditions") or ()):
            return
        updated = clone(pg)
        conditions = [c for c in status.get("conditions") or () if c.get("type") != SCHEDULED]
        conditions.append({"type": SCHEDULED, "status": "True", "observedGeneration": pg["metadata"].get("generation"),
                           "lastTransitionTime": rfc3339(self.handle.clock()), "reason": "Scheduled", "message": ""})
        updated["status"] = {**status, "conditions": conditions}
        try:
            self.handle.api.update(PODGROUPS, updated, pg["metadata"].get("namespace"), subresource="status",
                                   manager=MANAGER)
        except ApiError:
            pass  # a newer PodGroup: the next gang member's Permit tries again
