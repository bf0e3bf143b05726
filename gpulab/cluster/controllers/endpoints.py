"""The Endpoints controller: one Endpoints object per Service with a selector, listing its pods' addresses.

Port of pkg/controller/endpoint/endpoints_controller.go (``syncService``,
``addEndpointSubset``, podToEndpointAddressForService) and
pkg/api/v1/endpoints (RepackSubsets) with pkg/controller/util/endpoint
(ShouldPodBeInEndpoints, the targetPort lookup): ready pods in
``addresses``, the others in ``notReadyAddresses`` (all in ``addresses``
with publishNotReadyAddresses), ports from each service port's targetPort
(a number, or a container port's name), and the ``kubernetes`` Service's
endpoints, which kube-apiserver's endpoint reconciler keeps (the control
plane's address and port 6443, as on kind). Both this controller and the
EndpointSlice controller (:mod:`.endpointslice`) read the pods from
:func:`service_backends`.
"""
from __future__ import annotations

import ipaddress

from ..errors import ApiError
from ..objects import clone
from ..selectors import label_selector_from_dict, matches_labels
from .base import Controller
from .workload import MANAGER, is_ready

ENDPOINTS = "endpoints"
SERVICES = "services"
HEADLESS_LABEL = "service.kubernetes.io/headless"
KUBERNETES = ("default", "kubernetes")
APISERVER_PORT = 6443  # kind's kube-apiserver port on the control-plane node


def _selector(svc: dict) -> list | None:
    selector = (svc.get("spec") or {}).get("selector")
    if not selector:
        return None
    return label_selector_from_dict({"matchLabels": selector})


def _target_port(port: dict, pod: dict) -> int | None:
    """FindPort: an int targetPort as it is, a named one from the pod's containers (protocol matching)."""
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    for container in (pod.get("spec") or {}).get("containers") or []:
        for cport in container.get("ports") or []:
            if cport.get("name") == target and cport.get("protocol", "TCP") == port.get("protocol", "TCP"):
                return cport.get("containerPort")
    return None


def service_backends(api, svc: dict) -> list[tuple[dict, bool]] | None:
    """The pods a Service selects that belong in its endpoints, each with whether it is ready; None for a
    Service without a selector (its endpoints are someone else's)."""
    selector = _selector(svc)
    if selector is None:
        return None
    publish_not_ready = bool((svc.get("spec") or {}).get("publishNotReadyAddresses"))
    out = []
    for pod in api.store.list("pods", svc["metadata"]["namespace"]):
        if not matches_labels(selector, pod["metadata"].get("labels")):
            continue
        status = pod.get("status") or {}
        if not status.get("podIP") or status.get("phase") in ("Succeeded", "Failed"):
            continue  # ShouldPodBeInEndpoints
        if pod["metadata"].get("deletionTimestamp") and not publish_not_ready:
            continue
        out.append((pod, publish_not_ready or is_ready(pod)))
    return out


def _address(pod: dict, svc: dict) -> dict:
    spec = pod.get("spec") or {}
    address = {"ip": pod["status"]["podIP"]}
    if spec.get("hostname") and spec.get("subdomain") == svc["metadata"]["name"]:
        address["hostname"] = spec["hostname"]
    if spec.get("nodeName"):
        address["nodeName"] = spec["nodeName"]
    address["targetRef"] = {"kind": "Pod", "namespace": pod["metadata"]["namespace"], "name": pod["metadata"]["name"],
                            "uid": pod["metadata"]["uid"]}
    return address


def _ip_key(address: dict):
    try:
        return (0, ipaddress.ip_address(address["ip"]).packed)
    except ValueError:
        return (1, address["ip"].encode())


def repack(entries: list[tuple[tuple, dict, bool]]) -> list[dict]:
    """RepackSubsets: addresses grouped by identical port lists (in the Service's order), ready and not ready
    apart, addresses sorted by IP."""
    by_ports: dict[tuple, tuple[list[dict], list[dict]]] = {}
    for ports, address, ready in entries:
        ready_list, not_ready = by_ports.setdefault(ports, ([], []))
        (ready_list if ready else not_ready).append(address)
    subsets = []
    for ports, (ready_list, not_ready) in by_ports.items():
        subset: dict = {}
        if ready_list:
            subset["addresses"] = sorted(ready_list, key=_ip_key)
        if not_ready:
            subset["notReadyAddresses"] = sorted(not_ready, key=_ip_key)
        if ports:
            subset["ports"] = [dict(p) for p in ports]
        subsets.append(subset)
    return sorted(subsets, key=lambda s: str(s.get("ports")))


def ports_of(svc: dict, pod: dict) -> tuple | None:
    ports = []
    for port in (svc.get("spec") or {}).get("ports") or []:
        number = _target_port(port, pod)
        if number is None:
            return None  # the pod has no such port: it is left out (as upstream logs and skips)
        entry = (("name", port.get("name", "")), ("port", number), ("protocol", port.get("protocol", "TCP")))
        ports.append(tuple((k, v) for k, v in entry if not (k == "name" and v == "")))
    return tuple(ports)


def desired_subsets(api, svc: dict) -> list[dict] | None:
    backends = service_backends(api, svc)
    if backends is None:
        return None
    entries = []
    for pod, ready in backends:
        ports = ports_of(svc, pod)
        if ports is None:
            continue
        entries.append((ports, _address(pod, svc), ready))
    return repack(entries)


def apiserver_subsets(api) -> list[dict]:
    """The endpoint reconciler's subsets: the control plane's InternalIP and kube-apiserver's port."""
    nodes = [n for n in api.store.list("nodes")
             if "node-role.kubernetes.io/control-plane" in (n["metadata"].get("labels") or {})]
    ips = [a["address"] for n in nodes for a in (n.get("status") or {}).get("addresses") or []
           if a.get("type") == "InternalIP"]
    if not ips:
        return []
    return [{"addresses": [{"ip": ip} for ip in ips[:1]],
             "ports": [{"name": "https", "port": APISERVER_PORT, "protocol": "TCP"}]}]


class ServicePodsController(Controller):
    """A controller keyed by Service (namespace, name) that a pod's change wakes for every Service selecting the
    pod before or after the change."""

    def pod_keys(self, pod: dict) -> list[tuple[str, str]]:
        ns, labels = pod["metadata"].get("namespace", ""), pod["metadata"].get("labels") or {}
        return [(ns, s["metadata"]["name"]) for s in self.api.store.list(SERVICES, ns)
                if (sel := _selector(s)) is not None and matches_labels(sel, labels)]

    def _on_change(self, key: str):
        def handler(event_type: str, obj: dict, old: dict | None) -> None:
            keys = self.keys_for(key, obj)
            if key == "pods" and old is not None:
                keys += [k for k in self.keys_for(key, old) if k not in keys]
            for k in keys:
                self.queue.add(k)
        return handler


class EndpointsController(ServicePodsController):
    name = "endpoints-controller"
    watches = (SERVICES, "pods", ENDPOINTS)

    def keys_for(self, key: str, obj: dict):
        if key == "pods":
            return self.pod_keys(obj)
        return [(obj["metadata"].get("namespace", ""), obj["metadata"]["name"])]

    async def reconcile(self, work_key) -> float | None:
        ns, name = work_key
        svc = self.api.store.get(SERVICES, ns, name)
        current = self.api.store.get(ENDPOINTS, ns, name)
        if svc is None or svc["metadata"].get("deletionTimestamp"):
            if current is not None and svc is None and (ns, name) != KUBERNETES:
                try:
                    self.api.delete(ENDPOINTS, name, ns)
                except ApiError as exc:
                    if exc.code != 404:
                        raise
            return None
        subsets = apiserver_subsets(self.api) if (ns, name) == KUBERNETES else desired_subsets(self.api, svc)
        if subsets is None:
            return None
        labels = dict(svc["metadata"].get("labels") or {})
        if (svc.get("spec") or {}).get("clusterIP") == "None":
            labels[HEADLESS_LABEL] = ""
        wanted = {"apiVersion": "v1", "kind": "Endpoints",
                  "metadata": {"name": name, "namespace": ns, **({"labels": labels} if labels else {})}}
        if subsets:
            wanted["subsets"] = subsets
        if current is None:
            self.api.create(ENDPOINTS, wanted, ns, manager=MANAGER)
            return None
        if current.get("subsets") == wanted.get("subsets") and \
                (current["metadata"].get("labels") or {}) == labels:
            return None
        new = clone(current)
        new["metadata"]["labels"] = labels or None
        if not labels:
            new["metadata"].pop("labels")
        new.pop("subsets", None)
        if subsets:
            new["subsets"] = subsets
        self.api.update(ENDPOINTS, new, ns, manager=MANAGER)
        return None
