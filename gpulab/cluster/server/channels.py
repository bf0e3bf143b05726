"""The ``channel.k8s.io`` WebSocket subprotocols of exec, attach and port-forward.

Every binary message starts with the number of the channel it belongs to (k8s.io/streaming
pkg/httpstream/wsstream/conn.go): stdin 0, stdout 1, stderr 2, the error channel 3 and the resize
channel 4 for exec and attach (remotecommand's constants); a data and an error channel per port for
port-forward. The ``base64.`` flavours send text messages instead: the channel as an ASCII digit, then the
payload in base64. ``v5.channel.k8s.io`` (what kubectl 1.37 asks for) adds the CLOSE signal, a message of
two bytes ``255, channel`` by which a client half-closes one channel (the end of its stdin).
"""
from __future__ import annotations

import base64
from typing import AsyncIterator

from aiohttp import WSMsgType, web

V5 = "v5.channel.k8s.io"
V4 = "v4.channel.k8s.io"
V4_BASE64 = "v4.base64.channel.k8s.io"
CHANNEL = "channel.k8s.io"
BASE64_CHANNEL = "base64.channel.k8s.io"
CLOSE_SIGNAL = 255
STDIN, STDOUT, STDERR, ERROR, RESIZE = range(5)


class Channels:
    """One WebSocket speaking a channel protocol: ``send(channel, data)`` and the channel messages received."""

    def __init__(self, ws: web.WebSocketResponse, protocol: str):
        self.ws = ws
        self.base64 = "base64" in protocol
        self.supports_close = protocol == V5

    async def send(self, channel: int, data: bytes) -> None:
        if self.ws.closed:
            return
        if self.base64:
            await self.ws.send_str(chr(ord("0") + channel) + base64.b64encode(data).decode())
        else:
            await self.ws.send_bytes(bytes([channel]) + data)

    async def receive(self) -> AsyncIterator[tuple[int, bytes | None]]:
        """(channel, data) per message; data None for a CLOSE signal. Ends when the client closes."""
        async for msg in self.ws:
            if msg.type == WSMsgType.BINARY:
                data = msg.data
            elif msg.type == WSMsgType.TEXT:
                data = msg.data.encode()
            else:
                break
            if not data:
                continue
            if self.supports_close and data[0] == CLOSE_SIGNAL:
                if len(data) == 2:
                    yield data[1], None
                continue
            if self.base64:
                try:
                    yield data[0] - ord("0"), base64.b64decode(data[1:])
                except ValueError:
                    continue
            else:
                yield data[0], data[1:]
