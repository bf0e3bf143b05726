"""Defaults of networking kinds: NetworkPolicies, Endpoints and EndpointSlices.

Ports of pkg/apis/networking/v1/defaults.go (SetDefaults_NetworkPolicyPort,
SetDefaults_NetworkPolicy: policyTypes from the rules present),
pkg/apis/core/v1/defaults.go (SetDefaults_EndpointPort) and
pkg/apis/discovery/v1/defaults.go (SetDefaults_EndpointPort: protocol TCP
and an empty name).
"""
from __future__ import annotations

from ..registry import ResourceType


def default_network_policy(rt: ResourceType, policy: dict) -> None:
    spec = policy.setdefault("spec", {})
    for direction in ("ingress", "egress"):
        for rule in spec.get(direction) or []:
            for port in rule.get("ports") or []:
                if not port.get("protocol"):
                    port["protocol"] = "TCP"
    if not spec.get("policyTypes"):
        types = ["Ingress"]
        if spec.get("egress"):
            types.append("Egress")
        spec["policyTypes"] = types


def default_endpoints(rt: ResourceType, endpoints: dict) -> None:
    for subset in endpoints.get("subsets") or []:
        for port in subset.get("ports") or []:
            if not port.get("protocol"):
                port["protocol"] = "TCP"


def default_endpoint_slice(rt: ResourceType, slice_: dict) -> None:
    for port in slice_.get("ports") or []:
        if port.get("protocol") is None:
            port["protocol"] = "TCP"
        if port.get("name") is None:
            port["name"] = ""
