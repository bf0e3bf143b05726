"""Defaults of core/v1 kinds other than pods: services, secrets, namespaces, nodes.

Ports of pkg/apis/core/v1/defaults.go (SetDefaults_Service, SetDefaults_Secret,
SetDefaults_Namespace, SetDefaults_NamespaceStatus, SetDefaults_NodeStatus)
and of the Secret conversion that folds the write-only ``stringData`` into
``data`` (Convert_v1_Secret_To_core_Secret in pkg/apis/core/v1/conversion.go).
"""
from __future__ import annotations

import base64

from ..registry import ResourceType
from .quantities import canonical_resource_list


def default_service(rt: ResourceType, svc: dict) -> None:
    spec = svc.setdefault("spec", {})
    if not spec.get("sessionAffinity"):
        spec["sessionAffinity"] = "None"
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        config = spec.get("sessionAffinityConfig") or {}
        if ((config.get("clientIP") or {}).get("timeoutSeconds")) is None:
            spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": 10800}}
    if not spec.get("type"):
        spec["type"] = "ClusterIP"
    for port in spec.get("ports") or []:
        if not port.get("protocol"):
            port["protocol"] = "TCP"
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port", 0)
    external = spec["type"] in ("NodePort", "LoadBalancer") or (spec["type"] == "ClusterIP"
                                                                   and bool(spec.get("externalIPs")))
    if external and not spec.get("externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if spec.get("internalTrafficPolicy") is None and spec["type"] in ("NodePort", "LoadBalancer", "ClusterIP"):
        spec["internalTrafficPolicy"] = "Cluster"
    if spec["type"] == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True


def default_secret(rt: ResourceType, secret: dict) -> None:
    if not secret.get("type"):
        secret["type"] = "Opaque"
    string_data = secret.pop("stringData", None)
    if string_data:
        data = secret.get("data") or {}
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        secret["data"] = data


def default_namespace(rt: ResourceType, ns: dict) -> None:
    meta = ns.setdefault("metadata", {})
    if meta.get("name"):
        labels = meta.get("labels") or {}
        labels["kubernetes.io/metadata.name"] = meta["name"]
        meta["labels"] = labels
    status = ns.setdefault("status", {})
    if not status.get("phase"):
        status["phase"] = "Active"


def default_node(rt: ResourceType, node: dict) -> None:
    status = node.get("status")
    if status is None:
        return
    canonical_resource_list(rt, status.get("capacity"))
    canonical_resource_list(rt, status.get("allocatable"))
    if status.get("allocatable") is None and status.get("capacity") is not None:
        status["allocatable"] = dict(status["capacity"])
