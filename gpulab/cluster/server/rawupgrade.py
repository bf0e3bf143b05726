"""Taking over an HTTP/1.1 connection after ``101 Switching Protocols`` to a protocol aiohttp does not speak.

aiohttp upgrades connections to WebSocket only; a SPDY/3.1 upgrade (the streaming fallback of kubectl and
client-go) would leave the bytes that follow to its HTTP parser. :func:`upgrade` installs a parser that
hands every byte to the caller instead, as aiohttp's own WebSocket response does, then sends the 101.
"""
from __future__ import annotations

from typing import Callable

from aiohttp import web


class _Passthrough:
    """The protocol's payload parser once upgraded."""

    def __init__(self, on_data: Callable[[bytes], None], on_eof: Callable[[], None]):
        self._on_data, self._on_eof = on_data, on_eof

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        self._on_data(bytes(data))
        return False, b""

    def feed_eof(self) -> None:
        self._on_eof()


async def upgrade(request: web.Request, headers: dict[str, str], on_data: Callable[[bytes], None],
                  on_eof: Callable[[], None]) -> web.StreamResponse:
    """Answer 101 with ``headers``; from then on the client's bytes go to ``on_data``."""
    response = web.StreamResponse(status=101, headers=headers)
    request.protocol.set_parser(_Passthrough(on_data, on_eof))
    await response.prepare(request)
    request.protocol.keep_alive(False)
    return response


def writer(request: web.Request):
    """An async writer of raw bytes to the upgraded connection."""
    async def write(data: bytes) -> None:
        transport = request.transport
        if transport is None or transport.is_closing():
            raise ConnectionResetError("connection closed")
        transport.write(data)
    return write


def close(request: web.Request) -> None:
    transport = request.transport
    if transport is not None and not transport.is_closing():
        transport.close()
