"""The EndpointSlice controller: a Service's pods as discovery.k8s.io/v1 EndpointSlices.

Port of pkg/controller/endpointslice (endpointslice_controller.go
``syncService``, reconciler.go, utils.go ``podToEndpoint``,
``newEndpointSlice``) for IPv4 services: slices named ``<service>-<5 random
characters>`` (generateName), labelled ``kubernetes.io/service-name`` and
``endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io``
plus the Service's labels, owned by the Service, at most 100 endpoints each,
with each endpoint's ready/serving/terminating conditions, node and target
pod. A Service that selects no pod keeps one placeholder slice without
endpoints. The ``kubernetes`` Service's slice is kube-apiserver's own
(its endpoint reconciler), named ``kubernetes``.
"""
from __future__ import annotations

from ..errors import ApiError
from ..objects import clone, owner_reference
from .endpoints import KUBERNETES, SERVICES, ServicePodsController, apiserver_subsets, ports_of, service_backends
from .workload import MANAGER, controlled, index_by_controller

SLICES = "endpointslices.discovery.k8s.io"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
CONTROLLER_NAME = "endpointslice-controller.k8s.io"
MAX_ENDPOINTS = 100


def _endpoint(pod: dict, ready: bool) -> dict:
    """podToEndpoint."""
    terminating = pod["metadata"].get("deletionTimestamp") is not None
    endpoint = {"addresses": [pod["status"]["podIP"]],
                "conditions": {"ready": ready and not terminating, "serving": ready, "terminating": terminating},
                "targetRef": {"kind": "Pod", "namespace": pod["metadata"]["namespace"], "name": pod["metadata"]["name"],
                              "uid": pod["metadata"]["uid"]}}
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        endpoint["nodeName"] = spec["nodeName"]
    if spec.get("hostname") and spec.get("subdomain"):
        endpoint["hostname"] = spec["hostname"]
    return endpoint


def _groups(api, svc: dict) -> list[tuple[list[dict], list[dict]]]:
    """(ports, endpoints) per distinct port list, the endpoints split into slices of at most 100."""
    by_ports: dict[tuple, list[dict]] = {}
    for pod, ready in service_backends(api, svc) or []:
        ports = ports_of(svc, pod)
        if ports is None:
            continue
        by_ports.setdefault(ports, []).append(_endpoint(pod, ready))
    out = []
    for ports, endpoints in by_ports.items():
        port_list = [{"name": dict(p).get("name", ""), "protocol": dict(p)["protocol"], "port": dict(p)["port"]}
                     for p in ports]
        endpoints.sort(key=lambda e: e["targetRef"]["name"])
        for i in range(0, len(endpoints), MAX_ENDPOINTS):
            out.append((port_list, endpoints[i:i + MAX_ENDPOINTS]))
    return out


class EndpointSliceController(ServicePodsController):
    name = "endpointslice-controller"
    watches = (SERVICES, "pods", SLICES)

    def __init__(self, api):
        super().__init__(api)
        index_by_controller(api, SLICES)

    def keys_for(self, key: str, obj: dict):
        m = obj["metadata"]
        ns = m.get("namespace", "")
        if key == SERVICES:
            return [(ns, m["name"])]
        if key == SLICES:
            service = (m.get("labels") or {}).get(SERVICE_NAME_LABEL)
            return [(ns, service)] if service else []
        return self.pod_keys(obj)

    async def reconcile(self, work_key) -> float | None:
        ns, name = work_key
        svc = self.api.store.get(SERVICES, ns, name)
        if svc is None or svc["metadata"].get("deletionTimestamp"):
            return None  # the garbage collector removes the slices it owns
        if (ns, name) == KUBERNETES:
            self._apiserver_slice(svc)
            return None
        if service_backends(self.api, svc) is None:
            return None
        groups = _groups(self.api, svc) or [([], [])]
        existing = [s for s in controlled(self.api, SLICES, svc["metadata"]["uid"])
                    if (s["metadata"].get("labels") or {}).get(MANAGED_BY_LABEL) == CONTROLLER_NAME]
        existing.sort(key=lambda s: s["metadata"]["name"])
        labels = {**(svc["metadata"].get("labels") or {}), SERVICE_NAME_LABEL: name, MANAGED_BY_LABEL: CONTROLLER_NAME}
        if (svc.get("spec") or {}).get("clusterIP") == "None":
            labels["service.kubernetes.io/headless"] = ""
        for i, (ports, endpoints) in enumerate(groups):
            body = {"addressType": "IPv4", "endpoints": endpoints or None, "ports": ports or None}
            if i < len(existing):
                current = existing[i]
                if all(current.get(k) == v for k, v in body.items()) and current["metadata"].get("labels") == labels:
                    continue
                new = clone(current)
                new["metadata"]["labels"] = labels
                for k, v in body.items():
                    if v is None:
                        new.pop(k, None)
                    else:
                        new[k] = v
                self.api.update(SLICES, new, ns, manager=MANAGER)
            else:
                slice_ = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                          "metadata": {"generateName": f"{name}-", "namespace": ns, "labels": labels,
                                       "ownerReferences": [owner_reference(svc)]},
                          **{k: v for k, v in body.items() if v is not None}}
                self.api.create(SLICES, slice_, ns, manager=MANAGER)
        for extra in existing[len(groups):]:
            try:
                self.api.delete(SLICES, extra["metadata"]["name"], ns)
            except ApiError as exc:
                if exc.code != 404:
                    raise
        return None

    def _apiserver_slice(self, svc: dict) -> None:
        """The endpoint reconciler's slice for the ``kubernetes`` Service."""
        subsets = apiserver_subsets(self.api)
        if not subsets:
            return
        ns, name = KUBERNETES
        wanted = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                  "metadata": {"name": name, "namespace": ns,
                               "labels": {SERVICE_NAME_LABEL: name, MANAGED_BY_LABEL: "endpointslice-controller.k8s.io"}},
                  "addressType": "IPv4",
                  "endpoints": [{"addresses": [a["ip"]], "conditions": {"ready": True}} for a in subsets[0]["addresses"]],
                  "ports": [{"name": p["name"], "protocol": p["protocol"], "port": p["port"]} for p in subsets[0]["ports"]]}
        current = self.api.store.get(SLICES, ns, name)
        if current is None:
            try:
                self.api.create(SLICES, wanted, ns, manager="kube-apiserver")
            except ApiError as exc:
                if exc.code != 409:
                    raise
