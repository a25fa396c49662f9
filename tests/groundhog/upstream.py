"""A small real upstream for worker tests: HTTP and HTTPS, counting the calls that reach it.

The end-to-end tests must prove that a worker's request went through the real proxy to a real
server exactly as often as Groundhog says (once, then shared), so the server counts hits and
answers with a value that differs on every live call.
"""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.support.certs import write_self_signed
from tests.support.threaded_server import ThreadedServer


@dataclass
class Upstream:
    url: str
    hits: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, path: str) -> int:
        with self.lock:
            return sum(1 for hit in self.hits if hit == path)


def send_json(handler: BaseHTTPRequestHandler, document: object) -> None:
    """Answer `200` with `document` as JSON (a test server's whole reply)."""
    body = json.dumps(document).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def _handler(upstream: Upstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            with upstream.lock:
                upstream.hits.append(self.path)
                serial = len(upstream.hits)
            send_json(self, {"path": self.path, "serial": serial})

        def do_POST(self) -> None:
            # A write: counted like a read, answered with the body's length, so a test can
            # make a branch change the world and see which reads Groundhog then refetches.
            length = int(self.headers.get("Content-Length") or 0)
            received = self.rfile.read(length)
            with upstream.lock:
                upstream.hits.append(self.path)
            send_json(self, {"path": self.path, "written": len(received)})

        def log_message(self, format: str, *args: object) -> None:
            return

    return Handler


@contextmanager
def serving(tls_directory: Path | None = None) -> Iterator[Upstream]:
    """An upstream on an ephemeral loopback port; HTTPS when given a directory for its cert."""
    upstream = Upstream(url="")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(upstream))
    scheme = "http"
    if tls_directory is not None:
        cert_path, key_path = write_self_signed(tls_directory, ["127.0.0.1"])
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_path, key_path)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    upstream.url = f"{scheme}://127.0.0.1:{server.server_port}"
    with ThreadedServer(server):
        yield upstream
