"""The one way out of a submission's sandbox: its cluster's address, relayed by the grader to that cluster alone.

Inside the sandbox (:mod:`.sandbox_entry`) a socket listens on
``127.0.0.1:PORT`` in the sandbox's own network namespace; its file descriptor
comes out here over a socket pair. A thread of the grading process accepts on
it and connects each connection to the cluster's server on the host's
``127.0.0.1:PORT``, then copies bytes both ways (TLS passes through untouched:
the kernel's client checks the server's certificate as before). The sandbox
cannot choose the destination: there is only the one, fixed here.

One thread and one ``selectors`` loop serve every connection of a sandbox; a
kernel that stops reading loses its own connection after :data:`SEND_TIMEOUT_S`,
and past :data:`MAX_CONNECTIONS` open connections new ones are refused, so a
submission cannot spend the grader's descriptors. A kernel restart brings a new
listening socket; the old one and its connections are dropped.
"""
from __future__ import annotations

import selectors
import socket
import threading

MAX_CONNECTIONS = 128
SEND_TIMEOUT_S = 10.0
CHUNK = 256 * 1024


class ClusterBridge:
    """Relays connections accepted on a sandbox's listening socket to ``127.0.0.1:port`` outside."""

    def __init__(self, port: int):
        self.port = port
        self._selector = selectors.DefaultSelector()
        self._wake_read, self._wake_write = socket.socketpair()
        self._selector.register(self._wake_read, selectors.EVENT_READ, ("wake", None))
        self._listener: socket.socket | None = None
        self._peers: dict[socket.socket, socket.socket] = {}
        self._closing = False
        self._lock = threading.Lock()
        self._pending: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, name=f"gpulab-bridge-{port}", daemon=True)
        self._thread.start()

    def attach(self, channel: socket.socket) -> None:
        """Take the listening socket the sandbox will send over ``channel`` (ours to close)."""
        with self._lock:
            self._pending.append(channel)
        self._wake_write.send(b"\0")

    def close(self) -> None:
        self._closing = True
        self._wake_write.send(b"\0")
        self._thread.join(timeout=5)
        self._wake_write.close()

    def __enter__(self) -> ClusterBridge:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- the relay thread --------------------------------------------------------------
    def _serve(self) -> None:
        try:
            while not self._closing:
                for key, _ in self._selector.select():
                    kind, peer = key.data
                    if kind == "wake":
                        self._wake_read.recv(4096)
                        self._take_pending()
                    elif kind == "channel":
                        self._receive_listener(key.fileobj)
                    elif kind == "listener":
                        self._accept(key.fileobj)
                    elif key.fileobj in self._peers:
                        self._relay(key.fileobj)
        finally:
            for channel in self._pending:
                channel.close()
            self._drop_listener()
            self._selector.close()
            self._wake_read.close()

    def _take_pending(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        for channel in pending:
            channel.setblocking(False)
            self._selector.register(channel, selectors.EVENT_READ, ("channel", None))

    def _receive_listener(self, channel: socket.socket) -> None:
        self._selector.unregister(channel)
        try:
            _, fds, _, _ = socket.recv_fds(channel, 64, 1)
        except OSError:
            fds = []
        finally:
            channel.close()
        if not fds:
            return                              # the sandbox ended before it opened the address
        listener = socket.socket(fileno=fds[0])
        if listener.type != socket.SOCK_STREAM or not listener.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
            listener.close()
            return
        self._drop_listener()
        listener.setblocking(False)
        self._listener = listener
        self._selector.register(listener, selectors.EVENT_READ, ("listener", None))

    def _drop_listener(self) -> None:
        for conn in list(self._peers):
            self._close(conn)
        if self._listener is not None:
            self._selector.unregister(self._listener)
            self._listener.close()
            self._listener = None

    def _accept(self, listener: socket.socket) -> None:
        try:
            inner, _ = listener.accept()
        except OSError:
            return
        if len(self._peers) >= 2 * MAX_CONNECTIONS:
            inner.close()
            return
        try:
            outer = socket.create_connection(("127.0.0.1", self.port), timeout=SEND_TIMEOUT_S)
        except OSError:
            inner.close()                       # the cluster is gone: the kernel sees a refused connection
            return
        for conn in (inner, outer):
            conn.settimeout(SEND_TIMEOUT_S)
        self._peers[inner], self._peers[outer] = outer, inner
        self._selector.register(inner, selectors.EVENT_READ, ("conn", outer))
        self._selector.register(outer, selectors.EVENT_READ, ("conn", inner))

    def _relay(self, conn: socket.socket) -> None:
        peer = self._peers[conn]
        try:
            data = conn.recv(CHUNK)
            if data:
                peer.sendall(data)
                return
            self._selector.unregister(conn)
            if self._registered(peer):
                peer.shutdown(socket.SHUT_WR)   # half-close: the other side may still answer
            else:
                self._close(conn)               # both directions are done
        except OSError:
            self._close(conn)

    def _registered(self, conn: socket.socket) -> bool:
        try:
            self._selector.get_key(conn)
            return True
        except (KeyError, ValueError):
            return False

    def _close(self, conn: socket.socket) -> None:
        peer = self._peers.pop(conn, None)
        for sock in (conn, peer):
            if sock is None:
                continue
            self._peers.pop(sock, None)
            if self._registered(sock):
                self._selector.unregister(sock)
            sock.close()
