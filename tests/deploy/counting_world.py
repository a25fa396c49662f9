"""A deterministic upstream on loopback that counts every request reaching it.

The many-nodes test compares a tape recorded by two resolver replicas with one recorded by a
single node: the digests match only if the world answers the same bytes for the same request
every time. http.server's own responses carry `Date` and `Server` headers (wall-clock time),
and tests/proxy/upstream_server.py numbers its answers, so neither could show that the two
recordings are identical. The counts show whether any address was fetched upstream twice.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.support.servers import LOOPBACK
from tests.support.threaded_server import ThreadedServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        return

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        with self.server.lock:
            self.server.seen[(self.command, self.path, body)] += 1
        payload = json.dumps(
            {"method": self.command, "path": self.path, "body": body.decode("latin-1")},
            sort_keys=True,
        ).encode()
        # send_response_only: no Date or Server header, so the bytes depend on the request alone.
        self.send_response_only(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = _answer


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: Counter[tuple[str, str, bytes]] = Counter()
        super().__init__((LOOPBACK, 0), _Handler)


class CountingWorld(ThreadedServer):
    """`with CountingWorld() as world:` … `world.count("GET")`, `world.reset()`."""

    _server: _Server

    def __init__(self) -> None:
        super().__init__(_Server())

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def count(self, method: str | None = None) -> int:
        with self._server.lock:
            return sum(n for (m, _, _), n in self._server.seen.items() if method in (None, m))

    def counts(self) -> Counter[tuple[str, str, bytes]]:
        """How often each (method, path, body) reached the world."""
        with self._server.lock:
            return Counter(self._server.seen)

    def reset(self) -> None:
        with self._server.lock:
            self._server.seen.clear()
