"""Ready-made conditions for :func:`gpulab.wait_for`: the waits the course's notebooks need.

Each returns a callable reading the connected cluster (through the official
client) and answering a :class:`~gpulab.learner.waiting.Progress`, so the bar
shows how far along things are (3/4 operands ready, 2/3 replicas).
"""
from __future__ import annotations

from typing import Callable

from .connection import current
from .reader import ClusterReader
from .waiting import Progress


def _reader() -> ClusterReader:
    return ClusterReader(current().api_client)


def _named(description: str, func: Callable[[], Progress]) -> Callable[[], Progress]:
    func.description = description  # type: ignore[attr-defined]
    return func


def pod_phase(name: str, phase: str = "Running", namespace: str = "default") -> Callable[[], Progress]:
    def poll() -> Progress:
        pod = _reader().pod(name, namespace)
        now = ((pod or {}).get("status") or {}).get("phase") or ("absent" if pod is None else "Pending")
        return Progress(int(now == phase), 1, now)
    return _named(f"pod {namespace}/{name} {phase}", poll)


def deployment_ready(name: str, namespace: str = "default") -> Callable[[], Progress]:
    def poll() -> Progress:
        deployment = _reader().deployment(name, namespace)
        if deployment is None:
            return Progress(0, 1, "absent")
        wanted = (deployment.get("spec") or {}).get("replicas", 1)
        return Progress((deployment.get("status") or {}).get("readyReplicas") or 0, wanted, "ready")
    return _named(f"deployment {namespace}/{name} ready", poll)


def clusterpolicy_ready() -> Callable[[], Progress]:
    """``ready``, and settled: the operator deploys in waves, so ``ready`` alone can be premature.

    The MIG manager's wave starts only once GPU Feature Discovery has labelled a
    node ``nvidia.com/mig.capable=true`` (gpu-operator's ``hasMIGCapableGPU``),
    and the ClusterPolicy turns ``notReady`` again until it has run. So this
    waits, on every GPU node, for GFD's ``nvidia.com/gpu.product`` label and, on
    MIG-capable ones while the MIG manager is enabled, for its verdict in
    ``nvidia.com/mig.config.state``, and for ``ready`` after that. A chart
    upgrade that changes an operand leaves its DaemonSet replacing pods node by
    node (each old pod taking its grace period), and the ClusterPolicy turns
    ``notReady`` whenever a node is between two pods: so it also waits for every
    rolling-update DaemonSet of the ClusterPolicy to be rolled out, as
    ``kubectl rollout status`` judges it. And while the device plugin runs, for
    each GPU node to advertise its GPUs: a node between two device plugin pods
    advertises none for a moment, which a count read then would take for an answer.
    """
    def poll() -> Progress:
        settled, detail = clusterpolicy_settled(_reader())
        return Progress(int(settled), 1, detail)
    return _named("ClusterPolicy ready", poll)


def clusterpolicy_settled(reader: ClusterReader) -> tuple[bool, str]:
    """Whether the ClusterPolicy is ``ready`` with every GPU node's operands through, and a word on where it is."""
    policies = reader.custom_objects("nvidia.com", "v1", "clusterpolicies")
    if not policies:
        return False, "absent"
    state = (policies[0].get("status") or {}).get("state") or "unknown"
    spec = policies[0].get("spec") or {}
    mig_manager = (spec.get("migManager") or {}).get("enabled", True)
    device_plugin = (spec.get("devicePlugin") or {}).get("enabled", True)
    waiting = [f"{name} ({operand})" for name, operand in _unsettled_gpu_nodes(reader.nodes(), mig_manager,
                                                                               device_plugin)]
    if waiting:
        return False, f"{state}, operands still starting on {', '.join(waiting)}"
    namespace = (policies[0].get("status") or {}).get("namespace")
    rolling = _rolling_out(reader.daemonsets(namespace), policies[0]["metadata"].get("uid")) if namespace else []
    if rolling:
        return False, f"{state}, still rolling out {', '.join(rolling)}"
    return state == "ready", state


def _rolling_out(daemonsets: list[dict], owner_uid: str | None) -> list[str]:
    """The ClusterPolicy's RollingUpdate DaemonSets that have not replaced every pod yet (kubectl's
    DaemonSetStatusViewer: generation observed, every scheduled pod updated and available)."""
    busy = []
    for ds in daemonsets:
        meta, spec, status = ds["metadata"], ds.get("spec") or {}, ds.get("status") or {}
        if not any(ref.get("uid") == owner_uid for ref in meta.get("ownerReferences") or []):
            continue
        if (spec.get("updateStrategy") or {}).get("type", "RollingUpdate") != "RollingUpdate":
            continue
        desired = status.get("desiredNumberScheduled", 0)
        if status.get("observedGeneration", 0) < meta.get("generation", 0) \
                or status.get("updatedNumberScheduled", 0) < desired or status.get("numberAvailable", 0) < desired:
            busy.append(meta["name"])
    return busy


def _advertises_gpus(node: dict) -> bool:
    """Whether the node's device plugin has registered: some ``nvidia.com/`` resource (whole GPUs, shared
    replicas or MIG slices) is allocatable."""
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    return any(key.startswith("nvidia.com/") and str(value) != "0" for key, value in allocatable.items())


def _unsettled_gpu_nodes(nodes: list[dict], mig_manager_enabled, device_plugin_enabled=True) -> list[tuple[str, str]]:
    unsettled = []
    for node in nodes:
        labels = node["metadata"].get("labels") or {}
        if labels.get("nvidia.com/gpu.present") != "true" or labels.get("nvidia.com/gpu.deploy.operands") == "false":
            continue
        if labels.get("nvidia.com/gpu.deploy.gpu-feature-discovery", "true") != "false" \
                and "nvidia.com/gpu.product" not in labels:
            unsettled.append((node["metadata"]["name"], "GPU Feature Discovery"))
        elif mig_manager_enabled is not False and labels.get("nvidia.com/mig.capable") == "true" \
                and labels.get("nvidia.com/mig.config.state") not in ("success", "failed"):
            unsettled.append((node["metadata"]["name"], "MIG manager"))
        elif device_plugin_enabled is not False and not _advertises_gpus(node) \
                and labels.get("nvidia.com/gpu.deploy.device-plugin", "true") != "false":
            unsettled.append((node["metadata"]["name"], "device plugin"))
    return unsettled


def node_labelled(node: str, key: str, value: str) -> Callable[[], Progress]:
    def poll() -> Progress:
        found = [n for n in _reader().nodes() if n["metadata"]["name"] == node]
        labels = (found[0]["metadata"].get("labels") or {}) if found else {}
        return Progress(int(labels.get(key) == value), 1, f"{key}={labels.get(key, '')}")
    return _named(f"node {node} {key}={value}", poll)


def gpus_allocatable(at_least: int = 1, resource: str = "nvidia.com/gpu") -> Callable[[], Progress]:
    def poll() -> Progress:
        from kubernetes.utils import parse_quantity

        total = sum(int(parse_quantity(((n.get("status") or {}).get("allocatable") or {}).get(resource, "0")))
                    for n in _reader().nodes())
        return Progress(min(total, at_least), at_least, f"{total} {resource}")
    return _named(f"{at_least} {resource} allocatable", poll)


def jobs_complete(*names: str, namespace: str = "default") -> Callable[[], Progress]:
    def poll() -> Progress:
        reader = _reader()
        done = 0
        for job_name in names:
            job = reader.job(job_name, namespace) or {}
            conditions = (job.get("status") or {}).get("conditions") or []
            done += any(c.get("type") == "Complete" and c.get("status") == "True" for c in conditions)
        return Progress(done, len(names), "complete")
    return _named(f"jobs {', '.join(names)} complete", poll)
