"""Printers for core/v1 kinds other than pods: nodes, events, namespaces, config maps, secrets,
service accounts and services.

Ports of printNode, printEvent, printNamespace, printConfigMap, printSecret,
printServiceAccount and printService in
kubernetes/pkg/printers/internalversion/printers.go. kube-apiserver always
generates the wide cells (GenerateOptions{Wide: true}); kubectl hides the
priority-1 columns unless asked for ``-o wide``.
"""
from __future__ import annotations

from .cells import age, format_labels, name, since, time_of
from .columns import CORE, age_column, column, doc, name_column

_NODE_ROLE_PREFIX = "node-role.kubernetes.io/"
_NODE_ROLE_LABEL = "kubernetes.io/role"


# --- nodes -------------------------------------------------------------------
def node_columns() -> list[dict]:
    info, status = CORE + "NodeSystemInfo", CORE + "NodeStatus"
    return [name_column(), column("Status", description="The status of the node"),
            column("Roles", description="The roles of the node"), age_column(),
            column("Version", description=doc(info, "kubeletVersion")),
            column("Internal-IP", description=doc(status, "addresses"), priority=1),
            column("External-IP", description=doc(status, "addresses"), priority=1),
            column("OS-Image", description=doc(info, "osImage"), priority=1),
            column("Kernel-Version", description=doc(info, "kernelVersion"), priority=1),
            column("Container-Runtime", description=doc(info, "containerRuntimeVersion"), priority=1)]


def _node_roles(labels: dict) -> str:
    """findNodeRoles: ``node-role.kubernetes.io/<role>`` keys and ``kubernetes.io/role`` values, sorted."""
    roles = set()
    for key, value in labels.items():
        if key.startswith(_NODE_ROLE_PREFIX) and key[len(_NODE_ROLE_PREFIX):]:
            roles.add(key[len(_NODE_ROLE_PREFIX):])
        elif key == _NODE_ROLE_LABEL and value:
            roles.add(value)
    return ",".join(sorted(roles)) or "<none>"


def _address(node: dict, type_: str) -> str:
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") == type_:
            return address.get("address", "")
    return "<none>"


def node_cells(node: dict, now_us: int) -> list:
    status = node.get("status") or {}
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    states = []
    if "Ready" in conditions:
        states.append("Ready" if conditions["Ready"].get("status") == "True" else "NotReady")
    states = states or ["Unknown"]
    if (node.get("spec") or {}).get("unschedulable"):
        states.append("SchedulingDisabled")
    info = status.get("nodeInfo") or {}
    kernel = info.get("kernelVersion") or "<unknown>"
    if info.get("architecture"):
        kernel += f" ({info['architecture']})"
    return [name(node), ",".join(states), _node_roles((node.get("metadata") or {}).get("labels") or {}),
            age(node, now_us), info.get("kubeletVersion", ""), _address(node, "InternalIP"),
            _address(node, "ExternalIP"), info.get("osImage") or "<unknown>", kernel,
            info.get("containerRuntimeVersion") or "<unknown>"]


# --- events ------------------------------------------------------------------
def event_columns() -> list[dict]:
    event = CORE + "Event"
    return [column("Last Seen", description=doc(event, "lastTimestamp")),
            column("Type", description=doc(event, "type")),
            column("Reason", description=doc(event, "reason")),
            column("Object", description=doc(event, "involvedObject")),
            column("Subobject", description=doc(CORE + "ObjectReference", "fieldPath"), priority=1),
            column("Source", description=doc(event, "source"), priority=1),
            column("Message", description=doc(event, "message")),
            column("First Seen", description=doc(event, "firstTimestamp"), priority=1),
            column("Count", description=doc(event, "count"), priority=1),
            name_column(priority=1)]


def _as_core_event(event: dict) -> dict:
    """An events.k8s.io/v1 Event in core/v1 field names (Convert_v1_Event_To_core_Event)."""
    if not str(event.get("apiVersion", "")).startswith("events.k8s.io/"):
        return event
    return {**event, "involvedObject": event.get("regarding") or {}, "message": event.get("note", ""),
            "count": event.get("deprecatedCount", 0), "source": event.get("deprecatedSource") or {},
            "firstTimestamp": event.get("deprecatedFirstTimestamp"),
            "lastTimestamp": event.get("deprecatedLastTimestamp"),
            "reportingComponent": event.get("reportingController", "")}


def event_cells(event: dict, now_us: int) -> list:
    event = _as_core_event(event)
    first = since(event.get("firstTimestamp"), now_us)
    if time_of(event.get("firstTimestamp")) is None:
        first = since(event.get("eventTime"), now_us)
    last = since(event.get("lastTimestamp"), now_us)
    if time_of(event.get("lastTimestamp")) is None:
        last = first
    count = event.get("count") or 0
    series = event.get("series")
    if series is not None:
        last, count = since(series.get("lastObservedTime"), now_us), series.get("count", 0)
    elif count == 0:
        count = 1  # singleton events don't have a count set in the new API
    involved = event.get("involvedObject") or {}
    target = str(involved.get("kind", "")).lower()
    if involved.get("name"):
        target += "/" + involved["name"]
    source = event.get("source") or {}
    component = source.get("component") or event.get("reportingComponent", "")
    instance = source.get("host") or event.get("reportingInstance", "")
    return [last, event.get("type", ""), event.get("reason", ""), target, involved.get("fieldPath", ""),
            f"{component}, {instance}" if instance else component, str(event.get("message", "")).strip(),
            first, count, name(event)]


# --- namespaces, config maps, secrets, service accounts ---------------------------
def namespace_columns() -> list[dict]:
    return [name_column(), column("Status", description="The status of the namespace"), age_column()]


def namespace_cells(ns: dict, now_us: int) -> list:
    return [name(ns), (ns.get("status") or {}).get("phase", ""), age(ns, now_us)]


def configmap_columns() -> list[dict]:
    return [name_column(), column("Data", description=doc(CORE + "ConfigMap", "data")), age_column()]


def configmap_cells(cm: dict, now_us: int) -> list:
    return [name(cm), len(cm.get("data") or {}) + len(cm.get("binaryData") or {}), age(cm, now_us)]


def secret_columns() -> list[dict]:
    secret = CORE + "Secret"
    return [name_column(), column("Type", description=doc(secret, "type")),
            column("Data", description=doc(secret, "data")), age_column()]


def secret_cells(secret: dict, now_us: int) -> list:
    # stringData is merged into data by the v1 -> internal conversion the printer sees.
    keys = set(secret.get("data") or {}) | set(secret.get("stringData") or {})
    return [name(secret), secret.get("type", ""), len(keys), age(secret, now_us)]


def serviceaccount_columns() -> list[dict]:
    # v1.37 prints no Secrets column: the legacy token Secrets it counted are no longer made.
    return [name_column(), age_column()]


def serviceaccount_cells(sa: dict, now_us: int) -> list:
    return [name(sa), age(sa, now_us)]


# --- services ------------------------------------------------------------------
def service_columns() -> list[dict]:
    spec = CORE + "ServiceSpec"
    return [name_column(), column("Type", description=doc(spec, "type")),
            column("Cluster-IP", description=doc(spec, "clusterIP")),
            column("External-IP", description=doc(spec, "externalIPs")),
            column("Port(s)", description=doc(spec, "ports")), age_column(),
            column("Selector", description=doc(spec, "selector"), priority=1)]


def _load_balancer_ingress(status: dict) -> str:
    """loadBalancerStatusStringer with wide=true (the server always prints wide)."""
    found = set()
    for ingress in (status.get("loadBalancer") or {}).get("ingress") or []:
        if ingress.get("ip"):
            found.add(ingress["ip"])
        elif ingress.get("hostname"):
            found.add(ingress["hostname"])
    return ",".join(sorted(found))


def _external_ip(svc: dict) -> str:
    """getServiceExternalIP."""
    spec = svc.get("spec") or {}
    external = spec.get("externalIPs") or []
    kind = spec.get("type")
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if kind == "LoadBalancer":
        ingress = _load_balancer_ingress(svc.get("status") or {})
        if external:
            return ",".join((ingress.split(",") if ingress else []) + external)
        return ingress or "<pending>"
    if kind == "ExternalName":
        return spec.get("externalName", "")
    return "<unknown>"


def _ports(ports: list) -> str:
    """makePortString."""
    pieces = []
    for port in ports:
        node_port = f":{port['nodePort']}" if port.get("nodePort", 0) > 0 else ""
        pieces.append(f"{port.get('port', 0)}{node_port}/{port.get('protocol', '')}")
    return ",".join(pieces)


def service_cells(svc: dict, now_us: int) -> list:
    spec = svc.get("spec") or {}
    cluster_ips = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
    return [name(svc), spec.get("type", ""), cluster_ips[0] if cluster_ips else "<none>", _external_ip(svc),
            _ports(spec.get("ports") or []) or "<none>", age(svc, now_us), format_labels(spec.get("selector"))]
