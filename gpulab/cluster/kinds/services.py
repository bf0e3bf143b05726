"""Services: pkg/registry/core/service (strategy.go, storage/storage.go, storage/alloc.go).

The embedded cluster is single-stack IPv4 with kind's service CIDR
(10.96.0.0/16). On create the allocator fills the IP family fields
(initIPFamilyFields: ``SingleStack`` and ``[IPv4]``, a headless Service
without selector ``RequireDualStack`` and both families) and gives a Service
that needs one the lowest free cluster IP (upstream picks a random free one);
the status starts as the zero ServiceStatus, ``{"loadBalancer": {}}``; a NodePort or LoadBalancer Service's ports
get random free node ports (30000-32767) where they name none. A cluster IP the Service names itself must lie in
the range, be neither its network nor its broadcast address, and be free (storage/alloc.go ``allocIPs``,
ipallocator's MetaAllocator), or the create is a 422 on ``spec.clusterIPs``. On
update the values it allocated stay when a client leaves them out
(patchAllocatedValues) and ``clusterIP``/``clusterIPs`` are kept in step
(normalizeClusterIPs), so changing either is the validation error
``may not change once set``.
"""
from __future__ import annotations

import ipaddress
import random

from ..defaults import core as defaults
from ..errors import invalid_object
from ..printers import Printer
from ..printers import core as printers
from ..registry import ResourceType
from ..validation import core as validation
from ..validation.field import invalid
from ..validation.path import Path
from .strategy import PROXY_VERBS, Context, Strategy, Subresource

SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/16")  # kind's serviceSubnet, the upstream engine's range too
_FAMILIES = ("IPv4",)  # the families the cluster serves (--service-cluster-ip-range)
NODE_PORTS = (30000, 32767)  # --service-node-port-range
_random = random.SystemRandom()


class ServiceStrategy(Strategy):
    resource = ResourceType("", "v1", "services", "Service", True, short_names=("svc",), categories=("all",),
                            subresources=("status", "proxy"))
    subresources = {"proxy": Subresource(PROXY_VERBS, ("", "v1", "ServiceProxyOptions"), connect=True)}
    returns_deleted_object = True
    allow_create_on_update = True
    printer = Printer(printers.service_columns, printers.service_cells)

    def default(self, obj: dict) -> None:
        defaults.default_service(self.resource, obj)

    def prepare_for_create(self, obj: dict, ctx: Context) -> None:
        super().prepare_for_create(obj, ctx)
        spec = obj.setdefault("spec", {})
        if spec.get("clusterIP") and not spec.get("clusterIPs"):
            spec["clusterIPs"] = [spec["clusterIP"]]
        _init_ip_families(obj, None)
        if _needs_cluster_ip(spec) and spec.get("clusterIP") != "None" and not spec.get("clusterIP"):
            spec["clusterIP"] = _free_cluster_ip(ctx)
            spec["clusterIPs"] = [spec["clusterIP"]]
        elif _needs_cluster_ip(spec) and spec.get("clusterIP") not in (None, "", "None"):
            _allocate_requested_ip(obj, ctx)
        if spec.get("type") == "NodePort" or (spec.get("type") == "LoadBalancer"
                                              and spec.get("allocateLoadBalancerNodePorts") is not False):
            _allocate_node_ports(spec, ctx)
        obj["status"] = {"loadBalancer": {}}  # the zero ServiceStatus (LoadBalancerStatus is a struct)

    def prepare_for_update(self, new: dict, old: dict, subresource: str | None = None) -> dict:
        if subresource is None:
            _patch_allocated_values(new.setdefault("spec", {}), old.get("spec") or {})
            _normalize_cluster_ips(new["spec"], old.get("spec") or {})
            _init_ip_families(new, old)
        return super().prepare_for_update(new, old, subresource)

    def validate(self, obj: dict) -> list:
        return validation.validate_service(obj)

    def validate_update(self, new: dict, old: dict, subresource: str | None = None) -> list:
        if subresource == "status":
            return super().validate_update(new, old)
        return validation.validate_service_update(new, old)


def _needs_cluster_ip(spec: dict) -> bool:
    return spec.get("type") != "ExternalName"


def _free_cluster_ip(ctx: Context) -> str:
    used = {(s.get("spec") or {}).get("clusterIP") for s in ctx.list("services")}
    n = 1
    while (ip := f"10.96.{n // 254}.{n % 254 + 1}") in used:
        n += 1
    return ip


def _allocate_requested_ip(svc: dict, ctx: Context) -> None:
    """allocIPs for an IP the Service asks for: the MetaAllocator's errors, as ``failed to allocate IP <ip>: ...``."""
    spec = svc["spec"]
    ip = spec["clusterIP"]
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return  # validation refuses it
    # servicecidr.PrefixContainsIP leaves out the network and broadcast addresses: no allocator has them
    if address not in SERVICE_CIDR or address in (SERVICE_CIDR.network_address, SERVICE_CIDR.broadcast_address):
        why = "the provided network does not match the current range"
    elif any((s.get("spec") or {}).get("clusterIP") == ip for s in ctx.list("services")):
        why = "provided IP is already allocated"
    else:
        return
    _raise(svc, [invalid(Path("spec").child("clusterIPs"), spec.get("clusterIPs") or [ip],
                         f"failed to allocate IP {ip}: {why}")])


def _allocate_node_ports(spec: dict, ctx: Context) -> None:
    """The node port allocator (storage/alloc.go initNodePorts): each port without one gets a random free port of
    the node port range; a port number used by two protocols shares one node port."""
    used = {p.get("nodePort") for s in ctx.list("services") for p in (s.get("spec") or {}).get("ports") or []}
    used |= {p.get("nodePort") for p in spec.get("ports") or []}
    by_number: dict = {}
    for port in spec.get("ports") or []:
        if port.get("nodePort"):
            continue
        if port.get("port") not in by_number:
            free = [n for n in range(NODE_PORTS[0], NODE_PORTS[1] + 1) if n not in used]
            by_number[port.get("port")] = _random.choice(free)
            used.add(by_number[port.get("port")])
        port["nodePort"] = by_number[port.get("port")]


def _patch_allocated_values(spec: dict, old: dict) -> None:
    """patchAllocatedValues: what the allocator chose stays when a resubmitted manifest leaves it out."""
    if _needs_cluster_ip(spec) and _needs_cluster_ip(old):
        if not spec.get("clusterIP") and old.get("clusterIP"):
            spec["clusterIP"] = old["clusterIP"]
        if not spec.get("clusterIPs") and old.get("clusterIPs"):
            spec["clusterIPs"] = list(old["clusterIPs"])
    if spec.get("type") in ("NodePort", "LoadBalancer") and old.get("type") in ("NodePort", "LoadBalancer"):
        old_ports = {p.get("name", ""): p.get("nodePort") for p in old.get("ports") or []}
        used = {p.get("nodePort") for p in spec.get("ports") or [] if p.get("nodePort")}
        for port in spec.get("ports") or []:
            previous = old_ports.get(port.get("name", ""))
            if not port.get("nodePort") and previous and previous not in used:
                port["nodePort"] = previous


def _normalize_cluster_ips(spec: dict, old: dict) -> None:
    """normalizeClusterIPs on update: a client that changes only the singular field changes the list with it."""
    ip, ips = spec.get("clusterIP") or "", spec.get("clusterIPs") or []
    old_ip, old_ips = old.get("clusterIP") or "", old.get("clusterIPs") or []
    if old_ips and not ips and old_ip == ip:
        spec["clusterIPs"] = ips = list(old_ips)
    if old_ip != ip and ips == old_ips:
        if old_ip and not ip:
            spec.pop("clusterIPs", None)
        else:
            spec["clusterIPs"] = [ip]


def _init_ip_families(svc: dict, old_svc: dict | None) -> None:
    """initIPFamilyFields of a single-stack IPv4 cluster; raises the 422 its pre-validation gives."""
    spec = svc["spec"]
    if spec.get("type") == "ExternalName":
        return
    old = (old_svc or {}).get("spec") or {}
    headless_without_selector = spec.get("clusterIP") == "None" and not spec.get("selector")
    if spec.get("ipFamilyPolicy") is None:
        if old.get("ipFamilyPolicy"):
            spec["ipFamilyPolicy"] = old["ipFamilyPolicy"]
        else:
            spec["ipFamilyPolicy"] = "RequireDualStack" if headless_without_selector else "SingleStack"
    families = list(spec.get("ipFamilies") or [])
    errs = []
    for i, ip in enumerate(spec.get("clusterIPs") or []):
        if ip == "None":
            break
        if i >= len(families):
            family = _family_of(ip)
            if family in _FAMILIES:
                families.append(family)
            elif family:
                errs.append(invalid(Path("spec").child("clusterIPs").index(i), spec["clusterIPs"],
                                    f"{family} is not configured on this cluster"))
    if headless_without_selector:
        families = families or ["IPv4"]
        if len(families) < 2 and spec["ipFamilyPolicy"] != "SingleStack":
            families.append("IPv6" if families[0] == "IPv4" else "IPv4")
        spec["ipFamilies"] = families
        _raise(svc, errs)
        return
    if spec["ipFamilyPolicy"] == "RequireDualStack":
        errs.append(invalid(Path("spec").child("ipFamilyPolicy"), spec["ipFamilyPolicy"],
                            "this cluster is not configured for dual-stack services"))
    errs += [invalid(Path("spec").child("ipFamilies").index(i), family, "not configured on this cluster")
             for i, family in enumerate(families) if family not in _FAMILIES]
    _raise(svc, errs)
    spec["ipFamilies"] = families or ["IPv4"]


def _raise(svc: dict, errs: list) -> None:
    if errs:
        raise invalid_object("Service", "", (svc.get("metadata") or {}).get("name", ""), errs)


def _family_of(ip: str) -> str:
    try:
        return "IPv6" if ipaddress.ip_address(ip).version == 6 else "IPv4"
    except ValueError:
        return ""  # validation reports a malformed address

