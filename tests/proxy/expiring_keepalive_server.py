"""An HTTP/1.1 upstream whose keep-alive expires at the worst moment: as a request arrives.

A real server (uvicorn, Node, gunicorn) closes a connection that sat idle past its keep-alive;
a proxy that forwards a request on it as the close goes out gets no answer. That race is rare
and timing-bound, so this server makes it certain: a request that arrives on a connection
which has been idle longer than `expiry` since its last answer is read, counted as dropped, and
answered by closing the connection, as if the keep-alive timer had fired that instant. Every
connection gets a number, so a test sees which requests shared one.
"""

from __future__ import annotations

import itertools
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.support.threaded_server import ThreadedServer


@dataclass
class Arrival:
    connection: int
    method: str
    path: str
    answered: bool


@dataclass
class ExpiringState:
    expiry: float
    arrivals: list[Arrival] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    connections: itertools.count = field(default_factory=itertools.count)

    last_answer: float | None = None  # time.monotonic() of the latest answer on any connection

    def seen(self) -> list[Arrival]:
        with self.lock:
            return list(self.arrivals)

    def quiet_for(self) -> float:
        """Seconds since the latest answer on any connection (0 before the first)."""
        with self.lock:
            last = self.last_answer
        return 0.0 if last is None else time.monotonic() - last


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    connection_number = -1
    last_answered: float | None = None

    def log_message(self, format: str, *args: object) -> None:
        return

    def setup(self) -> None:
        super().setup()
        self.connection_number = next(self.server.state.connections)

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        state = self.server.state
        expired = (
            self.last_answered is not None and time.monotonic() - self.last_answered > state.expiry
        )
        with state.lock:
            state.arrivals.append(
                Arrival(self.connection_number, self.command, self.path, not expired)
            )
        if expired:
            self.close_connection = True  # no answer: the keep-alive closed it as it arrived
            return
        body = f"{self.command} {self.path} on connection {self.connection_number}".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        self.last_answered = time.monotonic()
        with state.lock:
            state.last_answer = self.last_answered

    do_GET = do_POST = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: ExpiringState, tls: ssl.SSLContext | None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state
        self.tls = tls

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        if self.tls is not None:  # handshake in the handler's thread, not the accept loop
            sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address


class ExpiringUpstream(ThreadedServer):
    """A running expiring upstream: `.url`, `.state`; with `cert` (PEM certificate and key)
    it speaks HTTPS. Use as a context manager."""

    def __init__(self, expiry: float, cert: tuple[Path, Path] | None = None) -> None:
        self.state = ExpiringState(expiry)
        tls = None
        if cert is not None:
            tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            tls.load_cert_chain(str(cert[0]), str(cert[1]))
        super().__init__(_Server(self.state, tls))
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
