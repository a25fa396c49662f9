"""A real HTTP/1.1 server on loopback that records what it was sent (connection, request line,
headers, body): for the rollout clients' tests."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@dataclass
class Seen:
    """What the server saw: per request, its connection's number, request line and headers."""

    requests: list[tuple[int, str, dict[str, str], bytes]] = field(default_factory=list)
    connections: int = 0
    close_after: int | None = None  # drop the connection without answering request n (1-based)


@pytest.fixture
def server() -> Iterator[tuple[str, Seen]]:
    seen = Seen()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            seen.connections += 1
            self.number = seen.connections

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            seen.requests.append((self.number, self.requestline, dict(self.headers), body))
            if seen.close_after == len(seen.requests):
                self.close_connection = True
                return
            payload = b'{"ok": true}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = _answer

        def log_message(self, *_: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    finally:
        httpd.shutdown()
        httpd.server_close()
