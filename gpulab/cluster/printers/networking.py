"""Printers for networking kinds: ingresses, ingress classes, network policies, endpoints, endpoint slices,
service CIDRs and IP addresses.

Ports of printIngress, printIngressClass, printNetworkPolicy, printEndpoints
(formatEndpoints), printEndpointSlice (formatDiscoveryPorts,
formatDiscoveryEndpoints, listWithMoreString), printServiceCIDR and
printIPAddress in kubernetes/pkg/printers/internalversion/printers.go.
"""
from __future__ import annotations

from .cells import age, format_label_selector, name
from .columns import CORE, age_column, column, doc, name_column

NETWORKING = "io.k8s.api.networking.v1."
DISCOVERY = "io.k8s.api.discovery.v1."
_MAX_LISTED = 3


def _with_more(items: list[str], count: int, empty: str) -> str:
    """listWithMoreString: at most three items, then `` + N more...``."""
    text = ",".join(items[:_MAX_LISTED])
    if count > _MAX_LISTED:
        return f"{text} + {count - _MAX_LISTED} more..."
    return text or empty


# --- ingresses -------------------------------------------------------------------
def ingress_columns() -> list[dict]:
    return [name_column(),
            column("Class", description="The name of the IngressClass resource that should be used for additional "
                                        "configuration"),
            column("Hosts", description="Hosts that incoming requests are matched against before the ingress rule"),
            column("Address", description="Address is a list containing ingress points for the load-balancer"),
            column("Ports", description="Ports of TLS configurations that open"), age_column()]


def _hosts(rules: list) -> str:
    """formatHosts: the hosts until three are listed; ``*`` when no rule names one."""
    hosts: list[str] = []
    more = False
    for rule in rules:
        if len(hosts) == _MAX_LISTED:
            more = True
        if not more and rule.get("host"):
            hosts.append(rule["host"])
    if not hosts:
        return "*"
    text = ",".join(hosts)
    return f"{text} + {len(rules) - _MAX_LISTED} more..." if more else text


def _ingress_addresses(status: dict) -> str:
    """ingressLoadBalancerStatusStringer, wide: the sorted distinct IPs (or hostnames)."""
    found = {i.get("ip") or i.get("hostname") for i in (status.get("loadBalancer") or {}).get("ingress") or []}
    return ",".join(sorted(a for a in found if a))


def ingress_cells(ing: dict, now_us: int) -> list:
    spec = ing.get("spec") or {}
    return [name(ing), spec.get("ingressClassName") or "<none>", _hosts(spec.get("rules") or []),
            _ingress_addresses(ing.get("status") or {}), "80, 443" if spec.get("tls") else "80", age(ing, now_us)]


def ingressclass_columns() -> list[dict]:
    return [name_column(), column("Controller", description="Controller that is responsible for handling this class"),
            column("Parameters", description="A reference to a resource with additional parameters"), age_column()]


def ingressclass_cells(cls: dict, now_us: int) -> list:
    spec = cls.get("spec") or {}
    params = spec.get("parameters")
    shown = "<none>"
    if params is not None:
        shown = params.get("kind", "") + (f".{params['apiGroup']}" if params.get("apiGroup") is not None else "")
        shown += "/" + params.get("name", "")
    return [name(cls), spec.get("controller", ""), shown, age(cls, now_us)]


def networkpolicy_columns() -> list[dict]:
    return [name_column(), column("Pod-Selector", description=doc(NETWORKING + "NetworkPolicySpec", "podSelector")),
            age_column()]


def networkpolicy_cells(policy: dict, now_us: int) -> list:
    return [name(policy), format_label_selector((policy.get("spec") or {}).get("podSelector") or {}),
            age(policy, now_us)]


# --- endpoints -----------------------------------------------------------------------
def endpoints_columns() -> list[dict]:
    return [name_column(), column("Endpoints", description=doc(CORE + "Endpoints", "subsets")), age_column()]


def _join_host_port(ip: str, port: int) -> str:
    """net.JoinHostPort."""
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def format_endpoints(endpoints: dict) -> str:
    """formatEndpoints with every port: ``ip:port`` pairs, three at most, then the count left."""
    subsets = endpoints.get("subsets") or []
    if not subsets:
        return "<none>"
    listed: list[str] = []
    count = 0
    for subset in subsets:
        addresses = subset.get("addresses") or []
        ports = subset.get("ports") or []
        if not ports:  # a headless service without ports
            count += len(addresses)
            listed.extend(a.get("ip", "") for a in addresses)
            continue
        for port in ports:
            count += len(addresses)
            listed.extend(_join_host_port(a.get("ip", ""), int(port.get("port", 0))) for a in addresses)
    text = ",".join(listed[:_MAX_LISTED])
    return f"{text} + {count - _MAX_LISTED} more..." if count > _MAX_LISTED else text


def endpoints_cells(endpoints: dict, now_us: int) -> list:
    return [name(endpoints), format_endpoints(endpoints), age(endpoints, now_us)]


def endpointslice_columns() -> list[dict]:
    slice_ = DISCOVERY + "EndpointSlice"
    return [name_column(), column("AddressType", description=doc(slice_, "addressType")),
            column("Ports", description=doc(slice_, "ports")),
            column("Endpoints", description=doc(slice_, "endpoints")), age_column()]


def endpointslice_cells(slice_: dict, now_us: int) -> list:
    ports = slice_.get("ports") or []
    port_texts = [str(p["port"]) if p.get("port") is not None else (p["name"] if p.get("name") is not None else "*")
                  for p in ports]
    addresses = [a for e in slice_.get("endpoints") or [] for a in e.get("addresses") or []]
    return [name(slice_), slice_.get("addressType", ""), _with_more(port_texts, len(port_texts), "<unset>"),
            _with_more(addresses, len(addresses), "<unset>"), age(slice_, now_us)]


# --- service CIDRs and IP addresses ------------------------------------------------------
def servicecidr_columns() -> list[dict]:
    return [name_column(), column("CIDRs", description=doc(NETWORKING + "ServiceCIDRSpec", "cidrs")), age_column()]


def servicecidr_cells(cidr: dict, now_us: int) -> list:
    return [name(cidr), ",".join((cidr.get("spec") or {}).get("cidrs") or []), age(cidr, now_us)]


def ipaddress_columns() -> list[dict]:
    # Upstream declares no Age column here although each row carries an age cell.
    return [name_column(), column("ParentRef", description=doc(NETWORKING + "IPAddressSpec", "parentRef"))]


def ipaddress_cells(ip: dict, now_us: int) -> list:
    ref = (ip.get("spec") or {}).get("parentRef")
    parent = "<none>"
    if ref is not None:
        group_resource = ref.get("resource", "") + (f".{ref['group']}" if ref.get("group") else "")
        parent = group_resource.lower() + (f"/{ref['namespace']}" if ref.get("namespace") else "")
        parent += "/" + ref.get("name", "")
    return [name(ip), parent, age(ip, now_us)]
