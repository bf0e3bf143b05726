"""What an emulated container answers on the ports its programs listen on: HTTP, declared as data.

A program behaviour in data/images.yaml may list ``serves``: the ports it listens on once it is serving,
and what each answers. A port answers HTTP/1.1 from

* ``routes``: exact paths (or prefixes ending in ``*``) with a fixed ``body``, or a body made at request
  time by a named *content provider*, a callable the composition root registers with
  :func:`register_provider` (the GPU stack's exporters publish their metrics this way; this module knows
  nothing of what a provider computes);
* ``static``: files under a ``root`` directory, read from the container's own files first (a ConfigMap
  mounted over the root replaces the image's pages, as on a real node), else from the copies the image
  ships (``files``), with ``index`` for a directory;
* ``errorPages``: the bodies of the error responses (404 for a missing file, 405 for a method other than
  GET or HEAD), as the server program words them.

``headers`` go with every response (``Server``); ``${VAR}`` in header values and bodies is the
container's environment variable. Responses carry ``Date``, ``Content-Type``, ``Content-Length`` and
``Connection`` as an HTTP/1.1 server sends them. :class:`HttpConnection` runs one TCP connection
(``kubectl port-forward``) through h11; the API server's proxy subresources call :func:`respond` directly.
"""
from __future__ import annotations

import email.utils
import http
import mimetypes
import posixpath
import re
import time
from dataclasses import dataclass, field
from typing import Callable

import h11

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Route:
    path: str
    status: int = 200
    content_type: str = "text/plain; charset=utf-8"
    body: str = ""
    provider: str = ""

    def matches(self, path: str) -> bool:
        return path.startswith(self.path[:-1]) if self.path.endswith("*") else path == self.path


@dataclass(frozen=True)
class StaticFiles:
    root: str
    index: str = "index.html"
    files: tuple[tuple[str, str], ...] = ()     # (path under root, content) the image ships


@dataclass(frozen=True)
class HttpService:
    port: int
    headers: tuple[tuple[str, str], ...] = ()
    routes: tuple[Route, ...] = ()
    static: StaticFiles | None = None
    error_pages: tuple[tuple[int, str], ...] = ()
    access_log: str = ""       # a line written to the container's log per request (nginx's log_format)


def parse_serves(spec: list[dict] | None) -> tuple[HttpService, ...]:
    """The ``serves`` list of one behaviour in data/images.yaml."""
    services = []
    for entry in spec or ():
        static = entry.get("static")
        services.append(HttpService(
            port=int(entry["port"]),
            headers=tuple((k, str(v)) for k, v in (entry.get("headers") or {}).items()),
            routes=tuple(Route(path=r["path"], status=int(r.get("status", 200)),
                               content_type=r.get("contentType", "text/plain; charset=utf-8"),
                               body=r.get("body", ""), provider=r.get("provider", ""))
                         for r in entry.get("routes") or ()),
            static=StaticFiles(static["root"].rstrip("/"), static.get("index", "index.html"),
                               tuple((k, v) for k, v in (static.get("files") or {}).items())) if static else None,
            error_pages=tuple((int(k), v) for k, v in (entry.get("errorPages") or {}).items()),
            access_log=entry.get("accessLog", "")))
    return tuple(services)


# --- requests, responses and content providers ---------------------------------
@dataclass
class Request:
    method: str
    target: str                                  # path and query, as on the request line
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0] or "/"


@dataclass
class Response:
    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)


@dataclass(frozen=True)
class ServingContext:
    """What a content provider may know of the container answering: its pod, its name, its node and port."""

    pod: dict
    container: str
    node: str
    port: int
    env: dict[str, str]
    remote: str = "127.0.0.1"                     # the client's address as the server sees it
    log: Callable[[str], None] | None = None      # writes to the container's log


ContentProvider = Callable[[Request, ServingContext], "Response | str | bytes"]
_PROVIDERS: dict[str, ContentProvider] = {}


def register_provider(name: str, provider: ContentProvider) -> None:
    """Make ``provider`` answer the routes that name it (called by the composition root, e.g. gpulab.embedded)."""
    _PROVIDERS[name] = provider


def unregister_provider(name: str) -> None:
    _PROVIDERS.pop(name, None)


def respond(service: HttpService, request: Request, ctx: ServingContext, files) -> Response:
    """The response of ``service`` to ``request``; ``files`` is the container's file system (shell/world.py)."""
    env = ctx.env

    def expand(text: str) -> str:
        return _VAR.sub(lambda m: env.get(m.group(1), ""), text)

    response = _answer(service, request, ctx, files, expand)
    if service.access_log and ctx.log is not None:
        ctx.log(_access_line(service.access_log, request, response, ctx) + "\n")
    return response


def _answer(service: HttpService, request: Request, ctx: ServingContext, files, expand) -> Response:
    common = [(k, expand(v)) for k, v in service.headers]
    if request.method not in ("GET", "HEAD"):
        return _finish(_error(service, 405, expand), common, request)
    path = request.path
    for route in service.routes:
        if route.matches(path):
            if route.provider:
                return _finish(_provided(route, request, ctx), common, request)
            return _finish(Response(route.status, [("Content-Type", route.content_type)],
                                    expand(route.body).encode()), common, request)
    if service.static is not None:
        found = _static(service.static, path, files)
        if found is not None:
            name, text = found
            kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
            return _finish(Response(200, [("Content-Type", kind), ("Accept-Ranges", "bytes")], text.encode()),
                           common, request)
    return _finish(_error(service, 404, expand), common, request)


def _access_line(template: str, request: Request, response: Response, ctx: ServingContext) -> str:
    headers = {k.lower(): v for k, v in request.headers}
    values = {"remote_addr": ctx.remote, "time_local": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime()),
              "request": f"{request.method} {request.target} HTTP/1.1", "status": str(response.status),
              "body_bytes_sent": str(len(response.body)), "http_referer": headers.get("referer", "-"),
              "http_user_agent": headers.get("user-agent", "-")}
    return _VAR.sub(lambda m: values.get(m.group(1), "-"), template)


def _provided(route: Route, request: Request, ctx: ServingContext) -> Response:
    provider = _PROVIDERS.get(route.provider)
    if provider is None:
        return Response(503, [("Content-Type", "text/plain; charset=utf-8")], b"")
    result = provider(request, ctx)
    if isinstance(result, Response):
        return result
    body = result.encode() if isinstance(result, str) else bytes(result)
    return Response(route.status, [("Content-Type", route.content_type)], body)


def _static(static: StaticFiles, path: str, files) -> tuple[str, str] | None:
    full = posixpath.normpath(posixpath.join(static.root, path.lstrip("/")))
    if not (full == static.root or full.startswith(static.root + "/")):
        return None
    if path.endswith("/") or full == static.root or (files.read(full) is None and full in files.dirs):
        full = posixpath.join(full, static.index)
    text = files.read(full)
    if text is not None:
        return full, text
    shipped = dict(static.files).get(posixpath.relpath(full, static.root))
    return (full, shipped) if shipped is not None else None


def _error(service: HttpService, status: int, expand) -> Response:
    page = dict(service.error_pages).get(status)
    if page is None:
        return Response(status, [("Content-Type", "text/plain; charset=utf-8")],
                        f"{status} {http.HTTPStatus(status).phrase}\n".encode())
    return Response(status, [("Content-Type", "text/html")], expand(page).encode())


def _finish(response: Response, common: list[tuple[str, str]], request: Request) -> Response:
    headers = [*common, ("Date", email.utils.formatdate(usegmt=True)), *response.headers,
               ("Content-Length", str(len(response.body)))]
    keep_alive = next((v for k, v in request.headers if k.lower() == "connection"), "").lower() != "close"
    headers.append(("Connection", "keep-alive" if keep_alive else "close"))
    return Response(response.status, headers, b"" if request.method == "HEAD" else response.body)


# --- one TCP connection --------------------------------------------------------
class HttpConnection:
    """An HTTP/1.1 server on one connection: bytes from the client in, the server's bytes out."""

    def __init__(self, answer: Callable[[Request], Response]):
        self._answer = answer
        self._conn = h11.Connection(h11.SERVER)
        self._request: Request | None = None
        self.closed = False

    def receive(self, data: bytes) -> bytes:
        """Feed what the client sent (b"" for its end of input); return what the server writes back."""
        if self.closed:
            return b""
        out = bytearray()
        try:
            self._conn.receive_data(data)
            while not self.closed:
                event = self._conn.next_event()
                if event is h11.NEED_DATA or event is h11.PAUSED:
                    break
                if isinstance(event, h11.Request):
                    self._request = Request(event.method.decode(), event.target.decode(errors="replace"),
                                            [(k.decode(), v.decode(errors="replace")) for k, v in event.headers])
                elif isinstance(event, h11.Data) and self._request is not None:
                    self._request.body += event.data
                elif isinstance(event, h11.EndOfMessage) and self._request is not None:
                    out += self._send(self._answer(self._request))
                    self._request = None
                    if self._conn.our_state is h11.MUST_CLOSE or self._conn.their_state is h11.MUST_CLOSE:
                        self.closed = True
                    else:
                        self._conn.start_next_cycle()
                elif isinstance(event, h11.ConnectionClosed):
                    self.closed = True
        except h11.RemoteProtocolError:
            if self._conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                out += self._conn.send(h11.Response(status_code=400, reason=b"Bad Request",
                                                    headers=[("Content-Length", "0"), ("Connection", "close")]))
                out += self._conn.send(h11.EndOfMessage())
            self.closed = True
        return bytes(out)

    def _send(self, response: Response) -> bytes:
        head = self._conn.send(h11.Response(status_code=response.status, headers=response.headers,
                                            reason=http.HTTPStatus(response.status).phrase.encode()))
        body = self._conn.send(h11.Data(data=response.body)) if response.body else b""
        return head + body + self._conn.send(h11.EndOfMessage())
