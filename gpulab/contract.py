"""What the embedded cluster and the programs that drive it agree on, defined once: names, a schema, paths.

Both sides import this module and nothing else of each other: ``gpulab.cluster`` (the node agent, the
lifecycle commands) on one side; the GPU stack emulation, the setup commands and the learner's tools on
the other, which reach the cluster only through its API. It holds

* where gpulab keeps its state (``$GPULAB_HOME``, by default ``~/.gpulab``) and where an embedded
  cluster's kubeconfig lies in it;
* the annotations of the device plugin handshake over the API (docs/architecture.md, "How the GPU
  stack meets the node agent") and the node hardware annotations the GPU stack reads;
* the schema of the allocation answer, modelled on the device plugin API's ``ContainerAllocateResponse``
  (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/api.proto), in protobuf's JSON field names;
* what a program written in Python, supplied to the node agent by whoever composes the server (the GPU
  stack's ``config-manager``), sees of the container it runs in.

The standard library only, so importing it costs nothing on either side.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Generator, Protocol

HOME_ENV = "GPULAB_HOME"

# Written by whoever registers a node (the embedded cluster's topology, `gpulab kind up` on kind); read by the
# GPU stack emulation, which learns a node's hardware from them and from nothing else.
GPU_MODEL_ANNOTATION = "gpulab.dev/gpu-model"
GPU_COUNT_ANNOTATION = "gpulab.dev/gpu-count"
# Node annotation: the extended resources a device plugin serves on that node (comma-separated). The node agent
# waits for an allocation before starting a pod that requests one of them.
PLUGIN_RESOURCES_ANNOTATION = "gpulab.dev/device-plugin-resources"
# Pod annotation: the allocation answer (JSON, :class:`Allocation`), written by the device plugin emulation.
ALLOCATION_ANNOTATION = "gpulab.dev/device-allocation"


def home() -> Path:
    """gpulab's state directory: ``$GPULAB_HOME``, else ``~/.gpulab``."""
    return Path(os.environ.get(HOME_ENV) or Path.home() / ".gpulab")


def cluster_dir(name: str) -> Path:
    """The state directory of the embedded cluster ``name``."""
    return home() / "clusters" / name


def kubeconfig_path(name: str) -> Path:
    """The kubeconfig ``gpulab cluster up`` writes for the embedded cluster ``name``."""
    return cluster_dir(name) / "kubeconfig"


# --- the allocation answer ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Mount:
    """A host file or directory the runtime mounts into the container (``Mount``).

    ``directory`` and ``content`` are this contract's additions: a runtime bind-mounts whatever the host path is,
    but the node agent has no host filesystem, so the answer says what to create (an empty directory, else a file
    holding ``content``, empty when None).
    """

    container_path: str
    host_path: str
    read_only: bool = False
    directory: bool = False
    content: str | None = None


@dataclass(frozen=True)
class DeviceNode:
    """A device node the runtime creates in the container (``DeviceSpec``); permissions are cgroup's ``rwm``."""

    container_path: str
    host_path: str
    permissions: str = "rw"


@dataclass(frozen=True)
class ContainerAllocateResponse:
    """What the plugin's ``Allocate`` returns for one container.

    ``annotations`` and ``cdi_devices`` are the runtime's to act on; the embedded cluster's node agent,
    which has no CDI specifications, accepts and ignores them.
    """

    envs: dict[str, str] = field(default_factory=dict)
    mounts: tuple[Mount, ...] = ()
    devices: tuple[DeviceNode, ...] = ()
    annotations: dict[str, str] = field(default_factory=dict)
    cdi_devices: tuple[str, ...] = ()


@dataclass(frozen=True)
class ContainerAllocation:
    """One container's share of the answer.

    ``devices``: the device IDs assigned per resource (what the kubelet's device manager records in its
    checkpoint next to the response); ``response``: the plugin's answer; ``programs``: what each mounted
    program prints for a given argument line (``""`` for any other), since the node agent runs no host
    binaries; ``native_programs``: mounted programs the node agent runs instead as the native program of
    that name (:data:`NativeProgram`, supplied by whoever composes the server), for output that follows
    the node's state at the time it runs; ``programs`` is then what a node agent without it prints.
    """

    devices: dict[str, list[str]] = field(default_factory=dict)
    response: ContainerAllocateResponse = field(default_factory=ContainerAllocateResponse)
    programs: dict[str, dict[str, str]] = field(default_factory=dict)
    native_programs: dict[str, str] = field(default_factory=dict)

    def merged(self, other: ContainerAllocation) -> ContainerAllocation:
        """Both answers for one container (a device plugin's and its DRA drivers'), the later one winning ties."""
        a, b = self.response, other.response
        return ContainerAllocation(
            {**self.devices, **other.devices},
            ContainerAllocateResponse({**a.envs, **b.envs}, a.mounts + b.mounts, a.devices + b.devices,
                                      {**a.annotations, **b.annotations}, a.cdi_devices + b.cdi_devices),
            {**self.programs, **other.programs}, {**self.native_programs, **other.native_programs})


@dataclass(frozen=True)
class Allocation:
    """The whole answer for one pod; ``error`` is the plugin's refusal (the pod then fails admission)."""

    containers: dict[str, ContainerAllocation] = field(default_factory=dict)
    error: str | None = None

    def for_container(self, name: str) -> ContainerAllocation:
        return self.containers.get(name, ContainerAllocation())

    def device_ids(self) -> set[str]:
        return {i for c in self.containers.values() for ids in c.devices.values() for i in ids}

    def to_json(self) -> str:
        doc: dict = {"containers": {name: container_doc(c) for name, c in self.containers.items()}}
        if self.error:
            doc["error"] = self.error
        return json.dumps(doc, separators=(",", ":"))


def container_doc(c: ContainerAllocation) -> dict:
    r = c.response
    response = {
        "envs": dict(r.envs),
        "mounts": [{"containerPath": m.container_path, "hostPath": m.host_path, "readOnly": m.read_only,
                    **({"directory": True} if m.directory else {}),
                    **({"content": m.content} if m.content is not None else {})} for m in r.mounts],
        "devices": [{"containerPath": d.container_path, "hostPath": d.host_path, "permissions": d.permissions}
                    for d in r.devices],
        "annotations": dict(r.annotations),
        "cdiDevices": [{"name": n} for n in r.cdi_devices],
    }
    doc = {"devices": {k: list(v) for k, v in c.devices.items()},
           "response": {k: v for k, v in response.items() if v}}
    if c.programs:
        doc["programs"] = {path: dict(outputs) for path, outputs in c.programs.items()}
    if c.native_programs:
        doc["nativePrograms"] = dict(c.native_programs)
    return doc


def parse_allocation(raw: str) -> Allocation:
    """The answer in a pod's annotation; one that cannot be read is an :class:`Allocation` with that error."""
    try:
        doc = json.loads(raw)
        return Allocation({name: parse_container_allocation(c) for name, c in (doc.get("containers") or {}).items()},
                          doc.get("error") or None)
    except (ValueError, AttributeError, TypeError, KeyError) as exc:
        return Allocation({}, f"invalid {ALLOCATION_ANNOTATION} annotation: {exc}")


def parse_container_allocation(doc: dict) -> ContainerAllocation:
    """One container's answer (``devices``, ``response``, ``programs``) from its JSON document."""
    r = doc.get("response") or {}
    response = ContainerAllocateResponse(
        envs={k: str(v) for k, v in (r.get("envs") or {}).items()},
        mounts=tuple(Mount(m["containerPath"], m.get("hostPath", ""), bool(m.get("readOnly")),
                           bool(m.get("directory")), None if m.get("content") is None else str(m["content"]))
                     for m in r.get("mounts") or ()),
        devices=tuple(DeviceNode(d["containerPath"], d.get("hostPath", ""), d.get("permissions") or "rw")
                      for d in r.get("devices") or ()),
        annotations={k: str(v) for k, v in (r.get("annotations") or {}).items()},
        cdi_devices=tuple(d["name"] for d in r.get("cdiDevices") or ()))
    return ContainerAllocation(devices={k: list(v) for k, v in (doc.get("devices") or {}).items()},
                               response=response,
                               programs={p: {a: str(o) for a, o in outputs.items()}
                                         for p, outputs in (doc.get("programs") or {}).items()},
                               native_programs={p: str(n) for p, n in (doc.get("nativePrograms") or {}).items()})


# --- programs written in Python ---------------------------------------------------------------------------
class ContainerProcess(Protocol):
    """What a native program sees of its container: its arguments, environment, files, node and clock."""

    argv: list[str]

    def getenv(self, name: str) -> str | None: ...

    def listdir(self, path: str) -> list[str] | None:
        """The names in a directory, sorted; None when there is no such directory."""

    def is_file(self, path: str) -> bool: ...

    def node_label(self, key: str) -> str | None:
        """A label of the node the container runs on, read now (programs that read their Node from the API)."""

    def node_annotation(self, key: str) -> str | None:
        """An annotation of the node, read now: the hardware a program probes on its host (``GPU_COUNT_ANNOTATION``)."""

    def now(self) -> float:
        """The process's clock, seconds since the epoch."""

    def kernel_release(self) -> str:
        """The node's kernel release, as ``uname -r`` prints it in the container (installers build for it)."""


# A native program: a generator over its process that yields ("stdout" | "stderr", text) to write and
# ("sleep", seconds) to let time pass, and returns its exit status.
NativeProgram = Callable[[ContainerProcess], Generator[tuple[str, object], None, int]]
# What a native program behind a mounted program (``nativePrograms``) returns, having written nothing, when it
# cannot answer here (its data lives in another process): the node agent then prints the recorded outputs.
USE_RECORDED_OUTPUT = -1
