"""Cluster objects as plain wire-format dicts, read through the official ``kubernetes`` client.

Checks, conditions and widgets reason about objects the way the learner sees
them in ``kubectl get -o yaml`` (``nodeSelector``, ``status.allocatable``),
so they read raw JSON instead of the client's snake_case model classes, which
also drop fields they do not know. Reads go through the official client's
``ApiClient`` (its configuration, TLS, auth and ``ApiException``), by the
REST paths its typed API classes would use, so the same code reads the
embedded cluster, kind and real clusters. The typed classes themselves
(``core``, ``apps``, ...) are made only when asked for: importing
``CoreV1Api`` builds a pydantic validator for each of its hundreds of
methods, over a second of CPU in every learner kernel and grading run.
Reads are cached for the life of one reader (one check run), so a check sees
one consistent-enough snapshot and does not list nodes five times.
"""
from __future__ import annotations

import json
from functools import cached_property
from typing import Any


class ClusterReader:
    def __init__(self, api_client):
        self.api_client = api_client
        self._cache: dict[tuple, Any] = {}

    # --- the official client's typed APIs, for writes and anything not read below ------------
    @cached_property
    def core(self):
        from kubernetes.client import CoreV1Api
        return CoreV1Api(self.api_client)

    @cached_property
    def apps(self):
        from kubernetes.client import AppsV1Api
        return AppsV1Api(self.api_client)

    @cached_property
    def batch(self):
        from kubernetes.client import BatchV1Api
        return BatchV1Api(self.api_client)

    @cached_property
    def custom(self):
        from kubernetes.client import CustomObjectsApi
        return CustomObjectsApi(self.api_client)

    # --- plumbing ---------------------------------------------------------
    def _cached(self, key: tuple, call):
        if key not in self._cache:
            self._cache[key] = call()
        return self._cache[key]

    def _get(self, path: str, **query: str | None) -> Any:
        """GET ``path`` as JSON; a non-2xx answer raises ``ApiException`` as the typed APIs do."""
        from kubernetes.client import ApiException

        request = self.api_client.param_serialize(
            method="GET", resource_path=path,
            query_params=[(key, value) for key, value in query.items() if value is not None],
            header_params={"Accept": "application/json"}, auth_settings=["BearerToken"])
        response = self.api_client.call_api(*request)
        response.read()
        if not 200 <= response.status <= 299:
            raise ApiException.from_response(http_resp=response, body=response.data.decode("utf-8", "replace"),
                                             data=None)
        return json.loads(response.data)

    def _optional(self, path: str) -> dict | None:
        from kubernetes.client import ApiException

        try:
            return self._get(path)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    # --- core -------------------------------------------------------------
    def nodes(self) -> list[dict]:
        return self._cached(("nodes",), lambda: self._get("/api/v1/nodes")["items"])

    def pods(self, namespace: str | None = None, label_selector: str | None = None) -> list[dict]:
        return self._core_list("pods", namespace, label_selector)

    def secrets(self, namespace: str | None = None, label_selector: str | None = None) -> list[dict]:
        return self._core_list("secrets", namespace, label_selector)

    def _core_list(self, plural: str, namespace: str | None, label_selector: str | None) -> list[dict]:
        path = f"/api/v1/{plural}" if namespace is None else f"/api/v1/namespaces/{namespace}/{plural}"
        return self._cached((plural, namespace, label_selector),
                            lambda: self._get(path, labelSelector=label_selector)["items"])

    def pod(self, name: str, namespace: str = "default") -> dict | None:
        return self._optional(f"/api/v1/namespaces/{namespace}/pods/{name}")

    def configmap(self, name: str, namespace: str = "default") -> dict | None:
        return self._optional(f"/api/v1/namespaces/{namespace}/configmaps/{name}")

    # --- workloads ----------------------------------------------------------
    def deployment(self, name: str, namespace: str = "default") -> dict | None:
        return self._optional(f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}")

    def deployments(self) -> list[dict]:
        return self._cached(("deployments",), lambda: self._get("/apis/apps/v1/deployments")["items"])

    def replicasets(self, namespace: str) -> list[dict]:
        return self._cached(("replicasets", namespace),
                            lambda: self._get(f"/apis/apps/v1/namespaces/{namespace}/replicasets")["items"])

    def job(self, name: str, namespace: str = "default") -> dict | None:
        return self._optional(f"/apis/batch/v1/namespaces/{namespace}/jobs/{name}")

    # --- CRDs and custom resources --------------------------------------------
    def crd(self, name: str) -> dict | None:
        return self._optional(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")

    def custom_object(self, group: str, version: str, plural: str, name: str,
                      namespace: str | None = None) -> dict | None:
        return self._optional(_custom_path(group, version, plural, namespace) + f"/{name}")

    def custom_objects(self, group: str, version: str, plural: str, namespace: str | None = None) -> list[dict]:
        """Every object of a custom resource; empty when its CRD is not served."""
        listed = self._optional(_custom_path(group, version, plural, namespace))
        return [] if listed is None else listed["items"]

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


def _custom_path(group: str, version: str, plural: str, namespace: str | None) -> str:
    scope = "" if namespace is None else f"/namespaces/{namespace}"
    return f"/apis/{group}/{version}{scope}/{plural}"


def established(crd: dict | None) -> bool:
    """Whether a CRD's ``Established`` condition is True (the API server serves it)."""
    conditions = ((crd or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)
