"""Which nodes an embedded cluster has: topology files and the Node objects they register.

A topology file is YAML::

    nodes:
    - name: gpu-{i}          # {i} counts from 1 when replicas > 1; {cluster} is the cluster name
      replicas: 1000
      role: worker           # or control-plane
      cpu: "96"
      memory: 1Ti
      ephemeralStorage: 100Gi
      maxPods: 110
      labels: {pool: big}
      annotations: {example.com/rack: r12}
      taints: [{key: example.com/gpu, value: "true", effect: NoSchedule}]

Node names follow kind's (``NAME-control-plane``, ``NAME-worker``,
``NAME-worker2``...). The cluster knows a node by its capacity, labels,
annotations and taints only. Whoever composes the cluster may add node fields
that stand for annotations, and a default file (:class:`TopologyFormat`):
gpulab's own composition (``gpulab/embedded.py``) adds a hardware field and
the course's default topology; without one, a new cluster is kind's default,
a single control-plane node.
"""
from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Callable, Mapping

from .schema import KUBE_VERSION

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
    labels: dict = field(default_factory=dict)
    annotations: dict = field(default_factory=dict)
    taints: list = field(default_factory=list)

    @classmethod
    def from_record(cls, record: dict) -> "NodeSpec":
        """A node as ``cluster.json`` records it; keys this version does not know are ignored."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in record.items() if k in known})


# A composition's node field: its value in the file -> the annotations it stands for (ValueError: not usable).
NodeField = Callable[[object], dict]


@dataclass(frozen=True)
class TopologyFormat:
    """What a composition adds to topology files: node fields that stand for annotations, and the file a new
    cluster's nodes come from when none is given."""

    default: Path | None = None
    node_fields: Mapping[str, NodeField] = field(default_factory=dict)

    def nodes(self, path: Path | None, cluster: str) -> list[NodeSpec]:
        source = path or self.default
        if source is None:
            # kind's default cluster: one control-plane node, which kind leaves untainted when it has no workers
            return [NodeSpec(f"{cluster}-control-plane", role="control-plane")]
        return load_topology(source, cluster, self.node_fields)


PLAIN = TopologyFormat()
_FIELDS = ("name", "replicas", "role", "cpu", "memory", "maxPods", "ephemeralStorage", "labels", "annotations",
           "taints")


def load_topology(path: Path, cluster: str, extra_fields: Mapping[str, NodeField] | None = None) -> list[NodeSpec]:
    import yaml

    extra_fields = extra_fields or {}
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise TopologyError(f"cannot read topology file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise TopologyError(f"topology file {path} is not valid YAML: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), list) or not doc["nodes"]:
        raise TopologyError(f"topology file {path} must have a non-empty 'nodes:' list")
    known = set(_FIELDS) | set(extra_fields)
    nodes: list[NodeSpec] = []
    for i, entry in enumerate(doc["nodes"]):
        where = f"{path}: nodes[{i}]"
        if not isinstance(entry, dict) or not entry.get("name"):
            raise TopologyError(f"{where}: every node needs a name")
        unknown = set(entry) - known
        if unknown:
            raise TopologyError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")
        annotations = {str(k): str(v) for k, v in (entry.get("annotations") or {}).items()}
        for name, to_annotations in extra_fields.items():
            if entry.get(name):
                try:
                    annotations.update(to_annotations(entry[name]))
                except ValueError as exc:
                    raise TopologyError(f"{where}: {exc}") from None
        replicas = int(entry.get("replicas", 1))
        for n in range(1, replicas + 1):
            name = str(entry["name"]).replace("{cluster}", cluster).replace("{i}", str(n))
            if replicas > 1 and "{i}" not in str(entry["name"]):
                name = f"{name}{n}"
            nodes.append(NodeSpec(
                name=name, role=entry.get("role", "worker"), cpu=str(entry.get("cpu", "8")),
                memory=str(entry.get("memory", "32Gi")), max_pods=int(entry.get("maxPods", 110)),
                ephemeral_storage=str(entry.get("ephemeralStorage", "100Gi")),
                labels=dict(entry.get("labels") or {}), annotations=dict(annotations),
                taints=list(entry.get("taints") or [])))
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
    annotations.update(spec.annotations)
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

