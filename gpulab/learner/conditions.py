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
    daemonsets = reader.daemonsets(namespace) if namespace else []
    rolling = _rolling_out(daemonsets, policies[0]["metadata"].get("uid"))
    if rolling:
        return False, f"{state}, still rolling out {', '.join(rolling)}"
    behind = _operator_behind(spec, daemonsets) + _plugin_behind(reader.nodes())
    if behind:
        return False, f"{state}, {', '.join(behind)}"
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


DEVICE_PLUGIN_DAEMONSET = "nvidia-device-plugin-daemonset"


def _operator_behind(spec: dict, daemonsets: list[dict]) -> list[str]:
    """What of the ClusterPolicy's device plugin settings the operator has not written into the device plugin's
    DaemonSet yet (gpu-operator's transformDevicePlugin: ``MIG_STRATEGY`` from ``mig.strategy``, the config
    volume from ``devicePlugin.config.name``, ``DEFAULT_CONFIG`` from its ``default``). Until it has, a rollout
    status of "rolled out" is the old template's."""
    found = [d for d in daemonsets if d["metadata"]["name"] == DEVICE_PLUGIN_DAEMONSET]
    if not found or (spec.get("devicePlugin") or {}).get("enabled", True) is False:
        return []
    pod = ((found[0].get("spec") or {}).get("template") or {}).get("spec") or {}
    env = {e.get("name"): e.get("value") for c in pod.get("containers") or [] for e in c.get("env") or []}
    config = (spec.get("devicePlugin") or {}).get("config") or {}
    volumes = {(v.get("configMap") or {}).get("name") for v in pod.get("volumes") or []}
    wanted = {"mig.strategy": (env.get("MIG_STRATEGY"), (spec.get("mig") or {}).get("strategy") or "single")}
    if config.get("name"):
        wanted["devicePlugin.config.name"] = (config["name"] if config["name"] in volumes else None, config["name"])
        wanted["devicePlugin.config.default"] = (env.get("DEFAULT_CONFIG") or "", config.get("default") or "")
    stale = [key for key, (rendered, asked) in wanted.items() if rendered != asked]
    return [f"the operator has not applied {', '.join(stale)} to {DEVICE_PLUGIN_DAEMONSET} yet"] if stale else []


def _plugin_behind(nodes: list[dict]) -> list[str]:
    """GPU nodes whose device plugin advertises another number of devices than GPU Feature Discovery labels: for
    each resource GFD counts (``nvidia.com/gpu.count``, ``nvidia.com/mig-1g.10gb.count``, times its
    ``.replicas``), the allocatable of that resource (or of its ``.shared`` rename). Both components read the same
    config and MIG layout, so a difference means one of them has not restarted with it yet. Nodes whose device
    plugin has registered nothing are left to the checks above."""
    behind = []
    for node in nodes:
        labels = node["metadata"].get("labels") or {}
        if not _advertises_gpus(node):
            continue
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        for key, count in sorted(labels.items()):
            resource = key[:-len(".count")]
            if not (key.endswith(".count") and count.isdigit()
                    and (resource == "nvidia.com/gpu" or resource.startswith("nvidia.com/mig-"))):
                continue
            replicas = labels.get(f"{resource}.replicas") or "1"
            wanted = int(count) * (int(replicas) if replicas.isdigit() else 1)
            advertised = max(_whole(allocatable.get(resource)), _whole(allocatable.get(f"{resource}.shared")))
            if advertised != wanted:
                behind.append(f"the device plugin on {node['metadata']['name']} advertises {advertised} {resource} "
                              f"where GPU Feature Discovery labels {count} x {replicas}")
    return behind


def _whole(value) -> int:
    return int(str(value)) if str(value).isdigit() else 0


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


def nodes_labelled(selector: str, key: str, value: str) -> Callable[[], Progress]:
    """Every node the label ``selector`` finds (``nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3``: nodes by what
    they are, since their names differ from cluster to cluster) carries ``key=value``; none found is not done."""
    def poll() -> Progress:
        found = _reader().nodes(selector)
        done = [n for n in found if (n["metadata"].get("labels") or {}).get(key) == value]
        return Progress(len(done), len(found) or 1, f"{key}={value}")
    return _named(f"nodes {selector}: {key}={value}", poll)


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
