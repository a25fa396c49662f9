"""A WebSocket world on loopback for the conversation tests: random answers, a close on "bye".

It greets each connection, answers each text message with a fresh random draw and `done`, each
binary one with its bytes reversed plus random bytes, and "bye" with a farewell and a close
(4001); it counts connections and keeps what each client said, so a test can tell which
conversations reached it and what a live continuation sent. The `world` fixture
(tests/proxy/conftest.py) runs one per test; `serving_world` serves one over TLS too (wss://).
"""

from __future__ import annotations

import random
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from websockets.sync.server import Server, ServerConnection, serve


class World:
    """A WebSocket server on loopback that greets, then answers each message with a draw."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.connections = 0
        # What each connection's client said, in order (a live continuation's replay shows).
        self.received: list[list[str | bytes]] = []
        self._lock = threading.Lock()
        self.scheme = "wss" if tls is not None else "ws"
        self.server: Server = serve(self._handle, "127.0.0.1", 0, ssl=tls)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.server.socket.getsockname()[:2]
        return f"{self.scheme}://{host}:{port}/tools"

    def _handle(self, connection: ServerConnection) -> None:
        with self._lock:
            self.connections += 1
            said: list[str | bytes] = []
            self.received.append(said)
        connection.send(f"hello {random.random()}")
        for message in connection:
            said.append(message)
            if message == "bye":
                connection.send(f"bye {random.random()}")
                connection.close(4001, "the world is done")
                return
            if isinstance(message, bytes):
                connection.send(message[::-1] + random.randbytes(4))
            else:
                connection.send(f"{message}: {random.random()}")
                connection.send("done")


@contextmanager
def serving_world(tls: ssl.SSLContext | None = None) -> Iterator[World]:
    """A World (wss:// with `tls`) until the block ends."""
    running = World(tls)
    try:
        yield running
    finally:
        running.server.shutdown()
        running.thread.join(timeout=10)
