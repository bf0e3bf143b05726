"""What the NVIDIA GPU stack has told the API about each node, read from labels and node status.

Checks and the cluster map identify GPU nodes the way a learner would on any
cluster: by the labels GPU Feature Discovery and the GPU Operator write
(``nvidia.com/gpu.present``, ``nvidia.com/gpu.product``, ...; see
docs/fidelity.md#gpustack-core) and by the ``nvidia.com/*`` resources the
device plugin advertises in ``status.allocatable``. Nothing here reads the
embedded cluster's hardware annotations, which real clusters do not have.
"""
from __future__ import annotations

from decimal import Decimal

from .kube import quantity

GPU = "nvidia.com/gpu"
PRESENT = "nvidia.com/gpu.present"
PRODUCT = "nvidia.com/gpu.product"
COUNT = "nvidia.com/gpu.count"
REPLICAS = "nvidia.com/gpu.replicas"
SHARING = "nvidia.com/gpu.sharing-strategy"
MIG_CONFIG = "nvidia.com/mig.config"
MIG_STATE = "nvidia.com/mig.config.state"
MIG_STRATEGY = "nvidia.com/mig.strategy"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
GPU_TAINT = {"key": GPU, "value": "true", "effect": "NoSchedule"}   # the course's GPU pool taint


def labels(node: dict) -> dict[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


def name(obj: dict) -> str:
    return (obj.get("metadata") or {}).get("name", "")


def product(node: dict) -> str | None:
    return labels(node).get(PRODUCT)


def family(product_label: str | None) -> str | None:
    """``NVIDIA-H100-80GB-HBM3`` (also ``...-SHARED``, ``...-MIG-1g.10gb``) -> ``h100``; ``Tesla-T4`` -> ``t4``."""
    if not product_label:
        return None
    parts = product_label.split("-")
    return parts[1].lower() if len(parts) > 1 else parts[0].lower()


def nvidia_allocatable(node: dict) -> dict[str, Decimal]:
    """The ``nvidia.com/*`` resources in the node's allocatable (whole GPUs, replicas, MIG slices)."""
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    return {k: quantity(v) for k, v in sorted(allocatable.items()) if k.startswith("nvidia.com/")}


def allocatable(node: dict, resource: str = GPU) -> int:
    value = ((node.get("status") or {}).get("allocatable") or {}).get(resource)
    return int(quantity(value)) if value is not None else 0


def is_gpu_node(node: dict) -> bool:
    """The operator's ``nvidia.com/gpu.present=true``, GFD's product label, or advertised NVIDIA resources."""
    node_labels = labels(node)
    return (node_labels.get(PRESENT) == "true" or PRODUCT in node_labels
            or any(v > 0 for v in nvidia_allocatable(node).values()))


def gpu_nodes(nodes: list[dict]) -> list[dict]:
    return [n for n in nodes if is_gpu_node(n)]


def nodes_of_family(nodes: list[dict], wanted: str) -> list[dict]:
    return [n for n in nodes if family(product(n)) == wanted]


def gpu_taints(node: dict) -> list[dict]:
    return [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("key") == GPU]
