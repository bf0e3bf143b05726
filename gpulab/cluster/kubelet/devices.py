"""The device plugin handshake over the API (docs/architecture.md, "How the GPU stack meets the node agent").

On a real node the kubelet's device manager calls the plugin's ``Allocate`` during pod admission and
hands the response (device nodes, environment, mounts) to the container runtime. Here a device plugin
emulation announces the resources it serves on a node in the ``gpulab.dev/device-plugin-resources``
annotation and answers by writing ``gpulab.dev/device-allocation`` on the pod. A pod asking for such a
resource waits in ContainerCreating until that answer exists; an ``error`` in it fails admission the
way the kubelet does (pkg/kubelet/cm/admission: ``Allocate failed due to %v, which is unexpected``,
where %v is the gRPC error ``rpc error: code = Unknown desc = <plugin's error>``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

PLUGIN_RESOURCES_ANNOTATION = "gpulab.dev/device-plugin-resources"
ALLOCATION_ANNOTATION = "gpulab.dev/device-allocation"


@dataclass(frozen=True)
class ContainerAllocation:
    devices: dict[str, list[str]] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    commands: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Allocation:
    containers: dict[str, ContainerAllocation]
    error: str | None = None

    def for_container(self, name: str) -> ContainerAllocation:
        return self.containers.get(name, ContainerAllocation())


def plugin_resources(node: dict) -> set[str]:
    raw = ((node.get("metadata") or {}).get("annotations") or {}).get(PLUGIN_RESOURCES_ANNOTATION, "")
    return {r.strip() for r in raw.split(",") if r.strip()}


def requested_plugin_resources(pod: dict, node: dict) -> set[str]:
    """The plugin-served resources any of the pod's containers asks for."""
    served = plugin_resources(node)
    if not served:
        return set()
    spec = pod.get("spec") or {}
    wanted: set[str] = set()
    for c in list(spec.get("initContainers") or ()) + list(spec.get("containers") or ()):
        res = c.get("resources") or {}
        for name, value in {**(res.get("requests") or {}), **(res.get("limits") or {})}.items():
            if name in served and str(value) not in ("0", ""):
                wanted.add(name)
    return wanted


def read_allocation(pod: dict) -> Allocation | None:
    """The plugin's answer, or None while there is none yet."""
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(ALLOCATION_ANNOTATION)
    if raw is None:
        return None
    try:
        doc = json.loads(raw)
        containers = {
            name: ContainerAllocation(devices={k: list(v) for k, v in (c.get("devices") or {}).items()},
                                      env={k: str(v) for k, v in (c.get("env") or {}).items()},
                                      commands={k: str(v) for k, v in (c.get("commands") or {}).items()})
            for name, c in (doc.get("containers") or {}).items()}
        return Allocation(containers, doc.get("error") or None)
    except (ValueError, AttributeError, TypeError) as exc:
        return Allocation({}, f"invalid {ALLOCATION_ANNOTATION} annotation: {exc}")


def admission_message(error: str) -> str:
    return f"Allocate failed due to rpc error: code = Unknown desc = {error}, which is unexpected"
