"""The API server's TCP listener: what Go's net/http and crypto/tls do for kube-apiserver before any handler runs.

aiohttp's own site would accept connections and hand them to TLS straight away; kube-apiserver's server
(staging/src/k8s.io/apiserver/pkg/server/secure_serving.go, Go's net/http server.go) also

* answers plain HTTP sent to the HTTPS port with ``HTTP/1.0 400 Bad Request`` and ``Client sent an HTTP
  request to an HTTPS server.`` (tlsRecordHeaderLooksLikeHTTP: the first five bytes are ``GET /``,
  ``HEAD ``, ``POST ``, ``PUT /`` or ``OPTIO``), and logs ``http: TLS handshake error from ...``;
* bounds how long a client may take to send its request headers (ReadHeaderTimeout, 32 s; the TLS
  handshake shares that deadline), so slow or silent connections are closed instead of piling up until
  no descriptor is left; here the same bound covers an idle keep-alive connection (aiohttp's keep-alive
  timer also closes a connection whose next request's headers are incomplete), where Go waits 90 s;
* answers request headers over its limit with a plain-text ``431 Request Header Fields Too Large`` and any
  other unreadable request with ``400 Bad Request``, without a log line (the apiserver's handlers, which
  write Status objects, never see such a request); a method of any name is readable (``_GoErrors``);
* retries a failed ``accept`` (out of descriptors) with a backoff from 5 ms to 1 s, logging each retry.

One addition of ours: when ``accept`` fails for want of descriptors, the connection that has waited longest
without completing its TLS handshake is closed first, so connections that never speak cannot lock new
clients out for the whole header timeout. (The server process also raises its soft descriptor limit to the
hard one at start, as the Go runtime does since Go 1.19.)

Go's limit is 1 MiB for the request line and headers together; aiohttp counts per line, so a request line may
be 1 MiB and a header line 8 KiB, at most 128 headers.
"""
from __future__ import annotations

import asyncio
import logging
import os
import socket
import ssl
from http import HTTPStatus

from aiohttp import web
from aiohttp.http_exceptions import BadHttpMessage, LineTooLong
from aiohttp.http_parser import HttpRequestParserPy
from aiohttp.web_protocol import RequestHandler, RequestPayloadError

log = logging.getLogger("gpulab.apiserver.http")

READ_HEADER_TIMEOUT = 32.0  # secure_serving.go ReadHeaderTimeout ("just shy of requestTimeoutUpperBound")
MAX_REQUEST_LINE = 1 << 20  # MaxHeaderBytes
MAX_HEADER_LINE = 8190
MAX_HEADERS = 128
_HTTP_LOOKALIKES = (b"GET /", b"HEAD ", b"POST ", b"PUT /", b"OPTIO")
_HTTP_TO_HTTPS = b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
_ACCEPT_BACKOFF = (0.005, 1.0)
_API_METHODS = {b"GET", b"HEAD", b"POST", b"PUT", b"PATCH", b"DELETE", b"OPTIONS"}


def header_timeout() -> float:
    """READ_HEADER_TIMEOUT, or ``GPULAB_READ_HEADER_TIMEOUT`` seconds (tests shorten it)."""
    try:
        return float(os.environ.get("GPULAB_READ_HEADER_TIMEOUT") or READ_HEADER_TIMEOUT)
    except ValueError:
        return READ_HEADER_TIMEOUT


class _GoErrors(RequestHandler):
    """aiohttp's connection handler, answering unparsable requests as net/http does (plain text, no log).

    net/http reads any token as a method and the apiserver answers an unknown one (405 ``MethodNotAllowed``);
    aiohttp's C parser (llhttp) knows a fixed list and rejects the rest as unparsable. A connection whose first
    request has a method the API does not use is therefore read by aiohttp's pure-Python parser, which takes
    any token, so the request reaches the API; every other connection keeps the fast parser.
    """

    _first_data = True

    def data_received(self, data: bytes) -> None:
        if self._first_data:
            self._first_data = False
            method = data.split(b" ", 1)[0]
            if b" " in data and method not in _API_METHODS:
                self._parser = HttpRequestParserPy(
                    self, asyncio.get_running_loop(), self._read_bufsize, max_line_size=self.max_line_size,
                    max_field_size=self.max_field_size, max_headers=self.max_headers,
                    payload_exception=RequestPayloadError, max_msg_queue_size=self._max_msg_queue_size)
        super().data_received(data)

    def handle_error(self, request, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        if status == 500 or not isinstance(exc, BadHttpMessage):
            return super().handle_error(request, status, exc, message)
        too_large = isinstance(exc, LineTooLong) or "Too many headers" in str(exc)
        code = HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE if too_large else HTTPStatus.BAD_REQUEST
        text = f"{code.value} {code.phrase}"
        resp = web.Response(status=code.value, text=text, content_type="text/plain", charset="utf-8")
        resp.force_close()
        return resp


class Listener:
    """Accepts TLS connections on ``host:port`` for an aiohttp AppRunner's server."""

    def __init__(self, runner: web.AppRunner, ssl_context: ssl.SSLContext, host: str, port: int, *,
                 backlog: int = 512):
        self._runner = runner
        self._ssl = ssl_context
        self._host, self._port, self._backlog = host, port, backlog
        self._timeout = header_timeout()
        self._sock: socket.socket | None = None
        self._accepting: asyncio.Task | None = None
        self._pending: dict[asyncio.Task, socket.socket] = {}  # before TLS is up, oldest first

    async def start(self) -> None:
        """Bind and listen (an OSError here means the port cannot be used), then accept in the background."""
        self._sock = socket.create_server((self._host, self._port), backlog=self._backlog)
        self._sock.setblocking(False)
        self._accepting = asyncio.create_task(self._accept_loop(), name="apiserver-accept")

    async def stop(self) -> None:
        tasks = [t for t in [self._accepting, *self._pending] if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _protocol(self) -> RequestHandler:
        server = self._runner.server
        assert server is not None
        return _GoErrors(server, loop=asyncio.get_running_loop(), keepalive_timeout=self._timeout,
                         access_log=None, max_line_size=MAX_REQUEST_LINE, max_field_size=MAX_HEADER_LINE,
                         max_headers=MAX_HEADERS)

    async def _accept_loop(self) -> None:
        loop = asyncio.get_running_loop()
        delay = 0.0
        while True:
            try:
                conn, addr = await loop.sock_accept(self._sock)
            except OSError as exc:  # EMFILE, ENFILE, ENOBUFS...: wait for descriptors to come back
                if await self._shed_oldest():
                    continue
                delay = min(max(delay * 2, _ACCEPT_BACKOFF[0]), _ACCEPT_BACKOFF[1])
                log.error("http: Accept error: %s; retrying in %s", exc.strerror or exc, f"{delay * 1000:g}ms")
                await asyncio.sleep(delay)
                continue
            delay = 0.0
            task = asyncio.create_task(self._serve(conn, addr))
            self._pending[task] = conn
            task.add_done_callback(lambda t: self._pending.pop(t, None))

    async def _shed_oldest(self) -> bool:
        """Close the connection longest without TLS; False when there is none."""
        if not self._pending:
            return False
        oldest = next(iter(self._pending))
        log.warning("out of descriptors: closing the connection that has waited longest for its TLS handshake")
        oldest.cancel()
        await asyncio.wait({oldest}, timeout=1.0)
        return True

    async def _serve(self, conn: socket.socket, addr) -> None:
        try:
            await self._handshake(conn, f"{addr[0]}:{addr[1]}")
        except asyncio.CancelledError:
            conn.close()
            raise

    async def _handshake(self, conn: socket.socket, peer: str) -> None:
        conn.setblocking(False)
        try:
            first = await self._peek(conn)
        except (TimeoutError, OSError):
            conn.close()
            return
        if first[:5] in _HTTP_LOOKALIKES:
            _answer_plain_http(conn)
            log.info("http: TLS handshake error from %s: client sent an HTTP request to an HTTPS server", peer)
            return
        if not first:
            conn.close()
            return
        try:
            await asyncio.get_running_loop().connect_accepted_socket(
                self._protocol, sock=conn, ssl=self._ssl, ssl_handshake_timeout=self._timeout)
        except (OSError, ssl.SSLError, TimeoutError, ConnectionError) as exc:
            log.info("http: TLS handshake error from %s: %s", peer, exc)
            conn.close()

    async def _peek(self, conn: socket.socket) -> bytes:
        """The connection's first bytes, left unread: five of them, or fewer once a TLS record starts (0x16),
        or b"" at end of stream; TimeoutError past the header deadline."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout
        while True:
            try:
                data = conn.recv(5, socket.MSG_PEEK)
            except BlockingIOError:
                data = None
            if data is not None and (len(data) >= 5 or not data or data[:1] == b"\x16"):
                return data
            ready = loop.create_future()
            loop.add_reader(conn.fileno(), lambda: ready.done() or ready.set_result(None))
            try:
                async with asyncio.timeout_at(deadline):
                    await ready
            finally:
                loop.remove_reader(conn.fileno())


def _answer_plain_http(conn: socket.socket) -> None:
    """Go's reply to plain HTTP on a TLS port, then close (reading what was sent first, so the client gets
    the reply rather than a reset)."""
    try:
        conn.recv(65536)
        conn.send(_HTTP_TO_HTTPS)
        conn.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    finally:
        conn.close()
