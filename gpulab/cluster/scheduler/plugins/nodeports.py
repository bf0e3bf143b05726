"""NodePorts (pkg/scheduler/framework/plugins/nodeports/node_ports.go).

PreFilter skips pods without host ports (``util.GetHostPorts``: containers and
sidecars with a ``hostPort``). Filter rejects, Unschedulable (preemption may
free the port), a node where one of them is in use:
``node(s) didn't have free ports for the requested pod ports``. A port bound
to 0.0.0.0 conflicts with the same protocol and port on any address, one bound
to an address with that address and 0.0.0.0 (``HostPortInfo.CheckConflict``).
Only the nodes with pods using host ports can fail, which the cache knows.
"""
from __future__ import annotations

from ..events import ADD, DELETE, NODE, POD, ClusterEvent, ClusterEventWithHint
from ..interface import SETS, EnqueueExtensions, FilterPlugin, PreFilterPlugin
from ..podinfo import DEFAULT_BIND_ALL_HOST_IP, PodInfo
from ..status import SKIP_STATUS, Status, unschedulable

NAME = "NodePorts"
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
_REJECTION = unschedulable(ERR_REASON, plugin=NAME)


class NodePorts(PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    NAME = NAME
    filter_scope = SETS

    def pre_filter(self, state, pod) -> Status | None:
        return None if pod.host_ports else SKIP_STATUS

    def filter(self, state, pod, node) -> Status | None:
        return _REJECTION if conflicts(pod.host_ports, node.used_ports) else None

    def filter_sets(self, state, pod) -> list:
        cache = self.handle.cache
        return [frozenset(name for name in cache.port_nodes if conflicts(pod.host_ports, cache.nodes[name].used_ports))]

    def events_to_register(self) -> list:
        return [ClusterEventWithHint(POD, frozenset({DELETE}), requeue_after_pod_deleted),
                ClusterEventWithHint(NODE, frozenset({ADD}))]


def conflicts(wanted, in_use) -> bool:
    """Whether any wanted (ip, protocol, port) collides with the ports in use (fitsPorts negated)."""
    if not in_use:
        return False
    for ip, protocol, port in wanted:
        if ip == DEFAULT_BIND_ALL_HOST_IP:
            if any(p == port and proto == protocol for _, proto, p in in_use):
                return True
        elif (ip, protocol, port) in in_use or (DEFAULT_BIND_ALL_HOST_IP, protocol, port) in in_use:
            return True
    return False


def requeue_after_pod_deleted(pod, event: ClusterEvent) -> bool:
    """isSchedulableAfterPodDeleted: the deleted pod was placed (or nominated) and held one of the ports."""
    deleted = event.old
    if not (deleted.get("spec") or {}).get("nodeName") and not (deleted.get("status") or {}).get("nominatedNodeName"):
        return False
    held = PodInfo(deleted).host_ports
    return bool(held) and conflicts(pod.host_ports, set(held))
