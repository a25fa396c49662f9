"""A tiny forward (egress) HTTP proxy on loopback that counts what goes through it.

Training clusters often reach the internet only through a corporate egress proxy; to show that
`--upstream-proxy` routes Groundhog's live calls through one, the tests need a proxy that counts
absolute-form requests and CONNECT tunnels and forwards them to the local upstream.
"""

from __future__ import annotations

import contextlib
import http.client
import select
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from tests.support.threaded_server import ThreadedServer

HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "te"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args) -> None:
        return

    def _forward(self) -> None:
        self.server.count(f"{self.command} {self.path}", self.headers.get("Proxy-Authorization"))
        target = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        connection = http.client.HTTPConnection(target.hostname, target.port or 80, timeout=30)
        try:
            path = target.path + (f"?{target.query}" if target.query else "")
            connection.request(self.command, path or "/", body=body, headers=headers)
            answer = connection.getresponse()
            content = answer.read()
        finally:
            connection.close()
        self.send_response(answer.status, answer.reason)
        for name, value in answer.getheaders():
            if name.lower() not in HOP_BY_HOP | {"transfer-encoding", "content-length"}:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)

    def do_CONNECT(self) -> None:
        self.server.count(f"CONNECT {self.path}", self.headers.get("Proxy-Authorization"))
        host, _, port = self.path.rpartition(":")
        try:
            upstream = socket.create_connection((host.strip("[]"), int(port)), timeout=30)
        except OSError:
            self.send_error(502)
            return
        self.send_response(200, "Connection established")
        self.end_headers()
        self.close_connection = True
        with upstream:
            sockets = [self.connection, upstream]
            while True:
                readable, _, _ = select.select(sockets, [], [], 30)
                if not readable:
                    return
                for sock in readable:
                    try:
                        data = sock.recv(65536)
                    except OSError:
                        return
                    if not data:
                        return
                    other = upstream if sock is self.connection else self.connection
                    with contextlib.suppress(OSError):
                        other.sendall(data)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _forward


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.seen: list[str] = []
        self.credentials: list[str | None] = []
        self._lock = threading.Lock()

    def count(self, line: str, credentials: str | None) -> None:
        with self._lock:
            self.seen.append(line)
            self.credentials.append(credentials)


class ForwardProxy(ThreadedServer):
    """A running forward proxy: `.url`, `.seen` (request lines it forwarded)."""

    def __init__(self) -> None:
        self._proxy_server = _Server()
        super().__init__(self._proxy_server)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def seen(self) -> list[str]:
        with self._proxy_server._lock:
            return list(self._proxy_server.seen)

    @property
    def credentials(self) -> list[str | None]:
        with self._proxy_server._lock:
            return list(self._proxy_server.credentials)
