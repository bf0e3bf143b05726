"""``pods/portforward``: connections from a client to ``localhost:PORT`` inside a pod's network namespace.

Three ways in, as upstream serves them:

* a WebSocket with ``SPDY/3.1+portforward.k8s.io`` (kubectl 1.37): the API server tunnels SPDY through
  the WebSocket (k8s.io/apiserver pkg/util/proxy/streamtunnel.go) to the kubelet's SPDY server;
* ``Upgrade: SPDY/3.1`` with ``X-Stream-Protocol-Version: portforward.k8s.io`` (kubectl's fallback);
* a WebSocket with ``v4.channel.k8s.io`` (the Python client's ``portforward``): the kubelet's WebSocket
  server (pkg/kubelet/cri/streaming/portforward/websocket.go), one data and one error channel per port of
  the ``ports`` query, each starting with the port as two little-endian bytes.

Over SPDY every forwarded connection is a pair of streams (``streamType: error`` and ``data``, the same
``requestID``); the kubelet (portforward/httpstream.go) forwards the data stream and, when the runtime
cannot connect, writes ``error forwarding port 81 to pod <sandbox>, uid : <containerd's error>`` on the
error stream (kubectl prints it and, since 1.31, ends with ``lost connection to pod``). What answers on
the port is the container's emulated server (kubelet/serving.py).
"""
from __future__ import annotations

import asyncio
import logging

from aiohttp import WSMsgType, web

from ..errors import bad_request
from ..kubelet.streaming import PodNotFound, PortForwardFailed, sandbox_id
from . import rawupgrade
from .channels import V4, V4_BASE64, Channels
from .spdy import SpdyConnection, SpdyStream
from .streaming import PlainError, assigned, is_spdy, is_websocket, negotiate_spdy, websocket_protocols

log = logging.getLogger("gpulab.apiserver")

TUNNEL_PROTOCOL = "SPDY/3.1+portforward.k8s.io"
SPDY_PROTOCOL = "portforward.k8s.io"


async def serve(api, request: web.Request, namespace: str, name: str) -> web.StreamResponse:
    pod = api.get("pods", name, namespace)
    assigned(pod)
    streams = api.node_streams
    if streams is None or not streams.has_pod(pod):
        raise PlainError(500, str(PodNotFound(pod)))
    if is_websocket(request):
        protocols = websocket_protocols(request)
        if any(p.startswith("SPDY/3.1+") and p.endswith(".k8s.io") for p in protocols):
            if TUNNEL_PROTOCOL not in protocols:
                raise PlainError(403, "unable to upgrade: unable to negotiate protocol")
            return await _tunnel(request, streams, pod)
        return await _channels(request, streams, pod, protocols)
    if is_spdy(request):
        negotiate_spdy(request, (SPDY_PROTOCOL,))
        return await _raw_spdy(request, streams, pod)
    raise bad_request("Upgrade request required")


# --- SPDY: pairs of streams --------------------------------------------------------------------------------------
class _Pairs:
    """The kubelet's httpStreamHandler: pairs error and data streams by requestID and forwards each pair."""

    def __init__(self, streams, pod: dict):
        self.node_streams, self.pod = streams, pod
        self._waiting: dict[str, SpdyStream] = {}
        self.tasks: set[asyncio.Task] = set()

    def on_stream(self, stream: SpdyStream) -> bool:
        port, kind = stream.header("port"), stream.header("streamType")
        if not port or not port.isdigit() or not 0 < int(port) < 65536 or kind not in ("error", "data"):
            return False
        request_id = stream.header("requestID") or str(stream.id if kind == "error" else stream.id - 2)
        other = self._waiting.pop(request_id, None)
        if other is None:
            self._waiting[request_id] = stream
            return True
        errors, data = (other, stream) if kind == "data" else (stream, other)
        task = asyncio.ensure_future(self._forward(int(port), data, errors))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return True

    async def _forward(self, port: int, data: SpdyStream, errors: SpdyStream) -> None:
        try:
            await _forward(self.node_streams, self.pod, port, data.read, data.write, errors.write)
        finally:
            await data.close()
            await errors.close()


async def _forward(node_streams, pod: dict, port: int, read, write, write_error) -> None:
    """One forwarded connection: the client's bytes to the container's server and its answers back."""
    try:
        conn = node_streams.connect(pod, port)
    except (PortForwardFailed, PodNotFound) as exc:
        await write_error(f"error forwarding port {port} to pod {sandbox_id(pod)}, uid : {exc}".encode())
        return
    while not conn.closed:
        chunk = await read()
        if chunk == b"":
            continue
        reply = conn.receive(chunk or b"")
        if reply:
            await write(reply)
        if chunk is None:
            break


async def _serve_spdy(conn: SpdyConnection, pairs: _Pairs) -> None:
    await conn.closed.wait()
    for task in list(pairs.tasks):
        task.cancel()


async def _tunnel(request: web.Request, node_streams, pod: dict) -> web.StreamResponse:
    ws = web.WebSocketResponse(protocols=(TUNNEL_PROTOCOL,), autoping=True, max_msg_size=0)
    await ws.prepare(request)
    pairs = _Pairs(node_streams, pod)

    async def send(data: bytes) -> None:
        await ws.send_bytes(data)

    conn = SpdyConnection(send, pairs.on_stream)
    serving = asyncio.ensure_future(_serve_spdy(conn, pairs))
    try:
        async for msg in ws:
            if msg.type != WSMsgType.BINARY:
                break
            conn.feed(msg.data)
    finally:
        conn.end()
        await serving
    return ws


async def _raw_spdy(request: web.Request, node_streams, pod: dict) -> web.StreamResponse:
    pairs = _Pairs(node_streams, pod)
    conn = SpdyConnection(rawupgrade.writer(request), pairs.on_stream)
    response = await rawupgrade.upgrade(request, {"Connection": "Upgrade", "Upgrade": "SPDY/3.1",
                                                  "X-Stream-Protocol-Version": SPDY_PROTOCOL}, conn.feed, conn.end)
    await _serve_spdy(conn, pairs)
    rawupgrade.close(request)
    return response


# --- WebSocket channels ------------------------------------------------------------------------------------------
def _ports(request: web.Request) -> list[int]:
    """NewV4Options: the ``ports`` query (the API server passes it to the kubelet as ``port``)."""
    values = request.query.getall("ports", [])
    if not values:
        raise PlainError(400, 'query parameter "port" is required')
    ports = []
    for value in values:
        if not value:
            raise PlainError(400, 'query parameter "port" cannot be empty')
        for part in value.split(","):
            if not part.isdigit() or int(part) > 65535:
                raise PlainError(400, f'unable to parse "{value}" as a port: strconv.ParseUint: parsing '
                                      f'"{part}": invalid syntax')
            if int(part) < 1:
                raise PlainError(400, f'port "{value}" must be > 0')
            ports.append(int(part))
    return ports


async def _channels(request: web.Request, node_streams, pod: dict, protocols: list[str]) -> web.StreamResponse:
    chosen = next((p for p in protocols if p in ("", V4, V4_BASE64)), None) if protocols else ""
    if chosen is None:
        raise PlainError(403, f"requested protocol(s) are not supported: {protocols}; supports "
                              f"{['', V4, V4_BASE64]}")
    ports = _ports(request)
    ws = web.WebSocketResponse(protocols=(chosen,) if chosen else (), autoping=True, max_msg_size=0)
    await ws.prepare(request)
    channels = Channels(ws, chosen)
    inboxes = [asyncio.Queue() for _ in ports]
    for i, port in enumerate(ports):
        await channels.send(2 * i, port.to_bytes(2, "little"))
        await channels.send(2 * i + 1, port.to_bytes(2, "little"))

    def forwarder(i: int, port: int):
        async def write(data: bytes) -> None:
            await channels.send(2 * i, data)

        async def write_error(data: bytes) -> None:
            await channels.send(2 * i + 1, data)
        return _forward(node_streams, pod, port, inboxes[i].get, write, write_error)

    async def client() -> None:
        async for channel, data in channels.receive():
            if data is not None and channel % 2 == 0 and channel // 2 < len(ports):
                inboxes[channel // 2].put_nowait(data)
        for inbox in inboxes:
            inbox.put_nowait(None)

    reader = asyncio.ensure_future(client())
    try:
        await asyncio.gather(*(forwarder(i, port) for i, port in enumerate(ports)))
        await ws.close()      # every forward ended: the kubelet closes the connection
    finally:
        reader.cancel()
    return ws
