"""The one client gpulab's tools reach a cluster with: thin JSON helpers over the official ``kubernetes`` client.

The GPU stack emulation, the checks (through the learner's reader), the lab steps and the setup commands
all go through :class:`Kube`. The generated ``CoreV1Api``/``CustomObjectsApi`` methods validate every
argument with pydantic and turn responses into model objects, and building ``CoreV1Api`` alone costs a
learner's kernel about a second; gpulab reasons about plain dicts as ``kubectl get -o json`` shows them,
so requests are built with the client's own ``param_serialize``/``call_api`` (same configuration,
authentication, TLS and ``ApiException`` as the generated methods) and the JSON is decoded here.
Watches go through ``kubernetes.watch.Watch().stream`` on a function that returns the raw streaming
response, as the generated list functions do with ``_preload_content=False``.

Nothing here knows the embedded cluster: a kubeconfig is all it needs, so the same code drives kind or
any other cluster (:func:`resolve_kubeconfig` only falls back to the embedded cluster's kubeconfig when
the client would find none).
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import orjson

from .contract import kubeconfig_path


def _import_official_client():
    """``import kubernetes`` without its optional schema validator.

    ``kubernetes/__init__`` imports ``kubernetes.dynamic``, which imports ``kubernetes_validate`` when
    it is installed (it is: the embedded cluster reads its schema files) and with it jsonschema and a
    lark grammar compiled at import time, seconds of CPU for a validation gpulab never uses. A
    ``None`` entry in ``sys.modules`` makes that optional import fail fast; it is removed right after,
    so anything else in the process can still import the package.
    """
    blocked = "kubernetes_validate" not in sys.modules
    if blocked:
        sys.modules["kubernetes_validate"] = None  # type: ignore[assignment]
    try:
        import kubernetes.client
        import kubernetes.config
        import kubernetes.watch
    finally:
        if blocked and sys.modules.get("kubernetes_validate", 0) is None:
            del sys.modules["kubernetes_validate"]
    return kubernetes


_kubernetes = _import_official_client()
kube_config = _kubernetes.config
kube_watch = _kubernetes.watch
ApiClient = _kubernetes.client.ApiClient
ApiException = _kubernetes.client.exceptions.ApiException


MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"   # what the typed clients send for a dict
EMBEDDED_CLUSTER = "gpulab"     # the embedded cluster a client falls back to (`gpulab cluster up`'s default name)


@dataclass(frozen=True)
class Resource:
    """Where a kind lives in the REST API: ``Resource("apps/v1", "daemonsets")``."""

    group_version: str
    plural: str
    namespaced: bool = True

    def path(self, name: str | None = None, namespace: str | None = None, subresource: str | None = None) -> str:
        root = "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"
        parts = [root]
        if self.namespaced and namespace:
            parts += ["namespaces", namespace]
        parts.append(self.plural)
        if name:
            parts.append(name)
            if subresource:
                parts.append(subresource)
        return "/".join(parts)


NODES = Resource("v1", "nodes", namespaced=False)
PODS = Resource("v1", "pods")
CONFIGMAPS = Resource("v1", "configmaps")
SECRETS = Resource("v1", "secrets")
SERVICES = Resource("v1", "services")
SERVICEACCOUNTS = Resource("v1", "serviceaccounts")
NAMESPACES = Resource("v1", "namespaces", namespaced=False)
EVENTS = Resource("v1", "events")
DAEMONSETS = Resource("apps/v1", "daemonsets")
DEPLOYMENTS = Resource("apps/v1", "deployments")
REPLICASETS = Resource("apps/v1", "replicasets")
JOBS = Resource("batch/v1", "jobs")
LEASES = Resource("coordination.k8s.io/v1", "leases")
CRDS = Resource("apiextensions.k8s.io/v1", "customresourcedefinitions", namespaced=False)


def custom_resource(group: str, version: str, plural: str, namespaced: bool) -> Resource:
    return Resource(f"{group}/{version}", plural, namespaced)


def resolve_kubeconfig(explicit: str | None) -> str | None:
    """``explicit``, else None when the client finds one itself ($KUBECONFIG, ~/.kube/config), else the embedded
    cluster's kubeconfig when it exists (else None: the client then reports that it found none)."""
    if explicit or os.environ.get("KUBECONFIG") or (Path.home() / ".kube" / "config").exists():
        return explicit
    embedded = kubeconfig_path(EMBEDDED_CLUSTER)
    return str(embedded) if embedded.exists() else None


def error_message(exc: ApiException) -> str:
    """The ``message`` of the API's Status body, or the HTTP reason."""
    try:
        return orjson.loads(exc.body)["message"]
    except (TypeError, ValueError, KeyError):
        return str(exc.reason)


class Kube:
    """One cluster, reached through an official ``ApiClient``; writes name ``field_manager`` unless a call
    names another (without one the API server derives a manager from the user agent)."""

    def __init__(self, api_client: ApiClient, field_manager: str | None = None):
        self.api_client = api_client
        self.field_manager = field_manager

    @classmethod
    def from_kubeconfig(cls, path: str | None = None, context: str | None = None,
                        field_manager: str | None = None) -> "Kube":
        return cls(kube_config.new_client_from_config(config_file=path, context=context), field_manager)

    def close(self) -> None:
        self.api_client.close()

    # --- plain requests ---------------------------------------------------------------------
    def request(self, method: str, path: str, *, query: list[tuple[str, Any]] | None = None, body: Any = None,
                content_type: str = "application/json", timeout: float | None = 30) -> Any:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        serialized = self.api_client.param_serialize(method, path, query_params=query or [], header_params=headers,
                                                     auth_settings=["BearerToken"])
        method_, url, header_params, _, post_params = serialized
        response = self.api_client.call_api(method_, url, header_params, body, post_params,
                                            _request_timeout=timeout)
        data = response.read()
        if not 200 <= response.status <= 299:
            raise ApiException.from_response(http_resp=response, body=data.decode("utf-8", "replace"), data=None)
        return orjson.loads(data) if data else None

    def _manager(self, manager: str | None = None) -> list[tuple[str, Any]]:
        manager = manager or self.field_manager
        return [("fieldManager", manager)] if manager else []

    def get(self, res: Resource, name: str, namespace: str | None = None, *, timeout: float | None = 30) -> dict:
        return self.request("GET", res.path(name, namespace), timeout=timeout)

    def try_get(self, res: Resource, name: str, namespace: str | None = None, *,
                timeout: float | None = 30) -> dict | None:
        """The object, or None when the API answers 404 (no such object, or its kind is not served)."""
        try:
            return self.get(res, name, namespace, timeout=timeout)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def list(self, res: Resource, namespace: str | None = None, *, label_selector: str | None = None,
             field_selector: str | None = None, timeout: float | None = 30) -> dict:
        query = []
        if label_selector:
            query.append(("labelSelector", label_selector))
        if field_selector:
            query.append(("fieldSelector", field_selector))
        return self.request("GET", res.path(namespace=namespace), query=query, timeout=timeout)

    def create(self, res: Resource, obj: dict, namespace: str | None = None, *, dry_run: bool = False,
               manager: str | None = None) -> dict:
        query = self._manager(manager) + ([("dryRun", "All")] if dry_run else [])
        return self.request("POST", res.path(namespace=namespace), body=obj, query=query)

    def update(self, res: Resource, obj: dict, *, subresource: str | None = None) -> dict:
        meta = obj["metadata"]
        return self.request("PUT", res.path(meta["name"], meta.get("namespace"), subresource), body=obj,
                            query=self._manager())

    def patch(self, res: Resource, name: str, patch: Any, namespace: str | None = None, *,
              subresource: str | None = None, content_type: str = MERGE_PATCH,
              manager: str | None = None) -> dict:
        return self.request("PATCH", res.path(name, namespace, subresource), body=patch, content_type=content_type,
                            query=self._manager(manager))

    def delete(self, res: Resource, name: str, namespace: str | None = None, *,
               propagation: str | None = None, grace_period: int | None = None) -> dict | None:
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if propagation:
            body["propagationPolicy"] = propagation
        if grace_period is not None:
            body["gracePeriodSeconds"] = grace_period
        try:
            return self.request("DELETE", res.path(name, namespace), body=body)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def ensure(self, res: Resource, obj: dict, namespace: str | None = None) -> dict:
        """Create ``obj``, or bring an existing object's labels, annotations and body to it (merge patch)."""
        namespace = namespace or obj["metadata"].get("namespace")
        try:
            return self.create(res, obj, namespace)
        except ApiException as exc:
            if exc.status != 409:
                raise
        patch = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "status")}
        return self.patch(res, obj["metadata"]["name"], patch, namespace)

    # --- watches ----------------------------------------------------------------------------
    def _watch_call(self, path: str, label_selector: str | None) -> Callable[..., Any]:
        def list_or_watch(*, watch: bool = False, resource_version: str | None = None,
                          timeout_seconds: int | None = None, allow_watch_bookmarks: bool = True,
                          _preload_content: bool = False) -> Any:
            query: list[tuple[str, Any]] = [("watch", "true" if watch else "false"),
                                            ("allowWatchBookmarks", "true" if allow_watch_bookmarks else "false")]
            if resource_version:
                query.append(("resourceVersion", resource_version))
            if timeout_seconds:
                query.append(("timeoutSeconds", str(timeout_seconds)))
            if label_selector:
                query.append(("labelSelector", label_selector))
            method, url, headers, _, post = self.api_client.param_serialize(
                "GET", path, query_params=query, header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"])
            response = self.api_client.call_api(method, url, headers, None, post,
                                                _request_timeout=(10, (timeout_seconds or 60) + 15))
            if not 200 <= response.status <= 299:
                data = response.read()
                raise ApiException.from_response(http_resp=response, body=data.decode("utf-8", "replace"),
                                                 data=None)
            return response.response
        return list_or_watch

    def watch(self, res: Resource, resource_version: str, *, namespace: str | None = None,
              label_selector: str | None = None, timeout_seconds: int = 30) -> Iterator[dict]:
        """Events (``{"type", "raw_object"}``) after ``resource_version`` until the server ends the watch."""
        stream = kube_watch.Watch()
        func = self._watch_call(res.path(namespace=namespace), label_selector)
        yield from stream.stream(func, resource_version=resource_version, timeout_seconds=timeout_seconds)
