"""A raw TCP echo server that counts what reaches it, and a client that speaks raw bytes
through a CONNECT tunnel.

The promise "raw bytes inside a tunnel never reach the world unless a passthrough list says so"
is only shown by a world that counts connections and bytes, and a client that sends bytes that
are neither HTTP nor TLS after `CONNECT host:port`. Both live here so the reliability scenario
and the proxy's tests use the same ones. Loopback only.
"""

from __future__ import annotations

import base64
import contextlib
import socket
import socketserver
import threading
from dataclasses import dataclass
from typing import Self

LOOPBACK = "127.0.0.1"
# Neither HTTP (no verb, no space before the first newline) nor TLS (no 0x16 record byte).
RAW_PROBE = b"\x00\x01groundhog-raw-probe\r\n"


class _EchoHandler(socketserver.BaseRequestHandler):
    server: _EchoTCPServer

    def handle(self) -> None:
        self.server.echo.count(connection=True)
        while True:
            try:
                data = self.request.recv(65536)
            except OSError:
                return
            if not data:
                return
            self.server.echo.count(received=len(data))
            with contextlib.suppress(OSError):
                self.request.sendall(data)


class _EchoTCPServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    echo: EchoServer


class EchoServer:
    """A threaded raw echo server on an ephemeral loopback port; use as a context manager."""

    def __init__(self) -> None:
        self.connections = 0
        self.bytes_received = 0
        self._lock = threading.Lock()
        self._server = _EchoTCPServer((LOOPBACK, 0), _EchoHandler)
        self._server.echo = self
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )
        self._thread.start()

    def count(self, *, connection: bool = False, received: int = 0) -> None:
        with self._lock:
            self.connections += int(connection)
            self.bytes_received += received

    def snapshot(self) -> tuple[int, int]:
        with self._lock:
            return self.connections, self.bytes_received

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class TunnelOutcome:
    connect_status: int | None  # the proxy's answer to CONNECT
    reply: bytes  # what came back through the tunnel after the probe
    closed: bool  # the proxy closed the tunnel (EOF or reset) instead of relaying

    @property
    def relayed(self) -> bool:
        return self.reply == RAW_PROBE


def raw_through_tunnel(
    proxy_port: int,
    target_port: int,
    *,
    tape: str | None = None,
    branch: str | None = None,
    target_host: str = LOOPBACK,
    payload: bytes = RAW_PROBE,
    timeout: float = 20.0,
) -> TunnelOutcome:
    """CONNECT to target_host:target_port through the proxy, send `payload`, read the answer.

    Reads until the echo has come back in full or the proxy closes the tunnel; `timeout` bounds
    a proxy that neither relays nor closes (counted as not closed, not relayed).
    """
    with socket.create_connection((LOOPBACK, proxy_port), timeout=timeout) as sock:
        target = f"{target_host}:{target_port}"
        head = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n"
        if tape or branch:
            token = base64.b64encode(f"{tape or ''}:{branch or ''}".encode()).decode()
            head += f"Proxy-Authorization: Basic {token}\r\n"
        sock.sendall(head.encode() + b"\r\n")
        response = b""
        while b"\r\n\r\n" not in response:
            chunk = sock.recv(4096)
            if not chunk:
                return TunnelOutcome(None, b"", True)
            response += chunk
        status_line, _, rest = response.partition(b"\r\n")
        status = int(status_line.split()[1])
        reply = rest.partition(b"\r\n\r\n")[2]
        if status != 200:
            return TunnelOutcome(status, reply, True)
        sock.sendall(payload)
        closed = False
        try:
            while len(reply) < len(payload):
                chunk = sock.recv(4096)
                if not chunk:
                    closed = True
                    break
                reply += chunk
        except ConnectionResetError:
            closed = True
        except TimeoutError:
            pass
        return TunnelOutcome(status, reply, closed)
