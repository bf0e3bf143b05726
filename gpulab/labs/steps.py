"""The steps that build a lab's starting state on a fresh cluster, each able to say what it would change.

Every step works through the one client (:mod:`gpulab.kubeclient`, on the
official client) and a kubeconfig (the GPU Operator through the GPU stack's own
helm-like installer), so a starting state
is what a learner could have built by hand; ``describe()`` is what
``gpulab lab reset`` prints instead of acting on a cluster it will not wipe.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from importlib import resources

import yaml

from ..checks.gpus import GPU_TAINT, family, gpu_nodes, name, nvidia_allocatable, product
from ..checks.kube import is_running, phase, taint_text, unschedulable_message
from ..learner.conditions import clusterpolicy_settled
from ..learner.reader import ClusterReader

OPERATOR_TIMEOUT = 300.0
SETTLE_TIMEOUT = 60.0
_POLL = 0.5


class StepError(RuntimeError):
    """A step could not reach its state; the message says which and what was last seen."""


def wait_until(what: str, poll, timeout: float):
    """Poll until ``poll()`` returns something truthy; StepError with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = poll()
        if value:
            return value
        if time.monotonic() > deadline:
            raise StepError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(_POLL)


def _manifest(file: str) -> list[dict]:
    text = resources.files(__package__).joinpath("data", file).read_text(encoding="utf-8")
    return [doc for doc in yaml.safe_load_all(text) if doc]


def _resource(document: dict):
    """The namespaced Resource of a manifest's document (a plural kubectl would find: the kind, lower case, + s)."""
    from ..kubeclient import Resource

    return Resource(document["apiVersion"], document["kind"].lower() + "s")


NOT_READY_TAINT = "node.kubernetes.io/not-ready"


def wait_for_nodes_ready(api_client, count: int) -> None:
    """Until ``count`` nodes have registered, each ``Ready`` and rid of the not-ready taint."""
    def ready(node: dict) -> bool:
        conditions = (node.get("status") or {}).get("conditions") or []
        taints = (node.get("spec") or {}).get("taints") or []
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions) \
            and not any(t.get("key") == NOT_READY_TAINT for t in taints)

    def all_ready() -> bool:
        nodes = ClusterReader(api_client).nodes()
        return len(nodes) >= count and all(ready(n) for n in nodes)

    wait_until(f"the {count} nodes to be Ready", all_ready, SETTLE_TIMEOUT)


@dataclass(frozen=True)
class GpuOperator:
    """``helm install --wait gpu-operator nvidia/gpu-operator`` with the chart's defaults and ``--set`` values."""

    sets: tuple[str, ...] = ()

    def describe(self) -> str:
        from ..gpustack.chart import DEFAULT_VERSION

        flags = "".join(f" --set {s}" for s in self.sets)
        return ("install the GPU Operator: helm install --wait gpu-operator nvidia/gpu-operator -n gpu-operator "
                f"--create-namespace --version={DEFAULT_VERSION}{flags}")

    def apply(self, api_client) -> None:
        from ..gpustack.install import install
        from ..gpustack.operator import FIELD_MANAGER
        from ..kubeclient import Kube

        install(Kube(api_client, FIELD_MANAGER), sets=list(self.sets), wait=False)

        def policy_ready() -> bool:
            return clusterpolicy_settled(ClusterReader(api_client))[0]

        def gpus_advertised() -> bool:
            nodes = gpu_nodes(ClusterReader(api_client).nodes())
            return bool(nodes) and all(product(n) and any(nvidia_allocatable(n).values()) for n in nodes)

        wait_until("the ClusterPolicy to be ready", policy_ready, OPERATOR_TIMEOUT)
        wait_until("GPU Feature Discovery to label the GPU nodes and the device plugin to advertise their GPUs",
                   gpus_advertised, OPERATOR_TIMEOUT)


DRA_POOL_LABEL = ("gpu-allocation", "dra")
DEVICE_PLUGIN_DEPLOY_LABEL = "nvidia.com/gpu.deploy.device-plugin"


@dataclass(frozen=True)
class DraPool:
    """Every GPU node becomes the DRA pool: ``gpu-allocation=dra``, and the GPU Operator's device plugin switched
    off there (``nvidia.com/gpu.deploy.device-plugin=false``, which the operator honours), so the DRA driver that
    follows never shares a node with the device plugin; waits until no device plugin pod is left on them."""

    def describe(self) -> str:
        key, value = DRA_POOL_LABEL
        return f"label each GPU node {key}={value} and {DEVICE_PLUGIN_DEPLOY_LABEL}=false (no device plugin there)"

    def apply(self, api_client) -> None:
        from ..kubeclient import NODES, PODS, STRATEGIC_MERGE_PATCH, Kube

        kube = Kube(api_client)
        names = [name(n) for n in gpu_nodes(ClusterReader(api_client).nodes())]
        for node in names:
            kube.patch(NODES, node, {"metadata": {"labels": {DRA_POOL_LABEL[0]: DRA_POOL_LABEL[1],
                                                             DEVICE_PLUGIN_DEPLOY_LABEL: "false"}}},
                       content_type=STRATEGIC_MERGE_PATCH)

        def plugin_gone() -> bool:
            pods = kube.list(PODS, label_selector="app=nvidia-device-plugin-daemonset").get("items") or []
            return not any((p.get("spec") or {}).get("nodeName") in names for p in pods)

        wait_until("the device plugin to leave the DRA pool", plugin_gone, OPERATOR_TIMEOUT)


@dataclass(frozen=True)
class DraDriver:
    """``helm install nvidia-dra-driver-gpu`` with ``--set`` values, its kubelet plugin on the DRA pool only, then
    wait until every GPU node publishes its devices in a ResourceSlice."""

    sets: tuple[str, ...] = ("gpuResourcesEnabledOverride=true", "featureGates.DynamicMIG=true",
                             f"kubeletPlugin.nodeSelector.{DRA_POOL_LABEL[0]}={DRA_POOL_LABEL[1]}")

    def describe(self) -> str:
        from ..gpustack.drainstall import VERSION

        flags = "".join(f" --set {s}" for s in self.sets)
        return ("install NVIDIA's DRA driver for GPUs: helm install nvidia-dra-driver-gpu nvidia/nvidia-dra-driver-gpu "
                f"-n nvidia-dra-driver-gpu --create-namespace --version={VERSION}{flags}")

    def apply(self, api_client) -> None:
        from ..gpustack.drainstall import install
        from ..kubeclient import Kube

        install(Kube(api_client), sets=list(self.sets), wait=False)

        def published() -> bool:
            reader = ClusterReader(api_client)
            nodes = {s["spec"].get("nodeName") for s in reader.custom_objects("resource.k8s.io", "v1",
                                                                                "resourceslices")}
            return bool(nodes) and all(name(n) in nodes for n in gpu_nodes(reader.nodes()))

        wait_until("the DRA driver to publish every GPU node's devices", published, OPERATOR_TIMEOUT)


@dataclass(frozen=True)
class GpuFault:
    """A fault in one GPU of a node (``gpulab fault inject``): an XID, or a thermal slowdown."""

    node: str
    gpu: int
    xid: int | None = None
    thermal: bool = False

    def describe(self) -> str:
        fault = "--thermal" if self.thermal else f"--xid {self.xid}"
        return (f"make GPU {self.gpu} of node {self.node} fail: "
                f"gpulab fault inject --node {self.node} --gpu {self.gpu} {fault}")

    def apply(self, api_client) -> None:
        from ..gpustack.faultcli import inject
        from ..kubeclient import Kube

        inject(Kube(api_client), self.node, self.gpu, self.xid, thermal=self.thermal)


@dataclass(frozen=True)
class PoolLabels:
    """``pool=<gpu family>`` on every GPU node (lab02's first exercise, done)."""

    def describe(self) -> str:
        return "label each GPU node pool=<its GPU family> (pool=h100, pool=a100)"

    def apply(self, api_client) -> None:
        from ..kubeclient import NODES, STRATEGIC_MERGE_PATCH, Kube

        kube = Kube(api_client)
        for node in gpu_nodes(ClusterReader(api_client).nodes()):
            kube.patch(NODES, name(node), {"metadata": {"labels": {"pool": family(product(node))}}},
                       content_type=STRATEGIC_MERGE_PATCH)


@dataclass(frozen=True)
class GpuTaint:
    """``nvidia.com/gpu=true:NoSchedule`` on every GPU node (lab02's second exercise, done)."""

    def describe(self) -> str:
        return f"taint each GPU node {taint_text(GPU_TAINT)}"

    def apply(self, api_client) -> None:
        from ..kubeclient import NODES, STRATEGIC_MERGE_PATCH, Kube

        kube = Kube(api_client)
        for node in gpu_nodes(ClusterReader(api_client).nodes()):
            taints = [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("key") != GPU_TAINT["key"]]
            kube.patch(NODES, name(node), {"spec": {"taints": taints + [dict(GPU_TAINT)]}},
                       content_type=STRATEGIC_MERGE_PATCH)


@dataclass(frozen=True)
class PendingPod:
    """Create a pod that cannot be scheduled, and wait until the scheduler has said why."""

    manifest: str
    namespace: str = "default"

    def describe(self) -> str:
        names = ", ".join(f"{d['kind'].lower()}/{d['metadata']['name']}" for d in _manifest(self.manifest))
        return f"create {names} in namespace {self.namespace} (it stays Pending)"

    def apply(self, api_client) -> None:
        from ..kubeclient import NAMESPACES, PODS, Kube

        kube = Kube(api_client)
        documents = _manifest(self.manifest)
        if kube.try_get(NAMESPACES, self.namespace) is None:
            kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}})
        for other in (d for d in documents if d["kind"] != "Pod"):     # what the pods use (a claim template)
            kube.create(_resource(other), other, self.namespace)
        for pod in (d for d in documents if d["kind"] == "Pod"):
            kube.create(PODS, pod, self.namespace)
            wait_until(f"the scheduler's verdict on pod {pod['metadata']['name']}", lambda: unschedulable_message(
                ClusterReader(api_client).pod(pod["metadata"]["name"], self.namespace) or {}), SETTLE_TIMEOUT)


@dataclass(frozen=True)
class DeadlockedJobs:
    """Create the jobs with half their workers, let the default scheduler place them, then ask for all of them.

    Scaling both jobs up after their first halves run is what makes the
    deadlock certain: created at full size, one job's workers could all be
    placed before the other's exist.
    """

    manifest: str
    namespace: str = "default"
    first: int = 2

    def describe(self) -> str:
        jobs = _manifest(self.manifest)
        names = " and ".join(f"job/{j['metadata']['name']}" for j in jobs)
        return (f"create {names} in namespace {self.namespace}, each first with {self.first} workers, then raise "
                f"each to {jobs[0]['spec']['parallelism']} so both hold GPUs and neither can start")

    def apply(self, api_client) -> None:
        from ..kubeclient import JOBS, STRATEGIC_MERGE_PATCH, Kube

        kube = Kube(api_client)
        jobs = _manifest(self.manifest)
        for job in jobs:
            kube.create(JOBS, {**job, "spec": {**job["spec"], "parallelism": self.first}}, self.namespace)
            wait_until(f"{self.first} running workers of job {job['metadata']['name']}",
                       lambda: self._count(api_client, job, is_running) >= self.first, SETTLE_TIMEOUT)
        for job in jobs:
            kube.patch(JOBS, job["metadata"]["name"], {"spec": {"parallelism": job["spec"]["parallelism"]}},
                       self.namespace, content_type=STRATEGIC_MERGE_PATCH)
        for job in jobs:
            extra = job["spec"]["parallelism"] - self.first
            wait_until(f"{extra} unschedulable workers of job {job['metadata']['name']}",
                       lambda: self._count(api_client, job, lambda p: phase(p) == "Pending"
                                           and unschedulable_message(p)) >= extra, SETTLE_TIMEOUT)

    def _count(self, api_client, job: dict, keep) -> int:
        selector = f"batch.kubernetes.io/job-name={job['metadata']['name']}"
        return sum(1 for p in ClusterReader(api_client).pods(self.namespace, selector) if keep(p))
