"""kind's ``kind.x-k8s.io/v1alpha4`` Cluster configuration, checked the way kind reads it.

kind publishes no JSON schema: it decodes the file into its Go types
(``sigs.k8s.io/kind/pkg/apis/config/v1alpha4/types.go``) with yaml.v3 and
``KnownFields(true)`` (``pkg/internal/apis/config/encoding/load.go``), then
validates the converted config (``pkg/internal/apis/config/validate.go``). This
module carries those types as data and reproduces both passes, with kind's and
yaml.v3's messages, so a config in ``cluster-setup/kind`` is known to load before
anyone needs Docker:

* ``unable to decode config: yaml: unmarshal errors:\\n  line 7: field bogus not
  found in type v1alpha4.Node`` (one line per problem, as yaml.v3 collects them);
  ``Mount`` and ``PortMapping`` decode through local alias types in ``yaml.go``,
  hence ``v1alpha4.MountAlias`` / ``v1alpha4.PortMappingAlias`` in their messages;
* the same ``yaml.go`` refusals: ``Unknown MountPropagation: "x"``,
  ``Unknown PortMappingProtocol: "X"`` (the protocol is upper-cased first);
* ``validate.go``: node roles, at least one control-plane node, ports,
  ``ipFamily`` and ``kubeProxyMode`` values (after kind's defaults: role
  ``control-plane``, ``ipv4``, ``iptables``).

Not reproduced: CIDR parsing of ``podSubnet``/``serviceSubnet`` and the
duplicate-port-mapping check (neither is used by the course's configs), and the
checks that need the host (images, ports in use).
"""
from __future__ import annotations

from dataclasses import dataclass

import yaml

API_VERSION = "kind.x-k8s.io/v1alpha4"
KIND = "Cluster"

# Field name -> type, from types.go (yaml tags). Scalars: "string", "int32", "bool";
# "[]T" lists, "map[string]T" maps, "*[]string" an optional list; other names are structs below.
TYPES: dict[str, dict[str, str]] = {
    "Cluster": {
        "kind": "string", "apiVersion": "string", "name": "string", "nodes": "[]Node", "networking": "Networking",
        "featureGates": "map[string]bool", "runtimeConfig": "map[string]string",
        "kubeadmConfigPatches": "[]string", "kubeadmConfigPatchesJSON6902": "[]PatchJSON6902",
        "containerdConfigPatches": "[]string", "containerdConfigPatchesJSON6902": "[]string",
    },
    "Node": {
        "role": "string", "image": "string", "labels": "map[string]string", "extraMounts": "[]MountAlias",
        "extraPortMappings": "[]PortMappingAlias", "kubeadmConfigPatches": "[]string",
        "kubeadmConfigPatchesJSON6902": "[]PatchJSON6902",
    },
    "Networking": {
        "ipFamily": "string", "apiServerPort": "int32", "apiServerAddress": "string", "podSubnet": "string",
        "serviceSubnet": "string", "disableDefaultCNI": "bool", "kubeProxyMode": "string", "dnsSearch": "*[]string",
    },
    "PatchJSON6902": {"group": "string", "version": "string", "kind": "string", "patch": "string"},
    "MountAlias": {"containerPath": "string", "hostPath": "string", "readOnly": "bool", "selinuxRelabel": "bool",
                   "propagation": "string"},
    "PortMappingAlias": {"containerPort": "int32", "hostPort": "int32", "listenAddress": "string",
                         "protocol": "string"},
}
NODE_ROLES = ("control-plane", "worker")
IP_FAMILIES = ("ipv4", "ipv6", "dual")
PROXY_MODES = ("iptables", "ipvs", "none", "nftables")
MOUNT_PROPAGATIONS = ("None", "HostToContainer", "Bidirectional")
PORT_PROTOCOLS = ("TCP", "UDP", "SCTP")
_GO_INTS = {"int32": (-(2**31), 2**31 - 1)}


class KindConfigError(ValueError):
    """The config would not load in kind; ``str()`` is kind's message."""


@dataclass
class _Decoder:
    """yaml.v3's strict decode into the v1alpha4 types: collect type errors, fail fast on custom refusals."""

    errors: list[str]

    def decode(self, node: yaml.Node, type_name: str) -> object:
        if type_name.startswith("*"):
            return self.decode(node, type_name[1:])
        if _is_null(node):
            return None
        if type_name.startswith("[]"):
            if not isinstance(node, yaml.SequenceNode):
                return self._mismatch(node, type_name)
            return [self.decode(item, type_name[2:]) for item in node.value]
        if type_name.startswith("map[string]"):
            if not isinstance(node, yaml.MappingNode):
                return self._mismatch(node, type_name)
            return {key.value: self.decode(value, type_name[len("map[string]"):]) for key, value in node.value}
        if type_name in TYPES:
            return self._struct(node, type_name)
        return self._scalar(node, type_name)

    def _struct(self, node: yaml.Node, type_name: str) -> object:
        if not isinstance(node, yaml.MappingNode):
            return self._mismatch(node, f"v1alpha4.{type_name}")
        fields = TYPES[type_name]
        out: dict[str, object] = {}
        for key, value in node.value:
            if key.value not in fields:
                self.errors.append(f"line {key.start_mark.line + 1}: field {key.value} not found in type "
                                   f"v1alpha4.{type_name}")
                continue
            out[key.value] = self.decode(value, fields[key.value])
        _refuse_custom(type_name, out)
        return out

    def _scalar(self, node: yaml.Node, type_name: str) -> object:
        if not isinstance(node, yaml.ScalarNode):
            return self._mismatch(node, type_name)
        tag = node.tag.rsplit(":", 1)[-1]
        if type_name == "string":
            return node.value
        if type_name == "bool" and tag == "bool":
            return node.value.lower() == "true"
        if type_name in _GO_INTS and tag == "int":
            value = int(node.value, 0)
            low, high = _GO_INTS[type_name]
            if low <= value <= high:
                return value
        return self._mismatch(node, type_name)

    def _mismatch(self, node: yaml.Node, go_type: str) -> None:
        tag = "!!" + node.tag.rsplit(":", 1)[-1]
        shown = f" `{node.value}`" if isinstance(node, yaml.ScalarNode) else ""
        self.errors.append(f"line {node.start_mark.line + 1}: cannot unmarshal {tag}{shown} into {go_type}")
        return None


def _is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null")


def _refuse_custom(type_name: str, decoded: dict) -> None:
    """``yaml.go``'s UnmarshalYAML checks, which stop decoding with their own error."""
    if type_name == "MountAlias" and decoded.get("propagation") not in (None, "", *MOUNT_PROPAGATIONS):
        raise KindConfigError(f'unable to decode config: Unknown MountPropagation: "{decoded["propagation"]}"')
    if type_name == "PortMappingAlias" and decoded.get("protocol"):
        protocol = str(decoded["protocol"]).upper()
        if protocol not in PORT_PROTOCOLS:
            raise KindConfigError(f'unable to decode config: Unknown PortMappingProtocol: "{protocol}"')


def _port_errors(port: int | None, what: str) -> list[str]:
    if port is not None and not -1 <= port <= 65535:
        return [f"invalid {what}: invalid port number: {port}"]
    return []


def _aggregate(errors: list[str]) -> str:
    """apimachinery's ``utilerrors.NewAggregate(...).Error()``: one message as is, several as ``[a, b]``."""
    return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"


def validate(cluster: dict) -> list[str]:
    """``Cluster.Validate()`` on a decoded, defaulted config: kind's messages, empty when valid."""
    errors: list[str] = []
    networking = cluster.get("networking") or {}
    errors += _port_errors(networking.get("apiServerPort") or None, "apiServerPort")
    if (networking.get("ipFamily") or "ipv4") not in IP_FAMILIES:
        errors.append(f"invalid ipFamily: {networking['ipFamily']}")
    if (networking.get("kubeProxyMode") or "iptables") not in PROXY_MODES:
        errors.append(f"invalid kubeProxyMode: {networking['kubeProxyMode']}")
    nodes = cluster.get("nodes") or [{}]
    for i, node in enumerate(nodes):
        node_errors = []
        role = node.get("role") or "control-plane"
        if role not in NODE_ROLES:
            node_errors.append(f'"{role}" is not a valid node role')
        for mapping in node.get("extraPortMappings") or []:
            node_errors += _port_errors(mapping.get("hostPort"), "hostPort")
            node_errors += _port_errors(mapping.get("containerPort"), "containerPort")
        if node_errors:
            errors.append(f"invalid configuration for node {i}: {_aggregate(node_errors)}")
    if not any((node.get("role") or "control-plane") == "control-plane" for node in nodes):
        errors.append("must have at least one control-plane node")
    return errors


def load(text: str) -> dict:
    """Decode and validate a kind config as ``kind create cluster --config`` does; KindConfigError otherwise."""
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        raise KindConfigError(f"could not determine kind / apiVersion for config: {exc}") from None
    if root is None or not isinstance(root, yaml.MappingNode):
        raise KindConfigError("unknown apiVersion: ")
    top = {key.value: value for key, value in root.value}
    api_version = top["apiVersion"].value if "apiVersion" in top else ""
    kind = top["kind"].value if "kind" in top else ""
    if api_version != API_VERSION:
        raise KindConfigError(f"unknown apiVersion: {api_version}")
    if kind != KIND:
        raise KindConfigError(f"unknown kind {kind} for apiVersion: {api_version}")
    decoder = _Decoder([])
    cluster = decoder.decode(root, "Cluster")
    if decoder.errors:
        raise KindConfigError("unable to decode config: yaml: unmarshal errors:\n  " + "\n  ".join(decoder.errors))
    problems = validate(cluster)
    if problems:
        raise KindConfigError(_aggregate(problems))
    return cluster
