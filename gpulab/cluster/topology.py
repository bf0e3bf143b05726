"""Which nodes an embedded cluster has: the default topology and topology files.

A topology file is YAML::

    nodes:
    - name: gpu-{i}          # {i} counts from 1 when replicas > 1; {cluster} is the cluster name
      replicas: 1000
      cpu: "96"
      memory: 1Ti
      maxPods: 110
      gpu: {model: NVIDIA H100 80GB HBM3, count: 8}
      labels: {pool: h100}
      taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]

Node names follow kind's (``NAME-control-plane``, ``NAME-worker``,
``NAME-worker2``...). The GPU hardware is recorded only as the
``gpulab.dev/gpu-model`` and ``gpulab.dev/gpu-count`` annotations: the
cluster itself knows nothing of GPUs; they appear in the API (labels and
``nvidia.com/gpu`` capacity) only once the GPU stack is installed, as on a real
cluster where the device plugin advertises them. kind nodes carry the same
annotations (cluster-setup/kind), so the GPU stack reads hardware one way.
"""
from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .schema import KUBE_VERSION

GPU_MODEL_ANNOTATION = "gpulab.dev/gpu-model"
GPU_COUNT_ANNOTATION = "gpulab.dev/gpu-count"
KUBELET_VERSION = KUBE_VERSION  # kind's nodes run the control plane's release
CONTAINER_RUNTIME = "containerd://2.1.4"
OS_IMAGE = "Debian GNU/Linux 12 (bookworm)"
KERNEL_VERSION = "6.8.0-gpulab"


class TopologyError(ValueError):
    """A topology file that cannot be used; the message says what to fix."""


@dataclass
class NodeSpec:
    name: str
    role: str = "worker"
    cpu: str = "8"
    memory: str = "32Gi"
    max_pods: int = 110
    ephemeral_storage: str = "100Gi"
    gpu_model: str | None = None
    gpu_count: int = 0
    labels: dict = field(default_factory=dict)
    taints: list = field(default_factory=list)


def default_topology(cluster: str) -> list[NodeSpec]:
    """A control plane, a CPU worker, an 8x H100 80GB worker and a 4x A100 40GB worker."""
    return [
        NodeSpec(f"{cluster}-control-plane", role="control-plane", cpu="4", memory="8Gi",
                 taints=[{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]),
        NodeSpec(f"{cluster}-worker", cpu="16", memory="64Gi"),
        NodeSpec(f"{cluster}-worker2", cpu="192", memory="2Ti", ephemeral_storage="30Ti",
                 gpu_model="NVIDIA H100 80GB HBM3", gpu_count=8),
        NodeSpec(f"{cluster}-worker3", cpu="128", memory="1Ti", ephemeral_storage="15Ti",
                 gpu_model="NVIDIA A100-SXM4-40GB", gpu_count=4),
    ]


def load_topology(path: Path, cluster: str) -> list[NodeSpec]:
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise TopologyError(f"cannot read topology file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise TopologyError(f"topology file {path} is not valid YAML: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), list) or not doc["nodes"]:
        raise TopologyError(f"topology file {path} must have a non-empty 'nodes:' list")
    known = {"name", "replicas", "role", "cpu", "memory", "maxPods", "ephemeralStorage", "gpu", "labels", "taints"}
    nodes: list[NodeSpec] = []
    for i, entry in enumerate(doc["nodes"]):
        where = f"{path}: nodes[{i}]"
        if not isinstance(entry, dict) or not entry.get("name"):
            raise TopologyError(f"{where}: every node needs a name")
        unknown = set(entry) - known
        if unknown:
            raise TopologyError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")
        gpu = entry.get("gpu") or {}
        if gpu and (not gpu.get("model") or int(gpu.get("count", 0)) < 1):
            raise TopologyError(f"{where}: gpu needs a model and a count of at least 1")
        replicas = int(entry.get("replicas", 1))
        for n in range(1, replicas + 1):
            name = str(entry["name"]).replace("{cluster}", cluster).replace("{i}", str(n))
            if replicas > 1 and "{i}" not in str(entry["name"]):
                name = f"{name}{n}"
            nodes.append(NodeSpec(
                name=name, role=entry.get("role", "worker"), cpu=str(entry.get("cpu", "8")),
                memory=str(entry.get("memory", "32Gi")), max_pods=int(entry.get("maxPods", 110)),
                ephemeral_storage=str(entry.get("ephemeralStorage", "100Gi")),
                gpu_model=gpu.get("model"), gpu_count=int(gpu.get("count", 0)),
                labels=dict(entry.get("labels") or {}), taints=list(entry.get("taints") or [])))
    names = [n.name for n in nodes]
    if len(set(names)) != len(names):
        raise TopologyError(f"topology file {path}: node names must be unique")
    return nodes


def node_object(spec: NodeSpec, index: int) -> dict:
    """The Node a kubelet registers for this machine (status capacity as kind nodes report it)."""
    labels = {
        "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": spec.name, "kubernetes.io/os": "linux",
    }
    if spec.role == "control-plane":
        labels["node-role.kubernetes.io/control-plane"] = ""
        labels["node.kubernetes.io/exclude-from-external-load-balancers"] = ""
    labels.update(spec.labels)
    annotations = {
        "kubeadm.alpha.kubernetes.io/cri-socket": "unix:///run/containerd/containerd.sock",
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
    }
    if spec.gpu_model:
        annotations[GPU_MODEL_ANNOTATION] = spec.gpu_model
        annotations[GPU_COUNT_ANNOTATION] = str(spec.gpu_count)
    resources = {"cpu": spec.cpu, "ephemeral-storage": spec.ephemeral_storage, "hugepages-1Gi": "0",
                 "hugepages-2Mi": "0", "memory": spec.memory, "pods": str(spec.max_pods)}
    seed = hashlib.sha256(spec.name.encode()).hexdigest()
    ip = f"172.18.{(index // 250)}.{index % 250 + 2}"
    node = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": spec.name, "labels": labels, "annotations": annotations},
        "spec": {"podCIDR": _pod_cidr(index), "podCIDRs": [_pod_cidr(index)],
                 "providerID": f"kind://docker/gpulab/{spec.name}"},
        "status": {
            "capacity": dict(resources), "allocatable": dict(resources),
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": spec.name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"architecture": "amd64", "bootID": str(uuid.UUID(seed[:32])),
                         "containerRuntimeVersion": CONTAINER_RUNTIME, "kernelVersion": KERNEL_VERSION,
                         "kubeProxyVersion": "", "kubeletVersion": KUBELET_VERSION, "machineID": seed[:32],
                         "operatingSystem": "linux", "osImage": OS_IMAGE, "systemUUID": str(uuid.UUID(seed[32:64]))},
        },
    }
    if spec.taints:
        node["spec"]["taints"] = [dict(t) for t in spec.taints]
    return node


def _pod_cidr(index: int) -> str:
    """kind's per-node /24 out of 10.244.0.0/16, continuing into 10.245.0.0/16 and on for big fleets."""
    return f"10.{244 + index // 256}.{index % 256}.0/24"


def check_nodes(specs: list[NodeSpec]) -> None:
    """Refuse a topology whose objects the API would reject, before any process starts."""
    from .kinds import builtin_registry, validate_create

    rt = builtin_registry().by_key("nodes")
    for i, spec in enumerate(specs):
        errs = validate_create(rt, node_object(spec, i))
        if errs:
            raise TopologyError(f"node {spec.name}: " + "; ".join(str(e) for e in errs))

