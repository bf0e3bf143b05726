"""An in-process cluster for the node agent's tests: a Store, an Api and the Kubelet, no HTTP.

Not a test module: the other test_kubelet_* modules import :func:`run` and :class:`Harness`. Time is
scaled (``SCALE``) so back-offs and pulls take milliseconds; programs' ``sleep`` takes real seconds.
The node agent pulls from the catalog the embedded server composes (its own images and the GPU stack's).
"""
from __future__ import annotations

import asyncio
import json
import time

from cryptography.hazmat.primitives.asymmetric import ec

from gpulab.cluster.api import Api
from gpulab.cluster.auth.tokens import TokenIssuer
from gpulab.cluster.kubelet import Kubelet
from gpulab.cluster.kubelet.images import load_catalog
from gpulab.cluster.store import Store
from gpulab.cluster.topology import NodeSpec, node_object
from gpulab.contract import GPU_COUNT_ANNOTATION, GPU_MODEL_ANNOTATION
from gpulab.embedded import node_images

SCALE = 0.01
CATALOG = load_catalog(*node_images())     # what the embedded server's node agent pulls from
# A node whose hardware annotations say 8x H100 (what the topology's `gpu` field writes).
H100 = {"name": "worker", "annotations": {GPU_MODEL_ANNOTATION: "NVIDIA H100 80GB HBM3", GPU_COUNT_ANNOTATION: "8"}}


class Harness:
    def __init__(self, scale: float = SCALE):
        self.api = Api(Store())
        self.api.token_issuer = TokenIssuer(ec.generate_private_key(ec.SECP256R1()))  # what runtime.py sets
        self.scale = scale
        for ns in ("default", "kube-system", "kube-node-lease"):
            self.api.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
            self.api.create("serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount",
                                                "metadata": {"name": "default", "namespace": ns}})
            self.api.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                           "metadata": {"name": "kube-root-ca.crt", "namespace": ns},
                                           "data": {"ca.crt": "-----BEGIN CERTIFICATE-----\n"}})
        self.api.create("services", {  # what runtime.seed creates
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "kubernetes", "namespace": "default"},
            "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "https", "port": 443, "targetPort": 6443}]}},
            "default")
        self.kubelet: Kubelet | None = None
        self.statuses: dict[str, list[dict]] = {}
        self.api.subscribe("pods", lambda t, pod, old: self.statuses.setdefault(pod["metadata"]["name"], []).append(
            pod.get("status") or {}))
        self._task: asyncio.Task | None = None
        self._nodes = 0

    def add_node(self, name: str = "worker", **spec) -> dict:
        self._nodes += 1
        return self.api.create("nodes", node_object(NodeSpec(name, **spec), self._nodes), manager="kubelet")

    async def start(self) -> None:
        self.kubelet = Kubelet(self.api, scale=self.scale, catalog=CATALOG)
        self._task = asyncio.create_task(self.kubelet.run())
        await asyncio.sleep(0.02)

    async def stop(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    def pod(self, name: str, containers: list[dict], *, node: str = "worker", annotations: dict | None = None,
            **spec) -> dict:
        meta = {"name": name, "namespace": "default", **({"annotations": annotations} if annotations else {})}
        return self.api.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                                        "spec": {"nodeName": node, "containers": containers, **spec}}, "default")

    def get(self, name: str) -> dict | None:
        return self.api.try_get("pods", name, "default")

    async def until(self, predicate, timeout: float = 5.0, what: str = ""):
        """Wait until ``predicate()`` is truthy; return its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what or predicate}")
            await asyncio.sleep(0.01)

    async def phase(self, name: str, phase: str, timeout: float = 5.0) -> dict:
        return await self.until(lambda: (p := self.get(name)) is not None and p["status"].get("phase") == phase
                                and p, timeout, f"pod {name} phase {phase}: {json.dumps((self.get(name) or {}).get('status'))}")

    def seen(self, name: str, predicate) -> dict | None:
        """The first status the pod had (as written, in order) for which ``predicate(status)`` holds."""
        return next((s for s in self.statuses.get(name, ()) if predicate(s)), None)

    def events(self, name: str, kind: str = "Pod") -> list[tuple[str, str, str, str | None]]:
        """(type, reason, message, fieldPath) of the events about ``name``, oldest first."""
        evs = [e for e in self.api.list("events", "default")
               if e["involvedObject"]["name"] == name and e["involvedObject"]["kind"] == kind]
        evs.sort(key=lambda e: int(e["metadata"]["resourceVersion"]))
        return [(e["type"], e["reason"], e["message"], e["involvedObject"].get("fieldPath")) for e in evs]

    def event_count(self, name: str, reason: str) -> int:
        return sum(e["count"] for e in self.api.list("events", "default")
                   if e["involvedObject"]["name"] == name and e["reason"] == reason)


def run(body, *, nodes: tuple[dict, ...] = ({},), scale: float = SCALE) -> None:
    """Run ``async body(harness)`` against a fresh cluster with one node named ``worker`` by default."""
    async def main() -> None:
        h = Harness(scale)
        for spec in nodes:
            h.add_node(**({"name": "worker"} | spec))
        await h.start()
        try:
            await body(h)
        finally:
            await h.stop()
    asyncio.run(main())


def container(name: str = "c", image: str = "busybox", **fields) -> dict:
    return {"name": name, "image": image, **fields}


def shell(script: str) -> dict:
    return {"command": ["sh", "-c", script]}
