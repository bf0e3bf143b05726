"""What a pod asks for and what a node offers, as the scheduler counts them.

Ports ``resource.PodRequests`` / ``AggregateContainerRequests``
(staging/src/k8s.io/component-helpers/resource/helpers.go: the sum of the
containers, the running sum of sidecars, the max against each init container,
pod-level cpu/memory requests, overhead), ``framework.Resource`` and its
``Add``/``SetMaxResource`` (pkg/scheduler/framework/types.go: cpu in
millicores, everything else by ``Quantity.Value()``, i.e. rounded up) and the
scalar-resource rules of pkg/apis/core/v1/helper (extended resources such as
``example.com/gpu``, ``hugepages-*``, ``*kubernetes.io/*``,
``attachable-volumes-*``). The "non-zero" request used for scoring adds
100m cpu and 200 MiB memory to each container that requests none
(pkg/scheduler/util/pod_resources.go).
"""
from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

from ..quantity import parse_quantity

DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024
_NON_MISSING = {"cpu": Fraction(DEFAULT_MILLI_CPU_REQUEST, 1000), "memory": Fraction(DEFAULT_MEMORY_REQUEST)}
_POD_LEVEL = ("cpu", "memory")  # IsSupportedPodLevelResource
_QUALIFIED = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@lru_cache(maxsize=4096)
def quantity(value: str) -> Fraction:
    return parse_quantity(value)


@lru_cache(maxsize=1024)
def is_scalar_resource(name: str) -> bool:
    """IsScalarResourceName: extended, hugepages, prefixed native or attachable-volume resources."""
    return (is_extended_resource(name) or name.startswith("hugepages-") or "kubernetes.io/" in name
            or name.startswith("attachable-volumes-"))


def is_extended_resource(name: str) -> bool:
    """IsExtendedResourceName: not native, not ``requests.*``, and a qualified name once prefixed for quota."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    prefix, _, short = ("requests." + name).rpartition("/")
    return bool(short) and len(short) <= 63 and bool(_QUALIFIED.match(short)) and len(prefix) <= 253 \
        and bool(_DNS_SUBDOMAIN.match(prefix))


class Resources:
    """framework.Resource: cpu in millicores, bytes for memory and ephemeral storage, counts for the rest."""

    __slots__ = ("cpu", "memory", "ephemeral", "scalars")

    def __init__(self, cpu: int = 0, memory: int = 0, ephemeral: int = 0, scalars: dict | None = None):
        self.cpu, self.memory, self.ephemeral = cpu, memory, ephemeral
        self.scalars: dict[str, int] = scalars if scalars is not None else {}

    @classmethod
    def from_list(cls, resources: dict[str, Fraction]) -> Resources:
        out = cls()
        for name, amount in resources.items():
            if name == "cpu":
                out.cpu = math.ceil(amount * 1000)
            elif name == "memory":
                out.memory = math.ceil(amount)
            elif name == "ephemeral-storage":
                out.ephemeral = math.ceil(amount)
            elif name != "pods" and is_scalar_resource(name):
                out.scalars[name] = math.ceil(amount)
        return out

    def key(self) -> tuple:
        return (self.cpu, self.memory, self.ephemeral, tuple(sorted(self.scalars.items())))

    def is_zero(self) -> bool:
        return not (self.cpu or self.memory or self.ephemeral or any(self.scalars.values()))

    def __repr__(self) -> str:
        return f"Resources(cpu={self.cpu}m, memory={self.memory}, ephemeral={self.ephemeral}, {self.scalars})"


def _resource_list(raw: dict | None) -> dict[str, Fraction]:
    return {name: quantity(str(value)) for name, value in (raw or {}).items()}


def _add(into: dict[str, Fraction], other: dict[str, Fraction]) -> None:
    for name, amount in other.items():
        into[name] = into.get(name, 0) + amount


def _max_into(into: dict[str, Fraction], other: dict[str, Fraction]) -> None:
    for name, amount in other.items():
        if name not in into or amount > into[name]:
            into[name] = amount


def pod_request_list(pod: dict, non_missing: bool = False) -> dict[str, Fraction]:
    """resource.PodRequests with pod-level resources enabled; ``non_missing`` applies the scoring defaults."""
    spec = pod.get("spec") or {}

    def container_requests(container: dict) -> dict[str, Fraction]:
        reqs = _resource_list((container.get("resources") or {}).get("requests"))
        if non_missing:
            for name, amount in _NON_MISSING.items():
                reqs.setdefault(name, amount)
        return reqs

    total: dict[str, Fraction] = {}
    for container in spec.get("containers") or ():
        _add(total, container_requests(container))
    sidecars: dict[str, Fraction] = {}
    init_max: dict[str, Fraction] = {}
    for container in spec.get("initContainers") or ():
        reqs = container_requests(container)
        if container.get("restartPolicy") == "Always":
            _add(total, reqs)
            _add(sidecars, reqs)
            reqs = dict(sidecars)
        else:
            _add(reqs, sidecars)
        _max_into(init_max, reqs)
    _max_into(total, init_max)
    pod_level = _resource_list((spec.get("resources") or {}).get("requests"))
    for name in _POD_LEVEL:
        if name in pod_level:
            total[name] = pod_level[name]
    _add(total, _resource_list(spec.get("overhead")))
    return total


def pod_requests(pod: dict) -> Resources:
    """The requests NodeResourcesFit filters on."""
    return Resources.from_list(pod_request_list(pod))


def pod_non_zero_requests(pod: dict) -> tuple[int, int]:
    """(millicpu, memory) with the per-container defaults: what NonZeroRequested and LeastAllocated count."""
    reqs = Resources.from_list(pod_request_list(pod, non_missing=True))
    return reqs.cpu, reqs.memory


def node_allocatable(node: dict) -> tuple[Resources, int]:
    """status.allocatable as framework.Resource, plus the allowed pod number."""
    raw = (node.get("status") or {}).get("allocatable") or {}
    pods = math.ceil(quantity(str(raw["pods"]))) if "pods" in raw else 0
    return Resources.from_list(_resource_list(raw)), pods
