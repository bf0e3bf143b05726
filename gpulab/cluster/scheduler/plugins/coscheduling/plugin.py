"""The Coscheduling plugin (kubernetes-sigs/scheduler-plugins pkg/coscheduling/coscheduling.go, core/core.go).

Pods labelled ``scheduling.x-k8s.io/pod-group: <name>`` form a gang with the
PodGroup ``<name>`` of their namespace:

* QueueSort keeps a gang together: priority, then the PodGroup's creation time
  (the pod's first queueing time without a group), then ``namespace/name``;
* PreFilter rejects a pod while fewer than ``minMember`` pods of the group
  exist, or while ``minResources`` do not fit the cluster;
* Permit holds each placed pod ("assumed", its resources reserved in this
  scheduler only) until ``minMember`` pods are placed, then lets all of them
  bind; the wait lasts ``scheduleTimeoutSeconds`` or ``permitWaitingTimeSeconds``
  (10 in the Helm chart), after which every waiting pod of the group is rejected;
* PostFilter rejects the waiting pods of a group one of whose pods found no node.
"""
from __future__ import annotations

import math
from fractions import Fraction

from ....objects import parse_time
from ....quantity import DECIMAL_SI, parse
from ...events import ADD, POD, UPDATE, ClusterEventWithHint
from ...interface import (EnqueueExtensions, PermitPlugin, PostFilterPlugin, PostFilterResult, PreFilterPlugin,
                          QueueSortPlugin, ReservePlugin)
from ...podinfo import POD_GROUP_LABEL, PodInfo
from ...resources import quantity
from ...status import UNSCHEDULABLE, WAIT, Status, unresolvable, unschedulable

NAME = "Coscheduling"
PODGROUPS = "podgroups.scheduling.x-k8s.io"
NOT_FOUND = "PodGroup not found"
DEFAULT_PERMIT_WAITING_SECONDS = 60  # PermitWaitingTimeSeconds default (apis/config/v1/defaults.go)


class Coscheduling(QueueSortPlugin, PreFilterPlugin, PostFilterPlugin, PermitPlugin, ReservePlugin,
                   EnqueueExtensions):
    """The plugin and its state (core.PodGroupManager): the PodGroups that passed the minResources check recently."""

    NAME = NAME

    def __init__(self, handle, args: dict | None = None):
        super().__init__(handle, args)
        self.schedule_timeout = float(self.args.get("permitWaitingTimeSeconds", DEFAULT_PERMIT_WAITING_SECONDS))
        self._permitted: dict[str, float] = {}

    def events_to_register(self) -> list:
        return [ClusterEventWithHint(POD, frozenset({ADD})),
                ClusterEventWithHint(PODGROUPS, frozenset({ADD, UPDATE}))]

    # --- PodGroup lookups -------------------------------------------------
    def pod_group(self, pod: PodInfo) -> tuple[str, dict | None]:
        """GetPodGroup: the group's full name and object (None when the label names no existing group)."""
        if not pod.pod_group:
            return "", None
        full = f"{pod.namespace}/{pod.pod_group}"
        return full, self.handle.api.try_get(PODGROUPS, pod.pod_group, pod.namespace)

    def sort_key(self, qpi) -> tuple:
        """Less: priority, the PodGroup's creation time (or the pod's first queueing), then namespace/name."""
        info = qpi.info
        created = qpi.initial_attempt
        if info.pod_group:
            pg = self.handle.api.try_get(PODGROUPS, info.pod_group, info.namespace)
            if pg is not None:
                created = parse_time(pg["metadata"].get("creationTimestamp")) or created
        return (-info.priority, created, info.key)

    def siblings(self, pod: PodInfo) -> list[dict]:
        """The group's non-terminal pods in the pod's namespace, as the scheduler's pod lister sees them."""
        selector = f"{POD_GROUP_LABEL}={pod.pod_group}"
        return [p for p in self.handle.api.list("pods", pod.namespace, label_selector=selector)
                if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]

    def assigned(self, pg_name: str, namespace: str, excluding: str = "") -> int:
        """CalculateAssignedPods: pods of the group bound or assumed on a node, as of the cycle's snapshot
        (which does not yet hold the pod being scheduled)."""
        return sum(1 for pi in self.handle.cache.all_pods()
                   if pi.pod_group == pg_name and pi.namespace == namespace and pi.uid != excluding)

    # --- extension points ---------------------------------------------------
    def pre_filter(self, state, pod: PodInfo) -> Status | None:
        full, pg = self.pod_group(pod)
        if pg is None:
            return None
        spec = pg.get("spec") or {}
        min_member = int(spec.get("minMember") or 0)
        count = len(self.siblings(pod))
        if count < min_member:
            return unresolvable(f"pre-filter pod {pod.name} cannot find enough sibling pods, current pods number: "
                                f"{count}, minMember of group: {min_member}", plugin=NAME)
        min_resources = spec.get("minResources")
        if not min_resources:
            return None
        now = self.handle.clock()
        if self._permitted.get(full, 0) > now:
            return None
        gap = self._resource_gap(full, min_resources, min_member)
        if gap:
            return unresolvable(f"resource gap: {gap}", plugin=NAME)
        self._permitted[full] = now + self.schedule_timeout
        return None

    def _resource_gap(self, full: str, min_resources: dict, min_member: int) -> str:
        """CheckClusterResource: what the nodes (ignoring the group's own pods) cannot cover, printed as Go does."""
        want: dict[str, Fraction] = {name: quantity(str(v)) for name, v in min_resources.items()}
        formats = {name: parse(str(v)).format for name, v in min_resources.items()}
        want["pods"] = Fraction(min_member)
        formats["pods"] = DECIMAL_SI
        for info in self.handle.cache.nodes.values():
            left = _node_left(info, full)
            for name in list(want):
                remaining = want[name] - left.get(name, 0)
                if remaining <= 0:
                    del want[name]
                else:
                    want[name] = remaining
            if not want:
                return ""
        return "map[" + " ".join(f"{name}:{_go_quantity(name, amount, formats[name])}"
                                 for name, amount in sorted(want.items())) + "]"

    def post_filter(self, state, pod: PodInfo, diagnosis) -> PostFilterResult:
        return PostFilterResult(self._post_filter(pod))

    def _post_filter(self, pod: PodInfo) -> Status:
        full, pg = self.pod_group(pod)
        if pg is None:
            return unschedulable("can not find pod group", plugin=NAME)
        min_member = int((pg.get("spec") or {}).get("minMember") or 0)
        assigned = self.assigned(pg["metadata"]["name"], pod.namespace)
        if assigned >= min_member:
            return Status(UNSCHEDULABLE, (), NAME)
        if min_member and (min_member - assigned) / min_member <= 0.1:
            return Status(UNSCHEDULABLE, (), NAME)
        self.handle.reject_waiting(lambda w: w.namespace == pod.namespace and w.pod_group == pg["metadata"]["name"],
                                   NAME, "optimistic rejection in PostFilter")
        self._permitted.pop(full, None)
        return unschedulable(f"PodGroup {full} gets rejected due to Pod {pod.name} is unschedulable even after "
                             f"PostFilter", plugin=NAME)

    def permit(self, state, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        """Permit: wait until the gang is complete. ``assigned`` excludes the pod being placed."""
        full, pg = self.pod_group(pod)
        if not full:  # "PodGroup not specified": not a gang member
            return None, 0
        if pg is None:
            return unschedulable(NOT_FOUND, plugin=NAME), 0
        spec = pg.get("spec") or {}
        if self.assigned(pg["metadata"]["name"], pod.namespace, pod.uid) + 1 >= int(spec.get("minMember") or 0):
            self.handle.allow_waiting(lambda w: w.namespace == pod.namespace and w.pod_group == pod.pod_group)
            return None, 0
        timeout = spec.get("scheduleTimeoutSeconds")
        wait = float(timeout) if timeout is not None and int(timeout) != 0 else self.schedule_timeout
        siblings = [p["metadata"]["uid"] for p in self.siblings(pod) if p["metadata"]["uid"] != pod.uid]
        self.handle.activate(siblings)
        return Status(WAIT, (), NAME), wait

    def unreserve(self, state, pod: PodInfo, node_name: str) -> None:
        full, pg = self.pod_group(pod)
        if pg is None:
            return
        self.handle.reject_waiting(lambda w: w.namespace == pod.namespace and w.pod_group == pg["metadata"]["name"],
                                   NAME, "rejection in Unreserve")
        self._permitted.pop(full, None)


def _node_left(info, full_group: str) -> dict[str, int]:
    """getNodeResource: allocatable minus the requests of the node's pods outside the group."""
    pods = [pi for pi in info.pods.values() if f"{pi.namespace}/{pi.pod_group}" != full_group or not pi.pod_group]
    used_cpu = sum(pi.request.cpu for pi in pods)
    used_mem = sum(pi.request.memory for pi in pods)
    used_eph = sum(pi.request.ephemeral for pi in pods)
    left: dict[str, Fraction] = {
        "pods": Fraction(info.allowed_pods - len(pods)),
        "cpu": Fraction(info.alloc.cpu - used_cpu, 1000),
        "memory": Fraction(info.alloc.memory - used_mem),
        "ephemeral-storage": Fraction(info.alloc.ephemeral - used_eph),
    }
    for name, amount in info.alloc.scalars.items():
        left[name] = Fraction(amount - sum(pi.request.scalars.get(name, 0) for pi in pods))
    return left


def _go_quantity(name: str, amount: Fraction, fmt: str) -> str:
    """How ``%v`` prints a resource.Quantity map value after Sub: ``{{value scale} {<nil>}  Format}``.

    The node side of the subtraction is in millicores for cpu (scale -3) and in units otherwise, and
    Quantity.Sub keeps the smaller scale and the format of the PodGroup's quantity.
    """
    if name == "cpu":
        value, scale = math.ceil(amount * 1000), -3
    else:
        value, scale = math.ceil(amount), 0
    return f"{{{{{value} {scale}}} {{<nil>}}  {fmt}}}"
