"""Cluster objects as plain wire-format dicts, read through the one client (:mod:`gpulab.kubeclient`).

Checks, conditions and widgets reason about objects the way the learner sees
them in ``kubectl get -o yaml`` (``nodeSelector``, ``status.allocatable``),
so they read raw JSON instead of the official client's snake_case model
classes, which also drop fields they do not know; :class:`~gpulab.kubeclient.Kube`
reads by the REST paths the typed API classes would use, through the official
``ApiClient`` (its configuration, TLS, auth and ``ApiException``), so the same
code reads the embedded cluster, kind and real clusters. No typed API class is
built: importing ``CoreV1Api`` builds a pydantic validator for each of its
hundreds of methods, over a second of CPU in every learner kernel and grading
run; and the client itself is imported with the first reader, not with
``gpulab.checks``. Reads are cached for the life of one reader (one check run),
so a check sees one consistent-enough snapshot and does not list nodes five times.
"""
from __future__ import annotations

import json
from typing import Any


class ClusterReader:
    def __init__(self, api_client):
        from .. import kubeclient

        self.api_client = api_client
        self.kube = kubeclient.Kube(api_client)
        self._api = kubeclient
        self._cache: dict[tuple, Any] = {}

    # --- plumbing ---------------------------------------------------------
    def _cached(self, key: tuple, call):
        if key not in self._cache:
            self._cache[key] = call()
        return self._cache[key]

    def _items(self, res, namespace: str | None = None, label_selector: str | None = None) -> list[dict]:
        return self.kube.list(res, namespace, label_selector=label_selector, timeout=None)["items"]

    def _optional(self, res, name: str, namespace: str | None = None) -> dict | None:
        return self.kube.try_get(res, name, namespace, timeout=None)

    def versions(self) -> frozenset:
        """Every object this reader has read, as (uid, resourceVersion): two readers that read the same objects in
        the same versions saw nothing change between them (resource versions compared for equality only, as the
        API conventions allow)."""
        found = set()
        for value in self._cache.values():
            for obj in value if isinstance(value, list) else [value]:
                meta = obj.get("metadata") if isinstance(obj, dict) else None
                if isinstance(meta, dict) and meta.get("resourceVersion"):
                    found.add((meta.get("uid") or meta.get("name"), meta["resourceVersion"]))
        return frozenset(found)

    # --- core -------------------------------------------------------------
    def version(self) -> dict:
        """The API server's ``/version`` (``gitVersion``, ...)."""
        return self.kube.request("GET", "/version", timeout=None)

    def nodes(self, label_selector: str | None = None) -> list[dict]:
        return self._cached(("nodes", label_selector), lambda: self._items(self._api.NODES, None, label_selector))

    def pods(self, namespace: str | None = None, label_selector: str | None = None) -> list[dict]:
        return self._cached(("pods", namespace, label_selector),
                            lambda: self._items(self._api.PODS, namespace, label_selector))

    def secrets(self, namespace: str | None = None, label_selector: str | None = None) -> list[dict]:
        return self._cached(("secrets", namespace, label_selector),
                            lambda: self._items(self._api.SECRETS, namespace, label_selector))

    def pod(self, name: str, namespace: str = "default") -> dict | None:
        return self._optional(self._api.PODS, name, namespace)

    def events(self, namespace: str, field_selector: str | None = None) -> list[dict]:
        return self._cached(("events", namespace, field_selector), lambda: self.kube.list(
            self._api.EVENTS, namespace, field_selector=field_selector, timeout=None)["items"])

    def configmap(self, name: str, namespace: str = "default") -> dict | None:
        return self._optional(self._api.CONFIGMAPS, name, namespace)

    # --- workloads ----------------------------------------------------------
    def deployment(self, name: str, namespace: str = "default") -> dict | None:
        return self._optional(self._api.DEPLOYMENTS, name, namespace)

    def deployments(self) -> list[dict]:
        return self._cached(("deployments",), lambda: self._items(self._api.DEPLOYMENTS))

    def replicasets(self, namespace: str) -> list[dict]:
        return self._cached(("replicasets", namespace), lambda: self._items(self._api.REPLICASETS, namespace))

    def daemonsets(self, namespace: str) -> list[dict]:
        return self._cached(("daemonsets", namespace), lambda: self._items(self._api.DAEMONSETS, namespace))

    def job(self, name: str, namespace: str = "default") -> dict | None:
        return self._optional(self._api.JOBS, name, namespace)

    # --- CRDs and custom resources --------------------------------------------
    def crd(self, name: str) -> dict | None:
        return self._optional(self._api.CRDS, name)

    def custom_object(self, group: str, version: str, plural: str, name: str,
                      namespace: str | None = None) -> dict | None:
        return self._optional(self._api.custom_resource(group, version, plural, namespace is not None), name,
                              namespace)

    def custom_objects(self, group: str, version: str, plural: str, namespace: str | None = None) -> list[dict]:
        """Every object of a custom resource; empty when its CRD is not served."""
        res = self._api.custom_resource(group, version, plural, namespace is not None)
        try:
            return self._items(res, namespace)
        except self._api.ApiException as exc:
            if exc.status == 404:
                return []
            raise

    # --- writes that only ask the server's opinion -----------------------------------
    def dry_run_create_pod(self, pod: dict, namespace: str = "default") -> dict | None:
        """Create ``pod`` with ``dryRun=All``: None if the API server accepts it, else its ``Status`` (a dict)."""
        try:
            self.kube.create(self._api.PODS, pod, namespace, dry_run=True)
        except self._api.ApiException as exc:
            try:
                return json.loads(exc.body)
            except (TypeError, ValueError):
                return {"message": f"{exc.status} {exc.reason}"}
        return None


def established(crd: dict | None) -> bool:
    """Whether a CRD's ``Established`` condition is True (the API server serves it)."""
    conditions = ((crd or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)
