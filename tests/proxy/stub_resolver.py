"""A scripted stand-in for the resolver, for addon unit tests only.

Addon unit tests need to make the resolver answer one exact thing (serve, forward, a 4xx, a
500, garbage) and see what the addon sent it. End-to-end tests use the real resolver process.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.threaded_server import ThreadedServer

Answer = tuple[int, Any]
Script = Callable[[str, dict], Answer]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args) -> None:
        return

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        payload = json.loads(self.rfile.read(length) or b"{}")
        with self.server.lock:
            self.server.received.append((self.path, payload, dict(self.headers.items())))
        status, answer = self.server.script(self.path, payload)
        body = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
        content_type = "application/json" if status < 400 else "application/problem+json"
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, script: Script) -> None:
        self.script = script
        self.received: list[tuple[str, dict, dict]] = []
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)


class StubResolver(ThreadedServer):
    _server: _Server

    def __init__(self, script: Script) -> None:
        super().__init__(_Server(script))
        self.url = f"http://127.0.0.1:{self.port}"

    @property
    def received(self) -> list[tuple[str, dict, dict]]:
        return self._server.received

    def routes(self) -> list[str]:
        return [route for route, _, _ in self.received]
