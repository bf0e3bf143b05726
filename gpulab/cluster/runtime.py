"""One embedded cluster in one process: storage, API, components and the HTTPS server.

The first start seeds what kubeadm and the kubelets create on a new cluster
(namespaces, the ``kubernetes`` Service, system PriorityClasses, the nodes of
the topology); later starts resume from the state database.
"""
from __future__ import annotations

import asyncio
import json
import logging
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from aiohttp import web

from .api import Api
from .auth import bootstrap
from .auth.authenticator import Authenticator
from .auth.filters import RequestAuth
from .auth.rbac import Authorizer
from .auth.tokens import TokenIssuer, load_signing_key
from .errors import ApiError
from .pki import ClusterPKI
from .server.app import ApiServer
from .server.listener import Listener
from .store import Store
from .topology import NodeSpec, node_object

log = logging.getLogger("gpulab.runtime")

FLUSH_INTERVAL = 0.05
# After this many bytes of big objects left the watch history, give the freed heap back to the system:
# glibc keeps large freed blocks in its heap (its mmap threshold rises to the largest block freed), so without
# this the server's RSS stays at its peak.
RETURN_MEMORY_AFTER = 8 * 1024 * 1024
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
# pkg/apis/scheduling/types.go: the two built-in classes and their values.
SYSTEM_PRIORITY_CLASSES = (("system-node-critical", 2000001000, "Used for system critical pods that must not be "
                            "moved from their current node."),
                           ("system-cluster-critical", 2000000000, "Used for system critical pods that must run in "
                            "the cluster, but can be moved to another node if necessary."))


@dataclass
class RuntimeConfig:
    state_dir: Path
    cluster_name: str
    port: int
    pki: ClusterPKI
    nodes: list[NodeSpec] = field(default_factory=list)
    images: Callable[[], tuple] = tuple   # -> kubelet.images.CatalogSource: what the composition adds to its nodes


def _return_freed_memory() -> None:
    """glibc's malloc_trim(0); nothing where the C library has none."""
    import ctypes

    try:
        ctypes.CDLL(None).malloc_trim(0)  # the process's own symbols, libc's among them
    except (OSError, AttributeError):
        pass


class Runtime:
    def __init__(self, config: RuntimeConfig):
        self.config = config
        self.store = Store(config.state_dir / "state.db")
        self.api = Api(self.store)
        self.api.token_issuer = TokenIssuer(load_signing_key(config.pki.ca_cert.parent / "sa.key"))
        self.tasks: list[asyncio.Task] = []
        self._runner: web.AppRunner | None = None
        self._listener: Listener | None = None
        self._resource_hooks: dict[str, list[Callable[[], None]]] = {}

    # --- seeding ----------------------------------------------------------
    def seed(self) -> None:
        """Create the objects a new cluster starts with; a no-op for objects that exist already."""
        api = self.api
        for ns in SYSTEM_NAMESPACES:
            self._ensure("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        for name, value, description in SYSTEM_PRIORITY_CLASSES:
            self._ensure("priorityclasses.scheduling.k8s.io", {
                "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                "value": value, "description": description, "preemptionPolicy": "PreemptLowerPriority"})
        if api.try_get("services", "kubernetes", "default") is None:
            api.create("services", {
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "kubernetes", "namespace": "default",
                             "labels": {"component": "apiserver", "provider": "kubernetes"}},
                "spec": {"clusterIP": "10.96.0.1", "type": "ClusterIP", "sessionAffinity": "None",
                         "ports": [{"name": "https", "port": 443, "protocol": "TCP",
                                    "targetPort": self.config.port}]}}, "default", manager="kube-apiserver")
        for i, spec in enumerate(self.config.nodes):
            self._ensure("nodes", node_object(spec, i), manager="kubelet")
        self._seed_rbac(early=True)
        self.store.commit()

    def _seed_rbac(self, *, early: bool) -> None:
        """The bootstrap roles and bindings (:mod:`.auth.bootstrap`): before serving, those the admin's, anonymous
        and every authenticated user's first requests need; the rest with the components, as kube-apiserver's
        rbac/bootstrap-roles post-start hook fills them in after the server starts."""
        for key, obj in bootstrap.policy():
            meta = obj["metadata"]
            if (meta["name"] in bootstrap.EARLY) == early and self.store.get(key, meta.get("namespace", ""),
                                                                               meta["name"]) is None:
                self._ensure(key, obj)

    def _ensure(self, key: str, obj: dict, manager: str = "kube-apiserver") -> None:
        try:
            self.api.create(key, obj, obj["metadata"].get("namespace"), manager=manager)
        except ApiError as exc:
            if exc.code != 409:
                raise

    # --- hooks for add-ons ------------------------------------------------
    def when_resource_served(self, storage_key: str, start: Callable[[], None]) -> None:
        """Call ``start`` once ``storage_key`` (e.g. a CRD-defined resource) is served, now or later."""
        try:
            self.api.registry.by_key(storage_key)
        except KeyError:
            self._resource_hooks.setdefault(storage_key, []).append(start)
            return
        start()

    def _on_crd_change(self, event_type: str, crd: dict, old) -> None:
        if event_type == "DELETED" or not self._resource_hooks:
            return
        spec = crd.get("spec") or {}
        key = f"{(spec.get('names') or {}).get('plural')}.{spec.get('group')}"
        for start in self._resource_hooks.pop(key, []):
            asyncio.get_running_loop().call_soon(start)

    # --- lifecycle --------------------------------------------------------
    async def start(self) -> None:
        """Serve the API. The components (:meth:`start_components`) come after, as a real control plane's do:
        ``gpulab cluster up`` returns once the API answers, without waiting to import and start them."""
        self.api.subscribe("customresourcedefinitions.apiextensions.k8s.io", self._on_crd_change)
        self.tasks.append(asyncio.create_task(self._flush_loop(), name="flush"))
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(str(self.config.pki.server_cert), str(self.config.pki.server_key))
        authenticator = Authenticator(self.config.pki.token, self.api.token_issuer, self.store, self.api.clock)
        server = ApiServer(self.api, RequestAuth(authenticator, Authorizer(self.api)))
        self._runner = web.AppRunner(server.app(), access_log=None, handle_signals=False, shutdown_timeout=0.5)
        await self._runner.setup()
        self._listener = Listener(self._runner, ctx, "127.0.0.1", self.config.port)
        await self._listener.start()
        (self.config.state_dir / "endpoint.json").write_text(json.dumps(
            {"server": f"https://127.0.0.1:{self.config.port}"}))

    def start_components(self) -> None:
        """Install kube-system's add-ons (:mod:`.systemaddons`), then start the scheduler, controllers and node
        agents (:mod:`.components`)."""
        from . import components, systemaddons
        from .discovery import version_info

        self._seed_rbac(early=False)
        systemaddons.install(self.api, self.config.cluster_name, version_info()["gitVersion"])
        self.store.commit()

        for component in components.build(self.api, self.config):
            self.tasks.append(asyncio.create_task(component.run(), name=getattr(component, "name", "component")))

    async def _flush_loop(self) -> None:
        returned = self.store.evicted_bytes
        last_return = 0.0
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(FLUSH_INTERVAL)
            self.store.commit()
            if self.store.evicted_bytes - returned >= RETURN_MEMORY_AFTER and loop.time() - last_return > 5:
                returned, last_return = self.store.evicted_bytes, loop.time()
                _return_freed_memory()

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        if self._listener is not None:
            await self._listener.stop()
        if self._runner is not None:
            await self._runner.cleanup()
        self.store.close()
