"""Networking kinds: Ingresses, IngressClasses, NetworkPolicies, Endpoints, EndpointSlices, ServiceCIDRs and
IPAddresses.

Ports of pkg/apis/networking/validation/validation.go (ValidateIngressCreate,
ValidateIngressSpec, validateIngressRules, validateHTTPIngressPath,
validateIngressBackend, validateIngressTLS, ValidateIngressClass(Update),
ValidateNetworkPolicy, ValidateNetworkPolicyPort, ValidateNetworkPolicyPeer,
ValidateServiceCIDR, ValidateIPAddress), pkg/apis/core/validation
(ValidateEndpoints) and pkg/apis/discovery/validation (ValidateEndpointSlice).
"""
from __future__ import annotations

import ipaddress
import re

from ..errors import FieldError
from .field import forbidden, immutable, invalid, not_supported, required, too_long, too_many
from .formats import (is_dns1123_label, is_dns1123_subdomain, is_valid_port_name, is_valid_port_num,
                      name_is_dns1035_label, name_is_dns_subdomain, regex_error)
from .labels import validate_label_selector
from .meta import validate_object_meta, validate_object_meta_update
from .path import Path
from .updates import update_of

SPEC = Path("spec")
_PATH_TYPES = ["Exact", "ImplementationSpecific", "Prefix"]
_INVALID_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")
_INVALID_SUFFIXES = ("/..", "/.")
_PROTOCOLS = ["SCTP", "TCP", "UDP"]
_POLICY_TYPES = ["Egress", "Ingress"]
_ADDRESS_TYPES = ["FQDN", "IPv4", "IPv6"]
_WILDCARD_DNS1123 = re.compile(r"^\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_WILDCARD_ERR = ("a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must "
                 "consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character")
_IP_ERR = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
MAX_CONTROLLER_LEN = 250
_HTTP_PATH_FMT = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+"
_HTTP_PATH = re.compile(_HTTP_PATH_FMT)


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        return False


def _wildcard_host(host: str) -> list[str]:
    """validation.IsWildcardDNS1123Subdomain."""
    errs = ["must be no more than 253 characters"] if len(host) > 253 else []
    if not _WILDCARD_DNS1123.match(host):
        errs.append(f"{_WILDCARD_ERR} (e.g. '*.example.com', regex used for validation is "
                    "'\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
    return errs


def _host(host: str, path: Path) -> list[FieldError]:
    errs = [invalid(path, host, "must be a DNS name, not an IP address")] if _is_ip(host) else []
    msgs = _wildcard_host(host) if "*" in host else is_dns1123_subdomain(host)
    return errs + [invalid(path, host, m) for m in msgs]


# --- ingresses -------------------------------------------------------------------------------
def _backend(backend: dict, path: Path) -> list[FieldError]:
    resource, service = backend.get("resource"), backend.get("service")
    if resource is not None and service is not None:
        return [invalid(path, "", "cannot set both resource and service backends")]
    if resource is not None:
        errs = [] if resource.get("kind") else [required(path.child("resource", "kind"))]
        if not resource.get("name"):
            errs.append(required(path.child("resource", "name")))
        return errs
    if service is None:
        return [invalid(path, "", "resource or service backend is required")]
    errs: list[FieldError] = []
    name = service.get("name") or ""
    if not name:
        errs.append(required(path.child("service", "name")))
    else:
        errs.extend(invalid(path.child("service", "name"), name, m) for m in name_is_dns1035_label(name, False))
    port = service.get("port") or {}
    port_name, number = port.get("name") or "", port.get("number") or 0
    if port_name and number:
        errs.append(invalid(path, "", "cannot set both port name & port number"))
    elif port_name:
        errs.extend(invalid(path.child("service", "port", "name"), port_name, m) for m in is_valid_port_name(port_name))
    elif number:
        errs.extend(invalid(path.child("service", "port", "number"), number, m) for m in is_valid_port_num(number))
    else:
        errs.append(required(path, "port name or number is required"))
    return errs


def _http_path(entry: dict, path: Path) -> list[FieldError]:
    kind = entry.get("pathType")
    if kind is None:
        return [required(path.child("pathType"), "pathType must be specified")]
    value = entry.get("path") or ""
    errs: list[FieldError] = []
    if kind in ("Exact", "Prefix"):
        if not value.startswith("/"):
            errs.append(invalid(path.child("path"), value, "must be an absolute path"))
        if value:
            errs.extend(invalid(path.child("path"), value, f"must not contain '{s}'") for s in _INVALID_SEQUENCES
                        if s in value)
            errs.extend(invalid(path.child("path"), value, f"cannot end with '{s}'") for s in _INVALID_SUFFIXES
                        if value.endswith(s))
    elif kind == "ImplementationSpecific":
        if value and not value.startswith("/"):
            errs.append(invalid(path.child("path"), value, "must be an absolute path"))
    else:
        errs.append(not_supported(path.child("pathType"), kind, _PATH_TYPES))
    return errs + _backend(entry.get("backend") or {}, path.child("backend"))


def _ingress_spec(spec: dict) -> list[FieldError]:
    rules = spec.get("rules") or []
    errs: list[FieldError] = []
    if not rules and spec.get("defaultBackend") is None:
        errs.append(invalid(SPEC, spec.get("rules"), "either `defaultBackend` or `rules` must be specified"))
    if spec.get("defaultBackend") is not None:
        errs.extend(_backend(spec["defaultBackend"], SPEC.child("defaultBackend")))
    for i, rule in enumerate(rules):
        path = SPEC.child("rules").index(i)
        if rule.get("host"):
            errs.extend(_host(rule["host"], path.child("host")))
        http = rule.get("http")
        if http is not None:
            paths = http.get("paths") or []
            if not paths:
                errs.append(required(path.child("http", "paths")))
            for j, entry in enumerate(paths):
                errs.extend(_http_path(entry, path.child("http", "paths").index(j)))
    for i, tls in enumerate(spec.get("tls") or []):
        for j, host in enumerate(tls.get("hosts") or []):
            msgs = _wildcard_host(host) if "*" in host else is_dns1123_subdomain(host)
            errs.extend(invalid(SPEC.child("tls").index(i).child("hosts").index(j), host, m) for m in msgs)
        secret = tls.get("secretName")
        if secret:
            errs.extend(invalid(SPEC.child("tls").index(i).child("secretName"), secret, m)
                        for m in name_is_dns_subdomain(secret, False))
    name = spec.get("ingressClassName")
    if name is not None:
        errs.extend(invalid(SPEC.child("ingressClassName"), name, m) for m in name_is_dns_subdomain(name, False))
    return errs


def validate_ingress(ing: dict) -> list[FieldError]:
    errs = validate_object_meta(ing.get("metadata") or {}, True, name_is_dns_subdomain)
    return errs + _ingress_spec(ing.get("spec") or {})


def validate_ingress_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    return errs + _ingress_spec(new.get("spec") or {})


def validate_ingress_status_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    path = Path("status").child("loadBalancer", "ingress")
    for i, entry in enumerate(((new.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []):
        if entry.get("ip") and not _is_ip(entry["ip"]):
            errs.append(invalid(path.index(i).child("ip"), entry["ip"], _IP_ERR))
        if entry.get("hostname"):
            errs.extend(invalid(path.index(i).child("hostname"), entry["hostname"], m)
                        for m in is_dns1123_subdomain(entry["hostname"]))
            if _is_ip(entry["hostname"]):
                errs.append(invalid(path.index(i).child("hostname"), entry["hostname"], "must be a DNS name, not "
                                                                                       "an IP address"))
    return errs


def _controller(controller: str) -> list[FieldError]:
    """validateIngressClassSpec's length check and validation.IsDomainPrefixedPath."""
    path = SPEC.child("controller")
    errs = [too_long(path, MAX_CONTROLLER_LEN)] if len(controller) > MAX_CONTROLLER_LEN else []
    if not controller:
        return errs + [required(path)]
    host, _, rest = controller.partition("/")
    if not host or not rest:
        return errs + [invalid(path, controller, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    errs.extend(invalid(path, host, m) for m in is_dns1123_subdomain(host))
    if not _HTTP_PATH.fullmatch(rest):
        errs.append(invalid(path, rest, regex_error("must be a valid path", _HTTP_PATH_FMT)))
    return errs


def _ingress_class_parameters(params: dict | None) -> list[FieldError]:
    if params is None:
        return []
    path = SPEC.child("parameters")
    errs = [] if params.get("kind") else [required(path.child("kind"))]
    if not params.get("name"):
        errs.append(required(path.child("name")))
    scope = params.get("scope")
    if scope is not None and scope not in ("Cluster", "Namespace"):
        errs.append(not_supported(path.child("scope"), scope, ["Cluster", "Namespace"]))
    if scope == "Namespace" and not params.get("namespace"):
        errs.append(required(path.child("namespace"), "`parameters.scope` is set to 'Namespace'"))
    if scope == "Cluster" and params.get("namespace"):
        errs.append(forbidden(path.child("namespace"), "`parameters.scope` is set to 'Cluster'"))
    return errs


def validate_ingress_class(cls: dict) -> list[FieldError]:
    errs = validate_object_meta(cls.get("metadata") or {}, False, name_is_dns_subdomain)
    spec = cls.get("spec") or {}
    return errs + _controller(spec.get("controller") or "") + _ingress_class_parameters(spec.get("parameters"))


def validate_ingress_class_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    spec = new.get("spec") or {}
    errs.extend(_ingress_class_parameters(spec.get("parameters")))
    return errs + immutable(SPEC.child("controller"), spec.get("controller"), (old.get("spec") or {}).get("controller"))


# --- network policies ------------------------------------------------------------------------------
def _policy_port(port: dict, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    protocol = port.get("protocol")
    if protocol is not None and protocol not in _PROTOCOLS:
        errs.append(not_supported(path.child("protocol"), protocol, _PROTOCOLS))
    value = port.get("port")
    if isinstance(value, int):
        errs.extend(invalid(path.child("port"), value, m) for m in is_valid_port_num(value))
        end = port.get("endPort")
        if end is not None:
            if end < value:
                errs.append(invalid(path.child("endPort"), end, "must be greater than or equal to `port`"))
            errs.extend(invalid(path.child("endPort"), end, m) for m in is_valid_port_num(end))
    elif isinstance(value, str):
        if port.get("endPort") is not None:
            errs.append(invalid(path.child("endPort"), port["endPort"], "may not be specified when `port` is "
                                                                        "non-numeric"))
        errs.extend(invalid(path.child("port"), value, m) for m in is_valid_port_name(value))
    elif port.get("endPort") is not None:
        errs.append(invalid(path.child("endPort"), port["endPort"], "may not be specified when `port` is not "
                                                                    "specified"))
    return errs


def _peer(peer: dict, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    count = 0
    if peer.get("podSelector") is not None:
        count += 1
        errs.extend(validate_label_selector(peer["podSelector"], path.child("podSelector")))
    if peer.get("namespaceSelector") is not None:
        count += 1
        errs.extend(validate_label_selector(peer["namespaceSelector"], path.child("namespaceSelector")))
    block = peer.get("ipBlock")
    if block is not None:
        if count:
            errs.append(forbidden(path, "may not specify both ipBlock and another peer"))
        count += 1
        errs.extend(_ip_block(block, path.child("ipBlock")))
    if count == 0:
        errs.append(required(path, "must specify a peer"))
    return errs


def _cidr(value: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(value, strict=False)
    except ValueError:
        return None


def _ip_block(block: dict, path: Path) -> list[FieldError]:
    cidr = block.get("cidr") or ""
    if not cidr:
        return [required(path.child("cidr"))]
    network = _cidr(cidr) if "/" in cidr else None
    if network is None:
        return [invalid(path.child("cidr"), cidr, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)")]
    errs = []
    for i, text in enumerate(block.get("except") or []):
        sub = _cidr(text) if "/" in text else None
        if sub is None:
            errs.append(invalid(path.child("except").index(i), text, "must be a valid CIDR value, (e.g. "
                                                                      "10.9.8.0/24 or 2001:db8::/64)"))
        elif sub.version != network.version or not sub.subnet_of(network) or sub.prefixlen <= network.prefixlen:
            errs.append(invalid(path.child("except").index(i), text, "must be a strict subset of `cidr`"))
    return errs


def validate_network_policy(policy: dict) -> list[FieldError]:
    errs = validate_object_meta(policy.get("metadata") or {}, True, name_is_dns_subdomain)
    spec = policy.get("spec") or {}
    errs.extend(validate_label_selector(spec.get("podSelector"), SPEC.child("podSelector")))
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(spec.get(direction) or []):
            path = SPEC.child(direction).index(i)
            for j, port in enumerate(rule.get("ports") or []):
                errs.extend(_policy_port(port, path.child("ports").index(j)))
            for j, peer in enumerate(rule.get(peers) or []):
                errs.extend(_peer(peer, path.child(peers).index(j)))
    types = spec.get("policyTypes") or []
    for i, kind in enumerate(types):
        if kind not in _POLICY_TYPES:
            errs.append(not_supported(SPEC.child("policyTypes").index(i), kind, _POLICY_TYPES))
    if len(types) > 2:
        errs.append(invalid(SPEC.child("policyTypes"), types, "may not specify more than two policyTypes"))
    return errs


validate_network_policy_update = update_of(validate_network_policy)


# --- endpoints --------------------------------------------------------------------------------------
def _endpoint_address(address: dict, path: Path) -> list[FieldError]:
    ip = address.get("ip") or ""
    errs = [invalid(path.child("ip"), ip, _IP_ERR)] if not _is_ip(ip) else []
    hostname = address.get("hostname")
    if hostname:
        errs.extend(invalid(path.child("hostname"), hostname, m) for m in is_dns1123_label(hostname))
    if address.get("nodeName"):
        errs.extend(invalid(path.child("nodeName"), address["nodeName"], m)
                    for m in name_is_dns_subdomain(address["nodeName"], False))
    return errs


def _endpoint_port(port: dict, require_name: bool, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    name = port.get("name") or ""
    if require_name and not name:
        errs.append(required(path.child("name")))
    elif name:
        errs.extend(invalid(path.child("name"), name, m) for m in is_dns1123_label(name))
    errs.extend(invalid(path.child("port"), port.get("port", 0), m) for m in is_valid_port_num(port.get("port", 0)))
    protocol = port.get("protocol") or ""
    if not protocol:
        errs.append(required(path.child("protocol")))
    elif protocol not in _PROTOCOLS:
        errs.append(not_supported(path.child("protocol"), protocol, _PROTOCOLS))
    return errs


def validate_endpoints(endpoints: dict) -> list[FieldError]:
    errs = validate_object_meta(endpoints.get("metadata") or {}, True, name_is_dns_subdomain)
    for i, subset in enumerate(endpoints.get("subsets") or []):
        path = Path("subsets").index(i)
        ready, not_ready = subset.get("addresses") or [], subset.get("notReadyAddresses") or []
        if not ready and not not_ready:
            errs.append(required(path, "must specify `addresses` or `notReadyAddresses`"))
        for j, address in enumerate(ready):
            errs.extend(_endpoint_address(address, path.child("addresses").index(j)))
        for j, address in enumerate(not_ready):
            errs.extend(_endpoint_address(address, path.child("notReadyAddresses").index(j)))
        ports = subset.get("ports") or []
        for j, port in enumerate(ports):
            errs.extend(_endpoint_port(port, len(ports) > 1, path.child("ports").index(j)))
    return errs


validate_endpoints_update = update_of(validate_endpoints)


def validate_endpoint_slice(slice_: dict) -> list[FieldError]:
    errs = validate_object_meta(slice_.get("metadata") or {}, True, name_is_dns_subdomain)
    kind = slice_.get("addressType") or ""
    if not kind:
        errs.append(required(Path("addressType")))
    elif kind not in _ADDRESS_TYPES:
        errs.append(not_supported(Path("addressType"), kind, _ADDRESS_TYPES))
    endpoints = slice_.get("endpoints") or []
    if len(endpoints) > 1000:
        errs.append(too_many(Path("endpoints"), len(endpoints), 1000))
    for i, endpoint in enumerate(endpoints):
        path = Path("endpoints").index(i)
        addresses = endpoint.get("addresses") or []
        if not addresses:
            errs.append(required(path.child("addresses"), "must contain at least 1 address"))
        for j, address in enumerate(addresses):
            p = path.child("addresses").index(j)
            if kind == "IPv4" and not (_is_ip(address) and ipaddress.ip_address(address).version == 4):
                errs.append(invalid(p, address, "must be a valid IPv4 address"))
            elif kind == "IPv6" and not (_is_ip(address) and ipaddress.ip_address(address).version == 6):
                errs.append(invalid(p, address, "must be a valid IPv6 address"))
            elif kind == "FQDN":
                errs.extend(invalid(p, address, m) for m in is_dns1123_subdomain(address))
        if endpoint.get("hostname"):
            errs.extend(invalid(path.child("hostname"), endpoint["hostname"], m)
                        for m in is_dns1123_label(endpoint["hostname"]))
    for i, port in enumerate(slice_.get("ports") or []):
        path = Path("ports").index(i)
        name = port.get("name") or ""
        if name:
            errs.extend(invalid(path.child("name"), name, m) for m in is_dns1123_label(name))
        protocol = port.get("protocol")
        if protocol is not None and protocol not in _PROTOCOLS:
            errs.append(not_supported(path.child("protocol"), protocol, _PROTOCOLS))
        if port.get("port") is not None:
            errs.extend(invalid(path.child("port"), port["port"], m) for m in is_valid_port_num(port["port"]))
    return errs


def validate_endpoint_slice_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    errs.extend(e for e in validate_endpoint_slice(new) if not e.field.startswith("metadata."))
    return errs + immutable(Path("addressType"), new.get("addressType"), old.get("addressType"))


# --- service CIDRs and IP addresses ------------------------------------------------------------------
def validate_service_cidr(cidr: dict) -> list[FieldError]:
    errs = validate_object_meta(cidr.get("metadata") or {}, False, name_is_dns_subdomain)
    values = (cidr.get("spec") or {}).get("cidrs") or []
    path = SPEC.child("cidrs")
    if not values:
        errs.append(required(path, "at least one CIDR required"))
    if len(values) > 2:
        errs.append(invalid(path, values, "may only hold up to 2 values"))
    for i, value in enumerate(values):
        network = _cidr(value) if "/" in value else None
        if network is None or str(network) != value:
            errs.append(invalid(path.index(i), value, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or "
                                                      "2001:db8::/64)"))
    return errs


def validate_service_cidr_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    return errs + immutable(SPEC.child("cidrs"), (new.get("spec") or {}).get("cidrs"),
                            (old.get("spec") or {}).get("cidrs"))


def _canonical_ip_name(name: str, prefix: bool) -> list[str]:
    """An IPAddress is named by its address in canonical form."""
    if _is_ip(name) and str(ipaddress.ip_address(name)) == name:
        return []
    return ["must be a canonical format IP address"]


def validate_ip_address(ip: dict) -> list[FieldError]:
    errs = validate_object_meta(ip.get("metadata") or {}, False, _canonical_ip_name)
    ref = (ip.get("spec") or {}).get("parentRef")
    path = SPEC.child("parentRef")
    if ref is None:
        return errs + [required(path)]
    if not ref.get("resource"):
        errs.append(required(path.child("resource")))
    if not ref.get("name"):
        errs.append(required(path.child("name")))
    return errs


def validate_ip_address_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    return errs + immutable(SPEC.child("parentRef"), (new.get("spec") or {}).get("parentRef"),
                            (old.get("spec") or {}).get("parentRef"))
