"""Cluster objects as plain wire-format dicts, read through the official ``kubernetes`` client.

Checks, conditions and widgets reason about objects the way the learner sees
them in ``kubectl get -o yaml`` (``nodeSelector``, ``status.allocatable``),
so they read raw JSON (``_preload_content=False``) instead of the client's
snake_case model classes, which also drop fields they do not know. Only the
official client's typed API classes are used, so the same code reads the
embedded cluster, kind and real clusters. Reads are cached for the life of one
reader (one check run), so a check sees one consistent-enough snapshot and
does not list nodes five times.
"""
from __future__ import annotations

import json
from typing import Any


class ClusterReader:
    def __init__(self, api_client):
        from kubernetes import client

        self.api_client = api_client
        self.core = client.CoreV1Api(api_client)
        self.apps = client.AppsV1Api(api_client)
        self.batch = client.BatchV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.extensions = client.ApiextensionsV1Api(api_client)
        self._cache: dict[tuple, Any] = {}

    # --- plumbing ---------------------------------------------------------
    def _cached(self, key: tuple, call):
        if key not in self._cache:
            self._cache[key] = call()
        return self._cache[key]

    @staticmethod
    def _json(response) -> Any:
        return json.loads(response.data)

    def _optional(self, call) -> dict | None:
        from kubernetes.client import ApiException

        try:
            return self._json(call())
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    # --- core -------------------------------------------------------------
    def nodes(self) -> list[dict]:
        return self._cached(("nodes",), lambda: self._json(self.core.list_node(_preload_content=False))["items"])

    def pods(self, namespace: str | None = None, label_selector: str | None = None) -> list[dict]:
        def call():
            if namespace is None:
                response = self.core.list_pod_for_all_namespaces(label_selector=label_selector, _preload_content=False)
            else:
                response = self.core.list_namespaced_pod(namespace, label_selector=label_selector,
                                                         _preload_content=False)
            return self._json(response)["items"]
        return self._cached(("pods", namespace, label_selector), call)

    def pod(self, name: str, namespace: str = "default") -> dict | None:
        return self._optional(lambda: self.core.read_namespaced_pod(name, namespace, _preload_content=False))

    # --- workloads ----------------------------------------------------------
    def deployment(self, name: str, namespace: str = "default") -> dict | None:
        return self._optional(lambda: self.apps.read_namespaced_deployment(name, namespace, _preload_content=False))

    def deployments(self) -> list[dict]:
        return self._cached(("deployments",), lambda: self._json(
            self.apps.list_deployment_for_all_namespaces(_preload_content=False))["items"])

    def replicasets(self, namespace: str) -> list[dict]:
        return self._cached(("replicasets", namespace), lambda: self._json(
            self.apps.list_namespaced_replica_set(namespace, _preload_content=False))["items"])

    def job(self, name: str, namespace: str = "default") -> dict | None:
        return self._optional(lambda: self.batch.read_namespaced_job(name, namespace, _preload_content=False))

    # --- CRDs and custom resources --------------------------------------------
    def crd(self, name: str) -> dict | None:
        return self._optional(lambda: self.extensions.read_custom_resource_definition(name, _preload_content=False))

    def custom_object(self, group: str, version: str, plural: str, name: str,
                      namespace: str | None = None) -> dict | None:
        if namespace is None:
            return self._optional(lambda: self.custom.get_cluster_custom_object(
                group, version, plural, name, _preload_content=False))
        return self._optional(lambda: self.custom.get_namespaced_custom_object(
            group, version, namespace, plural, name, _preload_content=False))

    def custom_objects(self, group: str, version: str, plural: str, namespace: str | None = None) -> list[dict]:
        """Every object of a custom resource; empty when its CRD is not served."""
        from kubernetes.client import ApiException

        try:
            if namespace is None:
                response = self.custom.list_cluster_custom_object(group, version, plural, _preload_content=False)
            else:
                response = self.custom.list_namespaced_custom_object(group, version, namespace, plural,
                                                                     _preload_content=False)
        except ApiException as exc:
            if exc.status == 404:
                return []
            raise
        return self._json(response)["items"]

    # --- writes that only ask the server's opinion -----------------------------------
    def dry_run_create_pod(self, pod: dict, namespace: str = "default") -> dict | None:
        """Create ``pod`` with ``dryRun=All``: None if the API server accepts it, else its ``Status`` (a dict)."""
        from kubernetes.client import ApiException

        try:
            self.core.create_namespaced_pod(namespace, pod, dry_run="All", _preload_content=False)
        except ApiException as exc:
            try:
                return json.loads(exc.body)
            except (TypeError, ValueError):
                return {"message": f"{exc.status} {exc.reason}"}
        return None


def established(crd: dict | None) -> bool:
    """Whether a CRD's ``Established`` condition is True (the API server serves it)."""
    conditions = ((crd or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)
