"""Per-namespace defaults: the ``default`` ServiceAccount and the ``kube-root-ca.crt`` ConfigMap.

As pkg/controller/serviceaccount (tokens_controller aside) and
pkg/controller/certificates/rootcacertpublisher: every active namespace gets
both, and they come back if deleted.
"""
from __future__ import annotations

from ..errors import ApiError
from .base import Controller

ROOT_CA_CONFIGMAP = "kube-root-ca.crt"


class ServiceAccountController(Controller):
    name = "serviceaccount-controller"
    watches = ("namespaces", "serviceaccounts", "configmaps")

    def __init__(self, api, ca_pem: str):
        super().__init__(api)
        self.ca_pem = ca_pem

    def keys_for(self, key: str, obj: dict):
        if key == "namespaces":
            return [obj["metadata"]["name"]]
        name = obj["metadata"]["name"]
        if (key == "serviceaccounts" and name == "default") or (key == "configmaps" and name == ROOT_CA_CONFIGMAP):
            return [obj["metadata"].get("namespace", "")]
        return []

    async def reconcile(self, ns_name: str) -> float | None:
        ns = self.api.try_get("namespaces", ns_name)
        if ns is None or ns["metadata"].get("deletionTimestamp"):
            return None
        try:
            if self.api.try_get("serviceaccounts", "default", ns_name) is None:
                self.api.create("serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount",
                                                    "metadata": {"name": "default"}}, ns_name,
                                manager="kube-controller-manager")
            cm = self.api.try_get("configmaps", ROOT_CA_CONFIGMAP, ns_name)
            if cm is None:
                self.api.create("configmaps", {
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": ROOT_CA_CONFIGMAP,
                                 "annotations": {"kubernetes.io/description": (
                                     "Contains a CA bundle that can be used to verify the kube-apiserver when "
                                     "using internal endpoints such as the internal service IP or "
                                     "kubernetes.default.svc. No other usage is guaranteed across distributions "
                                     "of Kubernetes clusters.")}},
                    "data": {"ca.crt": self.ca_pem}}, ns_name, manager="kube-controller-manager")
            elif cm.get("data") != {"ca.crt": self.ca_pem}:
                # pkg/controller/certificates/rootcacertpublisher: a ConfigMap whose data differs is put back
                self.api.update("configmaps", {**cm, "data": {"ca.crt": self.ca_pem}}, ns_name,
                                manager="kube-controller-manager")
        except ApiError as exc:
            if exc.code not in (409, 403):
                raise
        return None
