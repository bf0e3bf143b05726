"""The device plugin handshake over the API (docs/architecture.md, "How the GPU stack meets the node agent").

On a real node the kubelet's device manager calls the plugin's ``Allocate`` during pod admission and
hands the response (device nodes, mounts, environment) to the container runtime. Here a device plugin
emulation announces the resources it serves on a node in the ``gpulab.dev/device-plugin-resources``
annotation and answers by writing ``gpulab.dev/device-allocation`` on the pod (the schema is
:class:`gpulab.contract.Allocation`). A pod asking for such a resource waits in ContainerCreating until
that answer exists; an ``error`` in it fails admission the way the kubelet does
(pkg/kubelet/cm/admission: ``Allocate failed due to %v, which is unexpected``, where %v is the gRPC error
``rpc error: code = Unknown desc = <plugin's error>``). The node agent creates in the container whatever
the answer lists, knowing nothing of the devices behind it.
"""
from __future__ import annotations

from ...contract import ALLOCATION_ANNOTATION, PLUGIN_RESOURCES_ANNOTATION, Allocation, parse_allocation


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
    return None if raw is None else parse_allocation(raw)


def admission_message(error: str) -> str:
    return f"Allocate failed due to rpc error: code = Unknown desc = {error}, which is unexpected"
