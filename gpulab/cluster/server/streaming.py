"""``pods/exec`` and ``pods/attach``: the protocols between a client and the node agent's sessions.

The API server checks the request first (pkg/registry/core/pod/strategy.go ``streamLocation``): the pod
(404), the container (``container foo is not valid for pod bar``, or ``a container name must be
specified for pod bar, choose one of: [a b]``), a node (``pod bar does not have a host assigned``) and an
upgrade (``Upgrade request required``). Then, by what the client asks for:

* a WebSocket with ``v5.channel.k8s.io`` (kubectl 1.37): the API server's own stream translator
  (k8s.io/apiserver pkg/util/proxy/streamtranslator.go and websocket.go): the upgrade succeeds, and any
  failure of the kubelet or the runtime arrives on the error channel as an InternalError Status
  (``Internal error occurred: unable to upgrade connection: container not found ("c")``); an exit code
  as ``NonZeroExitCode`` (kubectl prints ``command terminated with exit code N``); the end as ``Success``.
* a WebSocket with ``v4.channel.k8s.io`` or an older channel protocol (the Python client): proxied to the
  kubelet's WebSocket server (pkg/kubelet/cri/streaming/remotecommand/websocket.go): a container not
  running is the kubelet's ``500`` before the upgrade, exit codes carry containerd's message.
* ``Upgrade: SPDY/3.1`` (kubectl's fallback when the WebSocket upgrade fails): proxied to the kubelet's
  SPDY server (remotecommand/httpstream.go): one stream per standard stream, negotiated
  ``X-Stream-Protocol-Version`` v4 down to v1.

In all three, the session's first message is an empty one on the lowest writable channel, stdin's end
reaches the program (v5 CLOSE, SPDY FIN), the resize channel's ``{"Width":..,"Height":..}`` are read and
dropped (no emulated program draws a screen), and with a TTY stderr merges into stdout.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Awaitable, Callable

import orjson
from aiohttp import web

from ..errors import bad_request, internal
from ..kubelet.streaming import ContainerNotFound, ExecFailed, PodNotFound
from . import rawupgrade
from .channels import BASE64_CHANNEL, CHANNEL, ERROR, STDERR, STDIN, STDOUT, V4, V4_BASE64, V5, Channels
from .spdy import SpdyConnection, SpdyStream

log = logging.getLogger("gpulab.apiserver")

KUBELET_WEBSOCKET_PROTOCOLS = ("", CHANNEL, BASE64_CHANNEL, V4, V4_BASE64)
SPDY_PROTOCOLS = ("v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io")
STREAM_CREATION_TIMEOUT = 30.0
_SUCCESS = {"metadata": {}, "status": "Success"}


@dataclass
class StreamOptions:
    """PodExecOptions / PodAttachOptions from the query."""

    container: str
    command: list[str]
    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool


def parse_bool(query, name: str) -> bool:
    """Go's strconv.ParseBool, as the API server converts query parameters."""
    value = query.get(name)
    if value is None:
        return False
    if value in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if value in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise bad_request(f'strconv.ParseBool: parsing "{value}": invalid syntax')


def stream_options(query) -> StreamOptions:
    return StreamOptions(container=query.get("container", ""), command=query.getall("command", []),
                         stdin=parse_bool(query, "stdin"), stdout=parse_bool(query, "stdout"),
                         stderr=parse_bool(query, "stderr"), tty=parse_bool(query, "tty"))


def all_container_names(pod: dict) -> list[str]:
    spec = pod.get("spec") or {}
    return [c["name"] for key in ("initContainers", "containers", "ephemeralContainers") for c in spec.get(key) or ()]


def target_container(pod: dict, container: str) -> str:
    """validateContainer in pkg/registry/core/pod/strategy.go."""
    name = pod["metadata"]["name"]
    if not container:
        containers = (pod.get("spec") or {}).get("containers") or []
        if len(containers) == 1:
            return containers[0]["name"]
        if not containers:
            raise bad_request(f"a container name must be specified for pod {name}")
        raise bad_request(f"a container name must be specified for pod {name}, choose one of: "
                          f"[{' '.join(all_container_names(pod))}]")
    if container not in all_container_names(pod):
        raise bad_request(f"container {container} is not valid for pod {name}")
    return container


def assigned(pod: dict) -> None:
    """streamLocation and PortForwardLocation: a pod the scheduler has not placed has no kubelet to ask."""
    if not (pod.get("spec") or {}).get("nodeName"):
        raise bad_request(f"pod {pod['metadata']['name']} does not have a host assigned")


def is_websocket(request: web.Request) -> bool:
    return request.headers.get("Upgrade", "").lower() == "websocket" and \
        "upgrade" in request.headers.get("Connection", "").lower()


def is_spdy(request: web.Request) -> bool:
    return request.headers.get("Upgrade", "").lower() == "spdy/3.1" and \
        "upgrade" in request.headers.get("Connection", "").lower()


def websocket_protocols(request: web.Request) -> list[str]:
    return [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]


def negotiate_spdy(request: web.Request, server: tuple[str, ...]) -> str:
    """httpstream.Handshake: the first protocol of the client's that the server speaks."""
    client = [p.strip() for value in request.headers.getall("X-Stream-Protocol-Version", []) for p in value.split(",")]
    if not client:
        raise _plain(400, "unable to upgrade: X-Stream-Protocol-Version is required")
    for protocol in client:
        if protocol in server:
            return protocol
    raise _plain(403, f"unable to upgrade: unable to negotiate protocol: client supports [{' '.join(client)}], "
                      f"server accepts [{' '.join(server)}]")


class PlainError(web.HTTPException):
    """A plain-text error as the kubelet's Go handlers write it (http.Error), passed on by the API server's proxy."""

    def __init__(self, status: int, text: str):
        self.status_code = status
        super().__init__(text=text, content_type="text/plain")


_plain = PlainError


def exit_status(code: int, argv: list[str] | None, translated: bool) -> dict:
    """The error-channel Status of a program's end (exec: its exit code; attach: always Success)."""
    if code == 0 or argv is None:
        return _SUCCESS
    detail = (f"command terminated with exit code {code}" if translated
              else f"error executing command [{' '.join(argv)}], exit code {code}")
    return {"metadata": {}, "status": "Failure", "message": f"command terminated with non-zero exit code: {detail}",
            "reason": "NonZeroExitCode", "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}


def internal_status(message: str) -> dict:
    """apierrors.NewInternalError marshalled as the error channel carries it (no kind)."""
    status = internal(message).status()
    return {"metadata": {}, "status": "Failure", "message": status["message"], "reason": "InternalError",
            "details": status["details"], "code": 500}


class _Streams:
    """What a session writes to, whatever the protocol: stdout/stderr data and the final status."""

    def __init__(self, send: Callable[[int, bytes], Awaitable[None]], opts: StreamOptions, v4_status: bool):
        self.send, self.opts, self.v4_status = send, opts, v4_status

    async def output(self, session) -> None:
        while (item := await session.output.get()) is not None:
            fd, data = item
            if (fd == STDOUT and self.opts.stdout) or (fd == STDERR and self.opts.stderr and not self.opts.tty):
                await self.send(fd, data)

    async def status(self, status: dict) -> None:
        if self.v4_status:
            await self.send(ERROR, orjson.dumps(status))
        elif status.get("status") != "Success":       # v1-v3: the message as text, nothing on success
            await self.send(ERROR, status["message"].encode())

    async def hello(self) -> None:
        """The empty message on the lowest writable channel that tells the client the streams are up."""
        await self.send(STDOUT if self.opts.stdout else STDERR if self.opts.stderr else ERROR, b"")


async def _drive(session, streams: _Streams, client: Awaitable[None]) -> int | None:
    """Run the session while its output flows; the exit code, or None when the client went away first."""
    run = asyncio.ensure_future(session.run())
    pump = asyncio.ensure_future(streams.output(session))
    reader = asyncio.ensure_future(client)
    try:
        await asyncio.wait({run, reader}, return_when=asyncio.FIRST_COMPLETED)
        if not run.done():
            return None
        await pump
        return run.result()
    finally:
        for task in (run, pump, reader):
            if not task.done():
                task.cancel()
        if hasattr(session, "detach"):
            session.detach()


def _open(api, pod: dict, container: str, opts: StreamOptions, exec_: bool):
    streams = api.node_streams
    if streams is None:
        raise ContainerNotFound(container)
    if exec_:
        if not opts.command:
            raise ExecFailed("failed to exec in container: failed to start exec: process args must not be empty")
        return streams.exec(pod, container, opts.command, stdin=opts.stdin, tty=opts.tty)
    return streams.attach(pod, container, stdin=opts.stdin, tty=opts.tty)


# --- entry point ---------------------------------------------------------------------------------------------------
async def serve(api, request: web.Request, namespace: str, name: str, exec_: bool) -> web.StreamResponse:
    opts = stream_options(request.query)
    pod = api.get("pods", name, namespace)
    container = target_container(pod, opts.container)
    assigned(pod)
    if opts.tty:
        opts.stderr = False
    if is_websocket(request):
        protocols = websocket_protocols(request)
        if V5 in protocols:
            return await _translated(api, request, pod, container, opts, exec_)
        return await _kubelet_websocket(api, request, pod, container, opts, exec_, protocols)
    if is_spdy(request):
        return await _kubelet_spdy(api, request, pod, container, opts, exec_)
    raise bad_request("Upgrade request required")


def _requires_a_stream(opts: StreamOptions) -> None:
    if not (opts.stdin or opts.stdout or opts.stderr):
        raise _plain(400, "you must specify at least 1 of stdin, stdout, stderr")


async def _websocket(request: web.Request, protocol: str) -> tuple[web.WebSocketResponse, Channels]:
    ws = web.WebSocketResponse(protocols=(protocol,) if protocol else (), autoping=True, max_msg_size=0)
    await ws.prepare(request)
    return ws, Channels(ws, protocol)


async def _client_input(channels: Channels, session) -> None:
    async for channel, data in channels.receive():
        if channel == STDIN:
            if data is None:
                session.close_stdin()
            else:
                session.write_stdin(data)
        # RESIZE: terminal sizes are read and dropped (no emulated program draws a screen)


async def _translated(api, request, pod, container, opts, exec_) -> web.StreamResponse:
    """The API server's own WebSocket server (v5), translating to the kubelet's streams."""
    ws, channels = await _websocket(request, V5)
    streams = _Streams(channels.send, opts, v4_status=True)
    await streams.hello()
    try:
        if not (opts.stdin or opts.stdout or opts.stderr):
            raise PlainError(400, "you must specify at least 1 of stdin, stdout, stderr")
        session = _open(api, pod, container, opts, exec_)
    except PlainError as exc:
        await _finish_websocket(ws, streams, internal_status(f"unable to upgrade connection: {exc.text}"))
        return ws
    except (ContainerNotFound, PodNotFound) as exc:
        await _finish_websocket(ws, streams, internal_status(f"unable to upgrade connection: {exc}"))
        return ws
    except ExecFailed as exc:
        await _finish_websocket(ws, streams, internal_status(
            f"Internal error occurred: error executing command in container: {exc}"))
        return ws
    code = await _drive(session, streams, _client_input(channels, session))
    if code is not None:
        await _finish_websocket(ws, streams, exit_status(code, opts.command if exec_ else None, translated=True))
    return ws


async def _finish_websocket(ws: web.WebSocketResponse, streams: _Streams, status: dict) -> None:
    """Write the status, send the close frame and wait for the client's (websocket.go ``finish``)."""
    try:
        await streams.status(status)
        await ws.close()
    except (ConnectionError, RuntimeError):
        pass


async def _kubelet_websocket(api, request, pod, container, opts, exec_, protocols) -> web.StreamResponse:
    """The kubelet's WebSocket server (v1-v4 channel protocols), reached through the API server's proxy."""
    chosen = next((p for p in protocols if p in KUBELET_WEBSOCKET_PROTOCOLS), None) if protocols else ""
    if chosen is None:
        raise _plain(403, f"requested protocol(s) are not supported: {protocols}; supports "
                          f"{list(KUBELET_WEBSOCKET_PROTOCOLS)}")
    _requires_a_stream(opts)
    session, failure = _kubelet_session(api, pod, container, opts, exec_)
    ws, channels = await _websocket(request, chosen)
    streams = _Streams(channels.send, opts, v4_status=chosen in (V4, V4_BASE64))
    await streams.hello()
    if failure is not None:
        await _finish_websocket(ws, streams, failure)
        return ws
    code = await _drive(session, streams, _client_input(channels, session))
    if code is not None:
        await _finish_websocket(ws, streams, exit_status(code, opts.command if exec_ else None, translated=False))
    return ws


def _kubelet_session(api, pod, container, opts, exec_):
    """The kubelet finds the container before it upgrades (500 when it is not running); the runtime's failure to
    start the program comes after, on the error stream."""
    try:
        return _open(api, pod, container, opts, exec_), None
    except (ContainerNotFound, PodNotFound) as exc:
        raise _plain(500, str(exc)) from None
    except ExecFailed as exc:
        return None, internal_status(f"error executing command in container: {exc}")


async def _kubelet_spdy(api, request, pod, container, opts, exec_) -> web.StreamResponse:
    """The kubelet's SPDY server: the client opens the error stream, then one per standard stream."""
    protocol = negotiate_spdy(request, SPDY_PROTOCOLS)
    _requires_a_stream(opts)
    session, failure = _kubelet_session(api, pod, container, opts, exec_)
    expected = 1 + opts.stdin + opts.stdout + opts.stderr + (opts.tty and protocol != "v2.channel.k8s.io"
                                                             and protocol != "channel.k8s.io")
    by_type: dict[str, SpdyStream] = {}
    complete = asyncio.Event()

    def on_stream(stream: SpdyStream) -> bool:
        kind = stream.header("streamType") or ""
        if kind not in ("error", "stdin", "stdout", "stderr", "resize"):
            return False
        by_type[kind] = stream
        if len(by_type) >= expected:
            complete.set()
        return True

    conn = SpdyConnection(rawupgrade.writer(request), on_stream)
    response = await rawupgrade.upgrade(request, {"Connection": "Upgrade", "Upgrade": "SPDY/3.1",
                                                  "X-Stream-Protocol-Version": protocol}, conn.feed, conn.end)
    try:
        await asyncio.wait_for(complete.wait(), STREAM_CREATION_TIMEOUT)
    except asyncio.TimeoutError:
        log.warning("exec: timed out waiting for client to create streams")
        rawupgrade.close(request)
        return response
    channel_streams = {STDOUT: by_type.get("stdout"), STDERR: by_type.get("stderr"), ERROR: by_type["error"]}

    async def send(channel: int, data: bytes) -> None:
        stream = channel_streams.get(channel)
        if stream is not None and data:
            await stream.write(data)

    streams = _Streams(send, opts, v4_status=protocol == "v4.channel.k8s.io")
    if failure is not None:
        status = failure
    else:
        code = await _drive(session, streams, _spdy_input(by_type, session))
        status = None if code is None else exit_status(code, opts.command if exec_ else None, translated=False)
    if status is not None:
        await streams.status(status)
        for stream in by_type.values():
            await stream.close()
        await conn.goaway()
        try:
            await asyncio.wait_for(conn.closed.wait(), 5)
        except asyncio.TimeoutError:
            pass
    rawupgrade.close(request)
    return response


async def _spdy_input(by_type: dict[str, SpdyStream], session) -> None:
    async def stdin(stream: SpdyStream) -> None:
        while (data := await stream.read()) is not None:
            session.write_stdin(data)
        session.close_stdin()

    async def resize(stream: SpdyStream) -> None:      # read and dropped, as on the WebSocket
        while await stream.read() is not None:
            pass

    tasks = [stdin(by_type["stdin"])] if "stdin" in by_type else []
    if "resize" in by_type:
        tasks.append(resize(by_type["resize"]))
    conn_closed = by_type["error"].conn.closed.wait()
    await asyncio.gather(conn_closed, *tasks)

