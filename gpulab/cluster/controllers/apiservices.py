"""kube-aggregator's autoregister controller: a local APIService for every group-version the server serves.

Port of k8s.io/kube-aggregator/pkg/controllers/autoregister (and the
crdregistration controller for custom resources): ``v1.``, ``v1.apps``, ...
each with ``groupPriorityMinimum``/``versionPriority`` from the built-in
priorities (1000/100 for a CRD's group), labelled
``kube-aggregator.kubernetes.io/automanaged`` (``onstart`` for built-in
groups, ``true`` for CRD groups), and Available with reason Local as the
availability controller reports local APIServices. A group-version no longer
served (its CRD deleted) loses its APIService.
"""
from __future__ import annotations

from .. import discovery
from ..errors import ApiError
from ..objects import rfc3339
from .base import Controller

APISERVICES = "apiservices.apiregistration.k8s.io"
CRDS = "customresourcedefinitions.apiextensions.k8s.io"
AUTOMANAGED = "kube-aggregator.kubernetes.io/automanaged"


def apiservice_name(group: str, version: str) -> str:
    return f"{version}.{group}"


class APIServiceRegistrationController(Controller):
    name = "autoregister"
    watches = (CRDS, APISERVICES)

    def keys_for(self, key: str, obj: dict):
        return ["sync"]

    def initial_keys(self):
        return ["sync"]

    def _served(self) -> dict[str, tuple[str, str, bool]]:
        out = {}
        for rt in self.api.registry.types():
            out[apiservice_name(rt.group, rt.version)] = (rt.group, rt.version, rt.crd is not None)
        return out

    async def reconcile(self, work_key) -> float | None:
        served = self._served()
        existing = {s["metadata"]["name"]: s for s in self.api.store.list(APISERVICES)}
        now = rfc3339(self.api.clock())
        for name, (group, version, custom) in served.items():
            if name in existing:
                continue
            group_priority, version_priority = discovery.priority(group, version)
            svc = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                   "metadata": {"name": name, "labels": {AUTOMANAGED: "true" if custom else "onstart"}},
                   "spec": {"group": group, "version": version, "groupPriorityMinimum": group_priority,
                            "versionPriority": version_priority}}
            try:
                created = self.api.create(APISERVICES, svc, manager="kube-apiserver")
            except ApiError as exc:
                if exc.code != 409:
                    raise
                continue
            created["status"] = {"conditions": [{"type": "Available", "status": "True", "lastTransitionTime": now,
                                                 "reason": "Local", "message": "Local APIServices are always "
                                                                               "available"}]}
            self.api.update(APISERVICES, created, subresource="status", manager="kube-apiserver")
        for name, svc in existing.items():
            if name not in served and (svc["metadata"].get("labels") or {}).get(AUTOMANAGED) and \
                    (svc.get("spec") or {}).get("service") is None:
                try:
                    self.api.delete(APISERVICES, name)
                except ApiError as exc:
                    if exc.code != 404:
                        raise
        return None
