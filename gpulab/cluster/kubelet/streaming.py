"""The node agents' streaming side, as the API server reaches it: exec, attach, port-forward and HTTP.

On a real node the API server proxies ``pods/exec``, ``pods/attach`` and ``pods/portforward`` to the
kubelet, which finds the running container (pkg/kubelet/kubelet_pods.go ``findContainer``: ``container
not found ("c")`` when it is not running) and hands the streams to the runtime's streaming server
(containerd's CRI); ``pods/proxy`` and ``services/proxy`` dial the pod's IP, ``nodes/proxy`` the
kubelet's own HTTPS port. :class:`StreamingServer` is that path here, set on the API as
``api.node_streams`` by the node agent component; the protocols themselves live in gpulab/cluster/server.
The errors carry the runtime's words: runc's for a program that cannot start, containerd's
``failed to execute portforward in network namespace ...`` for a port nothing listens on, Go's dial error
for a proxied connection that is refused.
"""
from __future__ import annotations

import hashlib
import secrets
import uuid
from typing import TYPE_CHECKING

from . import nodeserver
from .attach import AttachSession
from .exec import ExecSession, start_failure
from .serving import HttpConnection, HttpService, Request, Response, ServingContext, respond

if TYPE_CHECKING:
    from .kubelet import Kubelet
    from .podworker import Instance, PodWorker

KUBELET_PORT = 10250
_RUNC_EXEC = "OCI runtime exec failed: exec failed: unable to start container process: "


class ContainerNotFound(Exception):
    def __init__(self, container: str):
        super().__init__(f'container not found ("{container}")')


class PodNotFound(Exception):
    def __init__(self, pod: dict):
        meta = pod["metadata"]
        super().__init__(f'pod not found ("{meta["name"]}_{meta.get("namespace", "default")}")')


class ExecFailed(Exception):
    """The runtime could not start the program; ``str()`` is containerd's error."""


class PortForwardFailed(Exception):
    """Nothing listens on the port; ``str()`` is containerd's error (the kubelet adds its prefix)."""


class ConnectionRefused(Exception):
    """A proxied connection to an address nothing listens on; ``str()`` is Go's dial error."""


def sandbox_id(pod: dict) -> str:
    """The pod sandbox's containerd ID (stable for a pod: derived from its UID)."""
    return hashlib.sha256(("sandbox:" + pod["metadata"]["uid"]).encode()).hexdigest()


def netns_path(pod: dict) -> str:
    if (pod.get("spec") or {}).get("hostNetwork"):
        return "host"
    digest = hashlib.sha256(("netns:" + pod["metadata"]["uid"]).encode()).digest()
    return f"/var/run/netns/cni-{uuid.UUID(bytes=digest[:16])}"


class StreamingServer:
    def __init__(self, kubelet: "Kubelet"):
        self.k = kubelet

    # --- finding what runs ------------------------------------------------------
    def _worker(self, pod: dict) -> "PodWorker | None":
        worker = self.k.workers.get(pod["metadata"]["uid"])
        agent = self.k.agents.get(worker.node_name) if worker is not None else None
        if worker is None or worker.deleted or agent is None or not agent.started:
            return None
        return worker

    def has_pod(self, pod: dict) -> bool:
        """The pod is on a started node agent (the kubelet's ``pod not found`` otherwise)."""
        return self._worker(pod) is not None

    def _running(self, pod: dict, container: str) -> "tuple[PodWorker, Instance]":
        worker = self._worker(pod)
        run = worker.runs.get(container) if worker is not None else None
        inst = run.current if run is not None else None
        if inst is None or not inst.running or inst.process is None:
            raise ContainerNotFound(container)
        return worker, inst

    # --- exec and attach --------------------------------------------------------
    def exec(self, pod: dict, container: str, argv: list[str], *, stdin: bool, tty: bool) -> ExecSession:
        """A program started in ``container``; ContainerNotFound when it is not running, ExecFailed when the
        program cannot start."""
        worker, inst = self._running(pod, container)
        world = inst.process.world
        failure = start_failure(world, argv)
        if failure is not None:
            raise ExecFailed(f'failed to exec in container: failed to start exec "{secrets.token_hex(32)}": '
                             f"{_RUNC_EXEC}{failure}")
        return ExecSession(world, argv, stdin=stdin, tty=tty, clock=self.k.api.clock, alive=lambda: inst.running,
                           cpu=self.k.cpu, oom_killed=lambda: self._oom_killed(worker, inst))

    def _oom_killed(self, worker: "PodWorker", inst: "Instance") -> None:
        """An exec'd program outgrew the container's memory: the OOM killer ends the container's processes."""
        if inst.process is not None and inst.running:
            inst.process.kill(self.k.api.clock(), oom=True)
            self.k.wake(worker.uid)

    def attach(self, pod: dict, container: str, *, stdin: bool, tty: bool) -> AttachSession:
        worker, inst = self._running(pod, container)
        spec = worker.runs[container].spec
        return AttachSession(inst.process, stdin=stdin, tty=tty, stdin_once=bool(spec.get("stdinOnce")),
                             poke=lambda: self._poke(worker, inst))

    def _poke(self, worker: "PodWorker", inst: "Instance") -> None:
        if inst.process is not None and inst.process.poke(self.k.api.clock()):
            self.k.wake(worker.uid)

    # --- the pod's network ----------------------------------------------------------
    def _listener(self, pod: dict, port: int) -> "tuple[HttpService, PodWorker, str, Instance] | None":
        worker = self._worker(pod)
        if worker is None:
            return None
        for name, run in worker.runs.items():
            inst = run.current
            if inst is not None and inst.running and inst.process is not None:
                service = inst.process.world.listening.get(port)
                if service is not None:
                    return service, worker, name, inst
        return None

    def _answerer(self, found, port: int, remote: str):
        service, worker, container, inst = found
        world = inst.process.world
        ctx = ServingContext(pod=worker.pod, container=container, node=worker.node_name, port=port,
                             env=dict(world.env), remote=remote, log=inst.process.emit)
        return lambda request: respond(service, request, ctx, world.files)

    def connect(self, pod: dict, port: int) -> HttpConnection:
        """A connection to ``localhost:port`` inside the pod's network namespace (kubectl port-forward)."""
        if not self.has_pod(pod):
            raise PodNotFound(pod)
        found = self._listener(pod, port)
        if found is None:
            sid = sandbox_id(pod)
            raise PortForwardFailed(
                f'failed to execute portforward in network namespace "{netns_path(pod)}": failed to connect to '
                f'localhost:{port} inside namespace "{sid}", IPv4: dial tcp4 127.0.0.1:{port}: connect: '
                f"connection refused IPv6 dial tcp6 [::1]:{port}: connect: connection refused ")
        return HttpConnection(self._answerer(found, port, "127.0.0.1"))

    def http(self, pod: dict, port: int, request: Request) -> Response:
        """An HTTP request to the pod's IP (the proxy subresources); ConnectionRefused when nothing listens."""
        ip = (pod.get("status") or {}).get("podIP", "")
        found = self._listener(pod, port)
        if found is None:
            raise ConnectionRefused(f"dial tcp {ip}:{port}: connect: connection refused")
        return self._answerer(found, port, self._node_ip(pod))(request)

    def _node_ip(self, pod: dict) -> str:
        agent = self.k.agents.get((pod.get("spec") or {}).get("nodeName", ""))
        return agent.host_ip if agent is not None else ""

    # --- the kubelet's own HTTP server (nodes/proxy) ---------------------------------------
    def node_http(self, node: dict, port: int, request: Request) -> Response:
        name = node["metadata"]["name"]
        agent = self.k.agents.get(name)
        ip = next((a["address"] for a in (node.get("status") or {}).get("addresses") or ()
                   if a.get("type") == "InternalIP"), "")
        if agent is None or not agent.started or port != KUBELET_PORT:
            raise ConnectionRefused(f"dial tcp {ip}:{port}: connect: connection refused")
        return nodeserver.respond(agent, node, [w.pod for w in self.k.workers_on(name) if not w.deleted], request)
