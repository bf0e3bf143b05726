"""``pods/proxy``, ``services/proxy`` and ``nodes/proxy``: HTTP through the API server to a pod, a Service's
endpoint or a node's kubelet.

The name on the URL may carry a scheme and a port (utilnet.SplitSchemeNamePort: ``NAME``,
``NAME:PORT``, ``SCHEME:NAME:PORT``); the rest of the path after ``/proxy`` and the query go to the
target. As upstream resolves them:

* a pod (pkg/registry/core/pod/strategy.go ``ResourceLocation``): the given port, else the first
  declared container port; a pod without an IP is ``address not allowed``;
* a Service (pkg/registry/core/service/storage ``ResourceLocation``): a port number is turned into the
  Service port's name (``no service port 81 found for service "web"``), then a random ready endpoint
  serving that port is picked (``no endpoints available for service "web"``, 503). The endpoints are the
  ready pods the selector matches, with the target port resolved as the endpoints controller does
  (named target ports through the pod's container ports);
* a node: its kubelet on 10250 (kubelet/nodeserver.py).

A target that refuses the connection is ``error trying to reach service: dial tcp IP:PORT: connect:
connection refused`` (503, k8s.io/apimachinery pkg/util/proxy/transport.go). The HTML link rewriting of
upstream's proxy transport is not emulated.
"""
from __future__ import annotations

import ipaddress
import random

from aiohttp import web

from ..errors import ApiError, bad_request
from ..kubelet.serving import Request
from ..kubelet.streaming import ConnectionRefused

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade", "te", "trailer",
               "content-length"}
_NOT_FORWARDED = _HOP_BY_HOP | {"authorization", "host"}


def split_scheme_name_port(ident: str) -> tuple[str, str, str]:
    parts = ident.split(":")
    if len(parts) == 1:
        scheme, name, port = "", parts[0], ""
    elif len(parts) == 2:
        scheme, name, port = "", parts[0], parts[1]
    elif len(parts) == 3:
        scheme, name, port = parts
    else:
        raise ValueError(ident)
    if not name or scheme not in ("", "http", "https"):
        raise ValueError(ident)
    return scheme, name, port


def unavailable(message: str) -> ApiError:
    return ApiError(503, "ServiceUnavailable", message)


async def serve(api, request: web.Request, plural: str, namespace: str | None, ident: str) -> web.Response:
    try:
        scheme, name, port = split_scheme_name_port(ident)
    except ValueError:
        kind = {"pods": "pod", "services": "service", "nodes": "node"}[plural]
        raise bad_request(f'invalid {kind} request "{ident}"') from None
    tail = _tail(request.path, ident)
    forwarded = Request(request.method, tail + (f"?{request.query_string}" if request.query_string else ""),
                        [(k, v) for k, v in request.headers.items() if k.lower() not in _NOT_FORWARDED],
                        await request.read())
    streams = api.node_streams
    try:
        if plural == "nodes":
            node = api.get("nodes", name)
            response = _require(streams).node_http(node, int(port or 10250), forwarded)
        else:
            pod, target_port = (_pod_target(api, namespace, name, port) if plural == "pods"
                                else _service_target(api, namespace, name, port, ident))
            if scheme == "https":
                raise unavailable("error trying to reach service: tls: first record does not look like a TLS "
                                  "handshake")
            response = _require(streams).http(pod, target_port, forwarded)
    except ConnectionRefused as exc:
        raise unavailable(f"error trying to reach service: {exc}") from None
    return web.Response(status=response.status, body=response.body,
                        headers=[(k, v) for k, v in response.headers if k.lower() not in _HOP_BY_HOP])


def _require(streams):
    if streams is None:
        raise unavailable("error trying to reach service: no node agent is running")
    return streams


def _tail(path: str, ident: str) -> str:
    """What follows ``/NAME/proxy`` on the request path (``/`` when nothing does)."""
    marker = f"/{ident}/proxy"
    tail = path[path.index(marker) + len(marker):] if marker in path else ""
    return tail or "/"


def _pod_target(api, namespace: str, name: str, port: str) -> tuple[dict, int]:
    pod = api.get("pods", name, namespace)
    if not port:
        port = next((str(c["ports"][0]["containerPort"]) for c in (pod.get("spec") or {}).get("containers") or ()
                     if c.get("ports")), "")
    ip = (pod.get("status") or {}).get("podIP", "")
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        address = None
    if address is None or address.is_loopback or address.is_link_local or address.is_multicast or \
            address.is_unspecified:
        raise bad_request("address not allowed")
    return pod, int(port) if port.isdigit() else 80


def _service_target(api, namespace: str, name: str, port: str, ident: str) -> tuple[dict, int]:
    svc = api.get("services", name, namespace)
    ports = (svc.get("spec") or {}).get("ports") or []
    if port.isdigit():
        match = next((p for p in ports if int(p.get("port", 0)) == int(port)), None)
        if match is None:
            raise unavailable(f'no service port {int(port)} found for service "{name}"')
        port = match.get("name", "")
    backends = service_endpoints(api, svc)
    if not backends:
        raise unavailable(f'no endpoints available for service "{name}"')
    choices = [(pod, numbers[port]) for pod, numbers in backends if port in numbers]
    if not choices:
        raise unavailable(f'no endpoints available for service "{ident}"')
    return random.choice(choices)


def service_endpoints(api, svc: dict) -> list[tuple[dict, dict[str, int]]]:
    """The ready pods behind a Service and, for each, the Service port names mapped to the pod's port numbers
    (what the endpoints controller publishes as a subset's addresses and ports)."""
    spec = svc.get("spec") or {}
    selector = spec.get("selector") or {}
    if not selector:
        return []
    out = []
    for pod in api.list("pods", svc["metadata"].get("namespace")):
        status = pod.get("status") or {}
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ())
        labels = pod["metadata"].get("labels") or {}
        if any(labels.get(k) != v for k, v in selector.items()) or not status.get("podIP") or not ready \
                or pod["metadata"].get("deletionTimestamp"):
            continue
        numbers = {}
        for p in spec.get("ports") or ():
            target = _target_port(pod, p.get("targetPort", p.get("port")))
            if target is not None:
                numbers[p.get("name", "")] = target
        out.append((pod, numbers))
    return out


def _target_port(pod: dict, target) -> int | None:
    if isinstance(target, int) or (isinstance(target, str) and target.isdigit()):
        return int(target)
    for c in (pod.get("spec") or {}).get("containers") or ():
        for p in c.get("ports") or ():
            if p.get("name") == target:
                return int(p["containerPort"])
    return None

