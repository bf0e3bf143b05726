"""Kubelet admission: may this node run this pod next to the pods it already runs?

Port of pkg/kubelet/lifecycle/predicate.go (v1.36) ``predicateAdmitHandler.Admit``: the OS checks,
then the scheduler's ``AdmissionCheck`` (NodeResourcesFit counted against the pods already admitted
here, required node affinity/selector, host ports) and the NoExecute taints. Only the first failure
is reported, as ``OutOf<resource>`` (``Node didn't have enough resource: example.com/gpu, requested: 1,
used: 8, capacity: 8``) or ``<Plugin>`` (``Predicate NodeAffinity failed: ...``). A pod the scheduler
placed passes by construction; pods that name ``spec.nodeName`` themselves are the ones rejected. The
resource arithmetic is the scheduler's own (pkg/kubelet imports it upstream too).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..scheduler.nodeselectors import RequiredSelector
from ..scheduler.resources import Resources, is_extended_resource, node_allocatable, pod_requests
from ..scheduler.tolerations import first_untolerated

NODE_AFFINITY_REASON = "node(s) didn't match Pod's node affinity/selector"    # nodeaffinity.ErrReasonPod
NODE_PORTS_REASON = "node(s) didn't have free ports for the requested pod ports"   # nodeports.ErrReason
TAINT_REASON = "node(s) had taints that the pod didn't tolerate"   # tainttoleration.ErrReasonNotMatch
_OUT_OF = {"cpu": "OutOfcpu", "memory": "OutOfmemory", "ephemeral-storage": "OutOfephemeral-storage",
           "pods": "OutOfpods"}


@dataclass(frozen=True)
class Rejection:
    reason: str
    message: str


def admit(pod: dict, node: dict, admitted: list[dict]) -> Rejection | None:
    """None when the pod may run; otherwise the reason and message the kubelet rejects it with."""
    # rejectPodAdmissionBasedOnOSSelector compares the pod's *label* with the node's OS (always linux here).
    pod_os = ((pod.get("metadata") or {}).get("labels") or {}).get("kubernetes.io/os")
    if pod_os is not None and pod_os != "linux":
        return Rejection("PodOSSelectorNodeLabelDoesNotMatch",
                         "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label")
    if ((pod.get("spec") or {}).get("os") or {}).get("name", "linux") != "linux":
        return Rejection("PodOSNotSupported", "Failed to admit pod as the OS field doesn't match node OS")
    failure = _insufficient(pod, node, admitted)
    if failure is not None:
        return failure
    if not RequiredSelector(pod).matches((node.get("metadata") or {}).get("labels") or {}, node["metadata"]["name"]):
        return _predicate("NodeAffinity", NODE_AFFINITY_REASON)
    if _ports_conflict(pod, admitted):
        return _predicate("NodePorts", NODE_PORTS_REASON)
    taints = (node.get("spec") or {}).get("taints") or []
    if first_untolerated(taints, (pod.get("spec") or {}).get("tolerations") or [], ("NoExecute",)) is not None:
        return _predicate("TaintToleration", TAINT_REASON)
    return None


def _predicate(name: str, reason: str) -> Rejection:
    return Rejection(name, f"Predicate {name} failed: {reason}")


def _insufficient(pod: dict, node: dict, admitted: list[dict]) -> Rejection | None:
    """noderesources.Fits: pods first, then cpu, memory, ephemeral storage, then scalar resources."""
    allocatable, allowed_pods = node_allocatable(node)
    if len(admitted) + 1 > allowed_pods:
        return _out_of("pods", 1, len(admitted), allowed_pods)
    request = pod_requests(pod)
    # removeMissingExtendedResources: extended resources the node does not know are not counted.
    request.scalars = {k: v for k, v in request.scalars.items()
                       if not is_extended_resource(k) or k in allocatable.scalars}
    if request.is_zero():
        return None
    used = Resources()
    for other in admitted:
        r = pod_requests(other)
        used.cpu += r.cpu
        used.memory += r.memory
        used.ephemeral += r.ephemeral
        for k, v in r.scalars.items():
            used.scalars[k] = used.scalars.get(k, 0) + v
    for name, want, have, cap in (("cpu", request.cpu, used.cpu, allocatable.cpu),
                                  ("memory", request.memory, used.memory, allocatable.memory),
                                  ("ephemeral-storage", request.ephemeral, used.ephemeral, allocatable.ephemeral)):
        if want > 0 and want > cap - have:
            return _out_of(name, want, have, cap)
    for name in sorted(request.scalars):
        want = request.scalars[name]
        have, cap = used.scalars.get(name, 0), allocatable.scalars.get(name, 0)
        if want > 0 and want > cap - have:
            return _out_of(name, want, have, cap)
    return None


def _out_of(resource: str, requested: int, used: int, capacity: int) -> Rejection:
    return Rejection(_OUT_OF.get(resource, f"OutOf{resource}"),
                     f"Node didn't have enough resource: {resource}, requested: {requested}, used: {used}, "
                     f"capacity: {capacity}")


def _host_ports(pod: dict) -> list[tuple[str, str, int]]:
    ports = []
    spec = pod.get("spec") or {}
    for c in list(spec.get("initContainers") or ()) + list(spec.get("containers") or ()):
        for p in c.get("ports") or ():
            if p.get("hostPort"):
                ports.append((p.get("hostIP") or "0.0.0.0", p.get("protocol") or "TCP", int(p["hostPort"])))
    return ports


def _ports_conflict(pod: dict, admitted: list[dict]) -> bool:
    """nodeports.Fits: a wanted (ip, protocol, port) clashes when protocol and port match and either ip is 0.0.0.0."""
    wanted = _host_ports(pod)
    if not wanted:
        return False
    used = [p for other in admitted for p in _host_ports(other)]
    return any(wp == up and proto == uproto and (ip == uip or "0.0.0.0" in (ip, uip))
               for ip, proto, wp in wanted for uip, uproto, up in used)
