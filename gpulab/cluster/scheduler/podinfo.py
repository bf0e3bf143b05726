"""What the scheduler derives once from each version of a pod (framework.PodInfo).

Requests, priority, tolerations and node constraints are computed when a pod
version is first seen and reused by every scheduling cycle and every node
evaluation, as kube-scheduler caches them in ``PodInfo``/``QueuedPodInfo``
(pkg/scheduler/framework/types.go). Priority is ``spec.priority`` as set by the
Priority admission plugin (``corev1helpers.PodPriority``: 0 when unset). What
only some plugins need (inter-pod affinity terms, host ports, images) is
derived on first use.
"""
from __future__ import annotations

from ..objects import parse_time
from .affinity import PodAffinity
from .nodeselectors import RequiredSelector, preferred_terms
from .resources import Resources, pod_non_zero_requests, pod_requests

POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"  # scheduler-plugins apis/scheduling/v1alpha1 PodGroupLabel
_DERIVED_FROM = ("containers", "initContainers", "overhead", "resources", "priority", "tolerations", "affinity",
                 "nodeSelector", "schedulerName", "topologySpreadConstraints")
DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"


class PodInfo:
    __slots__ = ("pod", "uid", "namespace", "name", "key", "priority", "request", "non_zero", "real_cpu_memory",
                 "tolerations", "required", "preferred", "node_name", "labels",
                 "scheduler_name", "pod_group", "spec", "_affinity", "_host_ports")

    def __init__(self, pod: dict):
        meta = pod["metadata"]
        spec = pod.get("spec") or {}
        self.pod = pod
        self.spec = spec
        self.uid: str = meta.get("uid", "")
        self.namespace: str = meta.get("namespace", "")
        self.name: str = meta["name"]
        self.key = f"{self.namespace}/{self.name}"
        self.labels: dict = meta.get("labels") or {}
        self.priority: int = int(spec.get("priority") or 0)
        self.request: Resources = pod_requests(pod)
        self.non_zero: tuple[int, int] = pod_non_zero_requests(pod)
        self.real_cpu_memory = (self.request.cpu, self.request.memory)
        self.tolerations: list[dict] = list(spec.get("tolerations") or ())
        self.required = RequiredSelector(pod)
        self.preferred = preferred_terms(pod)
        self.node_name: str = spec.get("nodeName") or ""
        self.scheduler_name: str = spec.get("schedulerName") or "default-scheduler"
        self.pod_group: str = self.labels.get(POD_GROUP_LABEL, "")
        self._affinity: PodAffinity | None = None
        self._host_ports: tuple | None = None

    @property
    def affinity(self) -> PodAffinity:
        if self._affinity is None:
            self._affinity = PodAffinity(self.namespace, self.spec)
        return self._affinity

    @property
    def host_ports(self) -> tuple[tuple[str, str, int], ...]:
        """util.GetHostPorts: (hostIP, protocol, hostPort) of the ports with a hostPort, of the containers and
        the restartable init containers (sidecars), with HostPortInfo's defaults (0.0.0.0, TCP)."""
        if self._host_ports is None:
            containers = [c for c in self.spec.get("initContainers") or () if c.get("restartPolicy") == "Always"]
            containers += list(self.spec.get("containers") or ())
            self._host_ports = tuple((p.get("hostIP") or DEFAULT_BIND_ALL_HOST_IP, p.get("protocol") or "TCP",
                                      int(p["hostPort"]))
                                     for c in containers for p in c.get("ports") or () if int(p.get("hostPort") or 0) > 0)
        return self._host_ports

    @property
    def controller(self) -> dict | None:
        """metav1.GetControllerOf: the owner reference with ``controller: true``."""
        return next((ref for ref in self.pod["metadata"].get("ownerReferences") or () if ref.get("controller")), None)

    def refresh(self, pod: dict) -> PodInfo:
        """The info for a newer version of the same pod: updated in place unless what it derives from changed."""
        spec = pod.get("spec") or {}
        if (pod["metadata"].get("labels") or {}) == self.labels and \
                all(spec.get(k) == self.spec.get(k) for k in _DERIVED_FROM):
            self.pod, self.spec, self.node_name = pod, spec, spec.get("nodeName") or ""
            return self
        return PodInfo(pod)

    @property
    def nominated_node(self) -> str:
        return (self.pod.get("status") or {}).get("nominatedNodeName") or ""

    @property
    def deleting(self) -> bool:
        return bool(self.pod["metadata"].get("deletionTimestamp"))

    def start_time(self, now: float) -> float:
        """GetPodStartTime: status.startTime, or now for pods that have not started."""
        started = parse_time((self.pod.get("status") or {}).get("startTime"))
        return now if started is None else started


def is_terminal(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
