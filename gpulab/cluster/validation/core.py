"""Core/v1 kinds other than pods: nodes, namespaces, config maps, secrets, service accounts, services, events.

Ports of pkg/apis/core/validation/validation.go (ValidateNode,
ValidateNodeUpdate, ValidateNamespace*, ValidateConfigMap*, ValidateSecret*,
ValidateServiceAccount*, ValidateService, ValidateServiceUpdate) and
pkg/apis/core/validation/events.go (legacyValidateEvent). Each function
returns the errors of the kind's registry strategy, in upstream order.
"""
from __future__ import annotations

import base64
import binascii
import ipaddress

import orjson

from ..errors import FieldError
from .containers import validate_port_num_or_name
from .field import duplicate, forbidden, immutable, invalid, not_supported, required, too_long
from .formats import (is_config_map_key, is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_port_num,
                      name_is_dns1035_label, name_is_dns_label, name_is_dns_subdomain)
from .labels import validate_labels
from .meta import METADATA, validate_object_meta, validate_object_meta_update
from .path import Path
from .resources import validate_resource_quantity_value
from .scheduling import validate_node_taints

MAX_SECRET_SIZE = 1024 * 1024
_SERVICE_TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
IP_FAMILY_POLICIES = ["PreferDualStack", "RequireDualStack", "SingleStack"]
IP_FAMILIES = ["IPv4", "IPv6"]
_PROTOCOLS = ["SCTP", "TCP", "UDP"]


# --- nodes ---------------------------------------------------------------------------------------------
def _node_resources(node: dict) -> list[FieldError]:
    """ValidateNodeResources: paths are NewPath("status", "capacity", name), dots and all."""
    status = node.get("status") or {}
    errs: list[FieldError] = []
    for section in ("capacity", "allocatable"):
        values = status.get(section) or {}
        for name in sorted(values):
            errs.extend(validate_resource_quantity_value(name, values[name], Path("status").child(section, name)))
    return errs


def validate_node(node: dict) -> list[FieldError]:
    meta, spec = node.get("metadata") or {}, node.get("spec") or {}
    errs = validate_object_meta(meta, False, name_is_dns_subdomain)
    if spec.get("taints"):
        # Upstream hangs the taints off the metadata path: "metadata.taints[0].effect".
        errs.extend(validate_node_taints(spec["taints"], METADATA.child("taints")))
    errs.extend(_node_resources(node))
    cidrs = spec.get("podCIDRs") or []
    for i, cidr in enumerate(cidrs):
        try:
            ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            errs.append(invalid(Path("spec").child("podCIDRs").index(i), cidr,
                                "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
    return errs


def validate_node_update(new: dict, old: dict) -> list[FieldError]:
    """ValidateNodeUpdate (the status subresource runs this alone)."""
    nspec, ospec = new.get("spec") or {}, old.get("spec") or {}
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    errs.extend(_node_resources(new))
    seen: list[dict] = []
    for i, address in enumerate((new.get("status") or {}).get("addresses") or []):
        if address in seen:
            errs.append(duplicate(Path("status").child("addresses").index(i),
                                  {"Type": address.get("type", ""), "Address": address.get("address", "")}))
        seen.append(address)
    old_cidrs, new_cidrs = ospec.get("podCIDRs") or [], nspec.get("podCIDRs") or []
    if old_cidrs:
        changed = len(old_cidrs) != len(new_cidrs)
        msg = 'node updates may not change podCIDR except from "" to valid'
        if changed:
            errs.append(forbidden(Path("spec").child("podCIDRs"), msg))
        else:
            errs.extend(forbidden(Path("spec").child("podCIDRs"), msg) for o, n in zip(old_cidrs, new_cidrs) if o != n)
    if ospec.get("providerID") and ospec.get("providerID") != nspec.get("providerID"):
        errs.append(forbidden(Path("spec").child("providerID"),
                              'node updates may not change providerID except from "" to valid'))
    if nspec.get("taints"):
        errs.extend(validate_node_taints(nspec["taints"], METADATA.child("taints")))
    if nspec.get("externalID") != ospec.get("externalID"):
        errs.append(forbidden(Path("spec").child("externalID"), "may not be updated"))
    return errs


# --- namespaces ----------------------------------------------------------------------------------------
def _namespace_finalizers(namespace: dict, path: Path, indexed: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, name in enumerate((namespace.get("spec") or {}).get("finalizers") or []):
        p = path.index(i) if indexed else path
        errs.extend(invalid(p, name, m) for m in is_qualified_name(name))
        if "/" not in name and name not in ("kubernetes", "orphan", "foregroundDeletion"):
            errs.append(invalid(p, name, "name is neither a standard finalizer name nor is it fully qualified"))
    return errs


def validate_namespace(ns: dict) -> list[FieldError]:
    errs = validate_object_meta(ns.get("metadata") or {}, False, name_is_dns_label)
    return errs + _namespace_finalizers(ns, Path("spec").child("finalizers"), indexed=False)


def validate_namespace_status_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    phase = (new.get("status") or {}).get("phase", "")
    if not (new.get("metadata") or {}).get("deletionTimestamp"):
        if phase != "Active":
            errs.append(invalid(Path("status").child("Phase"), phase,
                                "may only be 'Active' if `deletionTimestamp` is empty"))
    elif phase != "Terminating":
        errs.append(invalid(Path("status").child("Phase"), phase,
                            "may only be 'Terminating' if `deletionTimestamp` is not empty"))
    return errs


def validate_namespace_finalize_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    return errs + _namespace_finalizers(new, Path("spec").child("finalizers"), indexed=True)


# --- config maps and secrets ---------------------------------------------------------------------------
def validate_config_map(cm: dict) -> list[FieldError]:
    errs = validate_object_meta(cm.get("metadata") or {}, True, name_is_dns_subdomain)
    data, binary = cm.get("data") or {}, cm.get("binaryData") or {}
    total = 0
    for key in sorted(data):
        errs.extend(invalid(Path("data").key(key), key, m) for m in is_config_map_key(key))
        if key in binary:
            errs.append(invalid(Path("data").key(key), key, "duplicate of key present in binaryData"))
        total += len(str(data[key]).encode())
    for key in sorted(binary):
        errs.extend(invalid(Path("binaryData").key(key), key, m) for m in is_config_map_key(key))
        total += len(_decoded(binary[key]))
    if total > MAX_SECRET_SIZE:
        errs.append(too_long(Path(""), MAX_SECRET_SIZE))
    return errs


def _immutable_data(new: dict, old: dict, fields: tuple[str, ...]) -> list[FieldError]:
    if old.get("immutable") is not True:
        return []
    errs = []
    if new.get("immutable") is not True:
        errs.append(forbidden(Path("immutable"), "field is immutable when `immutable` is set"))
    errs.extend(forbidden(Path(f), "field is immutable when `immutable` is set")
                for f in fields if (new.get(f) or {}) != (old.get(f) or {}))
    return errs


def validate_config_map_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    return errs + _immutable_data(new, old, ("data", "binaryData")) + validate_config_map(new)


def _decoded(value) -> bytes:
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError):
        return str(value).encode()


def validate_secret(secret: dict) -> list[FieldError]:
    meta = secret.get("metadata") or {}
    errs = validate_object_meta(meta, True, name_is_dns_subdomain)
    data = secret.get("data") or {}
    data_path = Path("data")
    total = 0
    for key in sorted(data):
        errs.extend(invalid(data_path.key(key), key, m) for m in is_config_map_key(key))
        total += len(_decoded(data[key]))
    if total > MAX_SECRET_SIZE:
        errs.append(too_long(data_path, MAX_SECRET_SIZE))
    kind = secret.get("type") or ""
    if kind == "kubernetes.io/service-account-token":
        if not (meta.get("annotations") or {}).get("kubernetes.io/service-account.name"):
            errs.append(required(METADATA.child("annotations").key("kubernetes.io/service-account.name")))
    elif kind in ("kubernetes.io/dockercfg", "kubernetes.io/dockerconfigjson"):
        key = ".dockercfg" if kind == "kubernetes.io/dockercfg" else ".dockerconfigjson"
        if key not in data:
            errs.append(required(data_path.key(key)))
        else:
            try:
                if not isinstance(orjson.loads(_decoded(data[key])), dict):
                    raise ValueError
            except ValueError as exc:
                errs.append(invalid(data_path.key(key), "<secret contents redacted>", str(exc)))
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            errs.extend([required(data_path.key("username")), required(data_path.key("password"))])
    elif kind == "kubernetes.io/ssh-auth":
        if not data.get("ssh-privatekey"):
            errs.append(required(data_path.key("ssh-privatekey")))
    elif kind == "kubernetes.io/tls":
        errs.extend(required(data_path.key(k)) for k in ("tls.crt", "tls.key") if k not in data)
    return errs


def validate_secret_update(new: dict, old: dict) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    errs.extend(immutable(Path("type"), new.get("type", ""), old.get("type", "")))
    return errs + _immutable_data(new, old, ("data",)) + validate_secret(new)


def validate_service_account(sa: dict) -> list[FieldError]:
    return validate_object_meta(sa.get("metadata") or {}, True, name_is_dns_subdomain)


# --- services ------------------------------------------------------------------------------------------
def _is_headless(spec: dict) -> bool:
    return (spec.get("clusterIPs") or [None])[0] == "None" or spec.get("clusterIP") == "None"


def _go_service_port(protocol: str, port: int) -> dict:
    """The internal core.ServicePort key upstream reports for a duplicate (only Protocol and Port set)."""
    return {"Name": "", "Protocol": protocol, "AppProtocol": None, "Port": port, "TargetPort": 0, "NodePort": 0}


def _service_port(sp: dict, require_name: bool, names: set[str], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    name = sp.get("name") or ""
    if require_name and not name:
        errs.append(required(path.child("name")))
    elif name:
        errs.extend(invalid(path.child("name"), name, m) for m in is_dns1123_label(name))
        if name in names:
            errs.append(duplicate(path.child("name"), name))
        else:
            names.add(name)
    port = int(sp.get("port") or 0)
    errs.extend(invalid(path.child("port"), port, m) for m in is_valid_port_num(port))
    protocol = sp.get("protocol") or ""
    if not protocol:
        errs.append(required(path.child("protocol")))
    elif protocol not in _PROTOCOLS:
        errs.append(not_supported(path.child("protocol"), protocol, _PROTOCOLS))
    errs.extend(validate_port_num_or_name(sp.get("targetPort", 0), path.child("targetPort")))
    if sp.get("appProtocol") is not None:
        errs.extend(invalid(path.child("appProtocol"), sp["appProtocol"], m)
                    for m in is_qualified_name(sp["appProtocol"]))
    return errs


def _cluster_ips_related_fields(spec: dict) -> list[FieldError]:
    """ValidateServiceClusterIPsRelatedFields: clusterIP and clusterIPs agree, known policy and families."""
    if spec.get("type") == "ExternalName":
        return []
    path = Path("spec")
    errs: list[FieldError] = []
    ips = spec.get("clusterIPs") or []
    if spec.get("clusterIP"):
        if not ips:
            errs.append(required(path.child("clusterIPs")))
        elif ips[0] != spec["clusterIP"]:
            errs.append(invalid(path.child("clusterIPs"), ips, "first value must match `clusterIP`"))
    elif ips:
        errs.append(invalid(path.child("clusterIPs"), ips, "must be empty when `clusterIP` is not specified"))
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in IP_FAMILY_POLICIES:
        errs.append(not_supported(path.child("ipFamilyPolicy"), policy, IP_FAMILY_POLICIES))
    families = spec.get("ipFamilies") or []
    for i, family in enumerate(families):
        if family not in IP_FAMILIES:
            errs.append(not_supported(path.child("ipFamilies").index(i), family, IP_FAMILIES))
    return errs


def validate_service(svc: dict) -> list[FieldError]:
    """ValidateService (the families of a single-stack IPv4 cluster: kind's default)."""
    spec = svc.get("spec") or {}
    spec_path = Path("spec")
    errs = validate_object_meta(svc.get("metadata") or {}, True, name_is_dns1035_label)
    kind = spec.get("type") or ""
    ports = spec.get("ports") or []
    if not ports and not _is_headless(spec) and kind != "ExternalName":
        errs.append(required(spec_path.child("ports")))
    if kind in ("LoadBalancer", "NodePort") and _is_headless(spec):
        errs.append(invalid(spec_path.child("clusterIPs").index(0), "None",
                            f"may not be set to 'None' for {kind} services"))
    if kind == "ExternalName":
        for field in ("clusterIPs", "ipFamilies", "ipFamilyPolicy"):
            if spec.get(field):
                errs.append(forbidden(spec_path.child(field), "may not be set for ExternalName services"))
        cname = (spec.get("externalName") or "").removesuffix(".")
        if cname:
            errs.extend(invalid(spec_path.child("externalName"), cname, m) for m in is_dns1123_subdomain(cname))
        else:
            errs.append(required(spec_path.child("externalName")))
    names: set[str] = set()
    for i, sp in enumerate(ports):
        errs.extend(_service_port(sp, len(ports) > 1, names, spec_path.child("ports").index(i)))
    if spec.get("selector") is not None:
        errs.extend(validate_labels(spec["selector"], spec_path.child("selector")))
    affinity = spec.get("sessionAffinity") or ""
    if not affinity:
        errs.append(required(spec_path.child("sessionAffinity")))
    elif affinity not in ("ClientIP", "None"):
        errs.append(not_supported(spec_path.child("sessionAffinity"), affinity, ["ClientIP", "None"]))
    if affinity == "None" and spec.get("sessionAffinityConfig") is not None:
        errs.append(forbidden(spec_path.child("sessionAffinityConfig"),
                              "must not be set when session affinity is None"))
    if not kind:
        errs.append(required(spec_path.child("type")))
    elif kind not in _SERVICE_TYPES:
        errs.append(not_supported(spec_path.child("type"), kind, _SERVICE_TYPES))
    if kind == "ClusterIP":
        errs.extend(forbidden(spec_path.child("ports").index(i).child("nodePort"),
                              "may not be used when `type` is 'ClusterIP'") for i, sp in enumerate(ports)
                    if sp.get("nodePort"))
    node_ports: set[tuple] = set()
    for i, sp in enumerate(ports):
        if sp.get("nodePort"):
            key = (sp.get("protocol"), sp["nodePort"])
            if key in node_ports:
                errs.append(duplicate(spec_path.child("ports").index(i).child("nodePort"), sp["nodePort"]))
            node_ports.add(key)
    seen: set[tuple] = set()
    for i, sp in enumerate(ports):
        key = (sp.get("protocol", ""), int(sp.get("port") or 0))
        if key in seen:
            errs.append(duplicate(spec_path.child("ports").index(i), _go_service_port(*key)))
        seen.add(key)
    policy = spec.get("internalTrafficPolicy")
    if policy is None and kind in ("NodePort", "LoadBalancer", "ClusterIP"):
        errs.append(required(spec_path.child("internalTrafficPolicy")))
    elif policy is not None and policy not in ("Cluster", "Local"):
        errs.append(not_supported(spec_path.child("internalTrafficPolicy"), policy, ["Cluster", "Local"]))
    return errs + _cluster_ips_related_fields(spec)


def _upgrade_downgrade(field: str, new: list, old: list, unset: str) -> list[FieldError]:
    """validateUpgradeDowngradeClusterIPs / IPFamilies: a secondary entry may come or go, the others stay."""
    path = Path("spec").child(field)
    if len(new) >= len(old):
        return [invalid(path.index(i), new, "may not change once set") for i, value in enumerate(old)
                if new[i] != value]
    if not new:
        return [invalid(path.index(0), new, unset)]
    return [invalid(path.index(0), new, "may not change once set")] if new[0] != old[0] else []


def validate_service_update(new: dict, old: dict) -> list[FieldError]:
    """ValidateServiceUpdate: the primary cluster IP and family never change (unless to or from ExternalName)."""
    errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    nspec, ospec = new.get("spec") or {}, old.get("spec") or {}
    if "ExternalName" not in (nspec.get("type"), ospec.get("type")):
        headless = (_is_headless(nspec), _is_headless(ospec))
        if headless != (True, True):
            errs += _upgrade_downgrade("clusterIPs", nspec.get("clusterIPs") or [], ospec.get("clusterIPs") or [],
                                       "primary clusterIP can not be unset")
        if headless == (False, False):  # a headless Service may change its families
            errs += _upgrade_downgrade("ipFamilies", nspec.get("ipFamilies") or [], ospec.get("ipFamilies") or [],
                                       "primary ipFamily can not be unset")
    return errs + validate_service(new)


# --- events --------------------------------------------------------------------------------------------
def validate_event(event: dict) -> list[FieldError]:
    """legacyValidateEvent: the only check core/v1 event writes get."""
    errs: list[FieldError] = []
    namespace = (event.get("metadata") or {}).get("namespace") or ""
    involved_ns = (event.get("involvedObject") or {}).get("namespace") or ""
    ns_path = Path("involvedObject").child("namespace")
    if not event.get("eventTime"):
        if not involved_ns:
            if namespace not in ("", "default"):
                errs.append(invalid(ns_path, involved_ns, "does not match event.namespace"))
        elif namespace != involved_ns:
            errs.append(invalid(ns_path, involved_ns, "does not match event.namespace"))
    else:
        if not involved_ns and namespace not in ("default", "kube-system"):
            errs.append(invalid(ns_path, involved_ns, "does not match event.namespace"))
        controller = event.get("reportingComponent") or ""
        if not controller:
            errs.append(required(Path("reportingController")))
        errs.extend(invalid(Path("reportingController"), controller, m) for m in is_qualified_name(controller))
        for field, limit in (("reportingInstance", 128), ("action", 128), ("reason", 128)):
            value = event.get(field) or ""
            if not value:
                errs.append(required(Path(field)))
            if len(value) > limit:
                errs.append(invalid(Path(field), "", f"can have at most {limit} characters"))
        if len(event.get("message") or "") > 1024:
            errs.append(invalid(Path("message"), "", "can have at most 1024 characters"))
    errs.extend(invalid(Path("namespace"), namespace, m) for m in is_dns1123_subdomain(namespace))
    return errs
