"""The server side of SPDY/3.1 as Kubernetes streams speak it (moby/spdystream, the kubelet's library).

kubectl's port-forward tunnels SPDY through a WebSocket (``SPDY/3.1+portforward.k8s.io``), and its
fallback for exec, attach and port-forward upgrades the HTTP connection itself to ``SPDY/3.1``. Either
way the client opens streams (SYN_STREAM, odd ids, headers such as ``streamType: stdout`` or ``port:
80``), the server accepts each with a SYN_REPLY, both send DATA frames and half-close with FIN; PINGs
are echoed, GOAWAY ends the connection. Header blocks are compressed with zlib using the SPDY/3
dictionary, one compression stream per direction for the connection's life. Flow control
(WINDOW_UPDATE) and SETTINGS are ignored, as spdystream ignores them.

Hand-written because no maintained Python library speaks SPDY any more (the protocol was retired in
favour of HTTP/2); the framing follows the SPDY/3 draft (draft-mbelshe-httpbis-spdy-00) and
spdystream's reading of it.
"""
from __future__ import annotations

import asyncio
import logging
import struct
import zlib
from typing import Awaitable, Callable

log = logging.getLogger("gpulab.apiserver")

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01
RST_REFUSED_STREAM, RST_CANCEL = 3, 5
_MAX_DATA = 32 * 1024


def _dictionary() -> bytes:
    """The SPDY/3 header compression dictionary: length-prefixed header names, methods and versions, then
    the status lines, dates and media types as one run of text."""
    words = ("options head post put delete trace accept accept-charset accept-encoding accept-language "
             "accept-ranges age allow authorization cache-control connection content-base content-encoding "
             "content-language content-length content-location content-md5 content-range content-type date "
             "etag expect expires from host if-match if-modified-since if-none-match if-range "
             "if-unmodified-since last-modified location max-forwards pragma proxy-authenticate "
             "proxy-authorization range referer retry-after server te trailer transfer-encoding upgrade "
             "user-agent vary via warning www-authenticate method get status").split()
    words += ["200 OK", "version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin"]
    tail = ("100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
            "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
            "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
            "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
            "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
            "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.")
    return b"".join(struct.pack(">I", len(w)) + w.encode() for w in words) + tail.encode()


DICTIONARY = _dictionary()


class SpdyStream:
    """One stream the client opened: its headers, the data it sends (``None`` once it half-closed)."""

    def __init__(self, conn: "SpdyConnection", stream_id: int, headers: dict[str, list[str]]):
        self.conn = conn
        self.id = stream_id
        self.headers = headers
        self.incoming: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.remote_closed = False
        self.local_closed = False
        self.replied = asyncio.Event()     # the SYN_REPLY is out: data may follow it

    def header(self, name: str) -> str | None:
        values = self.headers.get(name.lower())
        return values[0] if values else None

    async def read(self) -> bytes | None:
        """The next data the client sent on this stream; None at its end."""
        return await self.incoming.get()

    async def write(self, data: bytes) -> None:
        await self.replied.wait()
        for i in range(0, len(data), _MAX_DATA):
            await self.conn.send_data(self.id, data[i:i + _MAX_DATA], fin=False)

    async def close(self) -> None:
        """Half-close: the server sends no more on this stream."""
        if not self.local_closed:
            self.local_closed = True
            await self.replied.wait()
            await self.conn.send_data(self.id, b"", fin=True)

    def _remote_end(self) -> None:
        if not self.remote_closed:
            self.remote_closed = True
            self.incoming.put_nowait(None)


class SpdyConnection:
    """Frames in through :meth:`feed`, out through ``send`` (an async writer of bytes)."""

    def __init__(self, send: Callable[[bytes], Awaitable[None]], on_stream: Callable[[SpdyStream], bool]):
        self._send = send
        self._on_stream = on_stream
        self._buffer = bytearray()
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)
        self._deflate = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS, 9, zlib.Z_DEFAULT_STRATEGY, DICTIONARY)
        self._lock = asyncio.Lock()
        self.streams: dict[int, SpdyStream] = {}
        self.closed = asyncio.Event()
        self._pending: list[asyncio.Task] = []

    # --- reading -------------------------------------------------------------------
    def feed(self, data: bytes) -> None:
        self._buffer += data
        while len(self._buffer) >= 8:
            length = int.from_bytes(self._buffer[5:8], "big")
            if len(self._buffer) < 8 + length:
                return
            frame = bytes(self._buffer[:8 + length])
            del self._buffer[:8 + length]
            try:
                self._frame(frame)
            except (zlib.error, struct.error, ValueError) as exc:
                log.warning("spdy: dropping a malformed frame: %s", exc)
                self.end()
                return

    def end(self) -> None:
        """The transport closed (or the client went away): every stream ends."""
        self.closed.set()
        for stream in list(self.streams.values()):
            stream._remote_end()
            stream.replied.set()

    def _frame(self, frame: bytes) -> None:
        first, flags = int.from_bytes(frame[:4], "big"), frame[4]
        body = frame[8:]
        if not first & 0x80000000:
            stream = self.streams.get(first & 0x7FFFFFFF)
            if stream is not None:
                if body:
                    stream.incoming.put_nowait(body)
                if flags & FLAG_FIN:
                    stream._remote_end()
            return
        kind = first & 0xFFFF
        if kind == SYN_STREAM:
            stream_id = int.from_bytes(body[:4], "big") & 0x7FFFFFFF
            stream = SpdyStream(self, stream_id, self._headers(body[10:]))
            self.streams[stream_id] = stream
            accepted = self._on_stream(stream)
            self._later(self._reply(stream) if accepted else self._reset(stream_id, RST_REFUSED_STREAM))
            if flags & FLAG_FIN:
                stream._remote_end()
        elif kind == RST_STREAM:
            stream = self.streams.pop(int.from_bytes(body[:4], "big") & 0x7FFFFFFF, None)
            if stream is not None:
                stream.local_closed = True
                stream._remote_end()
        elif kind == PING:
            self._later(self._control(PING, 0, body[:4]))
        elif kind == GOAWAY:
            self.end()
        elif kind == HEADERS:
            self._headers(body[4:])        # keeps the decompressor in step; the headers are not used

    def _headers(self, block: bytes) -> dict[str, list[str]]:
        raw = self._inflate.decompress(block)
        count, pos, headers = int.from_bytes(raw[:4], "big"), 4, {}
        for _ in range(count):
            size = int.from_bytes(raw[pos:pos + 4], "big")
            name = raw[pos + 4:pos + 4 + size].decode().lower()
            pos += 4 + size
            size = int.from_bytes(raw[pos:pos + 4], "big")
            headers.setdefault(name, []).extend(raw[pos + 4:pos + 4 + size].decode().split("\0"))
            pos += 4 + size
        return headers

    def _later(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self._pending.append(task)
        task.add_done_callback(self._pending.remove)

    # --- writing -------------------------------------------------------------------
    async def _write(self, data: bytes) -> None:
        async with self._lock:
            if not self.closed.is_set():
                try:
                    await self._send(data)
                except (ConnectionError, RuntimeError):
                    self.end()

    async def _control(self, kind: int, flags: int, body: bytes) -> None:
        await self._write(struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(body)) + body)

    async def _reply(self, stream: SpdyStream) -> None:
        block = self._deflate.compress(struct.pack(">I", 0)) + self._deflate.flush(zlib.Z_SYNC_FLUSH)
        await self._control(SYN_REPLY, 0, struct.pack(">I", stream.id) + block)
        stream.replied.set()

    async def _reset(self, stream_id: int, status: int) -> None:
        self.streams.pop(stream_id, None)
        await self._control(RST_STREAM, 0, struct.pack(">II", stream_id, status))

    async def send_data(self, stream_id: int, data: bytes, fin: bool) -> None:
        await self._write(struct.pack(">II", stream_id, ((FLAG_FIN if fin else 0) << 24) | len(data)) + data)

    async def reset(self, stream: SpdyStream) -> None:
        await self._reset(stream.id, RST_CANCEL)

    async def goaway(self) -> None:
        last = max(self.streams, default=0)
        await self._control(GOAWAY, 0, struct.pack(">II", last, 0))

    async def flush(self) -> None:
        """Wait for the replies and pings already queued to be written."""
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)
