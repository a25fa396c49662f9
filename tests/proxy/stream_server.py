"""A loopback upstream for the streaming cases: SSE, LLM-style POST streams, endless streams,
huge downloads, huge headers and slow answers.

Streams must be shown to reach the worker *as they arrive*, without timing: `/gated` sends its
first event, then waits until the test opens a gate (which the test does only after reading
that first event through the proxy), so a proxy that buffers the body deadlocks the test
instead of passing it. Bodies are generated as they are written, never held.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from tests.support.threaded_server import ThreadedServer

CHUNK = 64 * 1024


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args) -> None:
        return

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        url = urlsplit(self.path)
        query = {name: values[0] for name, values in parse_qs(url.query).items()}
        with self.server.lock:
            self.server.calls[url.path] += 1
        route = getattr(self, "route_" + url.path.strip("/").replace("-", "_"), None)
        if route is None:
            self._head(404, [("Content-Length", "0")])
            return
        route(query, body)

    do_GET = do_POST = _handle

    def _head(self, status: int, headers: list[tuple[str, str]]) -> None:
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _end_chunks(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def route_sse(self, query: dict[str, str], _body: bytes) -> None:
        """A finite event stream, whatever the request's Accept header says."""
        count = int(query.get("n", "3"))
        self._head(
            200,
            [
                ("Content-Type", "text/event-stream"),
                ("Transfer-Encoding", "chunked"),
                ("Set-Cookie", "session=live-secret; Path=/"),
                ("X-Number", str(self.server.calls["/sse"])),
            ],
        )
        for index in range(count):
            self._chunk(f"data: event {index} draw {self.server.calls['/sse']}\n\n".encode())
        self._end_chunks()

    def route_gated(self, query: dict[str, str], _body: bytes) -> None:
        """One event, then wait for the test's gate, then the rest."""
        self._head(200, [("Content-Type", "text/event-stream"), ("Transfer-Encoding", "chunked")])
        self._chunk(b"data: first\n\n")
        opened = self.server.gate.wait(timeout=float(query.get("wait", "60")))
        self._chunk(b"data: after-gate\n\n" if opened else b"data: gate-timeout\n\n")
        self._end_chunks()

    def route_llm(self, query: dict[str, str], body: bytes) -> None:
        """An LLM-style streamed POST answer: JSON lines, chunked, no length."""
        prompt = json.loads(body or b"{}").get("prompt", "")
        self._head(
            200, [("Content-Type", "application/x-ndjson"), ("Transfer-Encoding", "chunked")]
        )
        for index, word in enumerate(prompt.split()):
            self._chunk(json.dumps({"index": index, "token": word.upper()}).encode() + b"\n")
        self._chunk(b'{"done": true}\n')
        self._end_chunks()

    def route_endless(self, query: dict[str, str], _body: bytes) -> None:
        """Events of about 1 KiB until the client goes away."""
        self._head(200, [("Content-Type", "text/event-stream"), ("Transfer-Encoding", "chunked")])
        padding = "x" * 1000
        index = 0
        try:
            while True:
                self._chunk(f"data: {index} {padding}\n\n".encode())
                index += 1
        except OSError:
            return

    def route_download(self, query: dict[str, str], _body: bytes) -> None:
        """`size` bytes, with a Content-Length, or chunked with `chunked=1`."""
        size = int(query["size"])
        chunked = query.get("chunked") == "1"
        framing = ("Transfer-Encoding", "chunked") if chunked else ("Content-Length", str(size))
        self._head(200, [("Content-Type", "application/octet-stream"), framing])
        block = b"z" * CHUNK
        left = size
        try:
            while left > 0:
                piece = block[: min(CHUNK, left)]
                if chunked:
                    self._chunk(piece)
                else:
                    self.wfile.write(piece)
                left -= len(piece)
            if chunked:
                self._end_chunks()
        except OSError:
            return

    def route_big_header(self, query: dict[str, str], _body: bytes) -> None:
        size = int(query.get("size", str(20 * 1024)))
        payload = b'{"big": "header"}'
        self._head(
            200,
            [
                ("Content-Type", "application/json"),
                ("X-Big", "h" * size),
                ("Content-Length", str(len(payload))),
            ],
        )
        self.wfile.write(payload)

    def route_slow(self, query: dict[str, str], _body: bytes) -> None:
        # The only sleep here is the world being slow on purpose; tests never wait on time.
        time.sleep(float(query.get("delay", "1")))
        payload = json.dumps({"slow": True, "draw": self.server.calls["/slow"]}).encode()
        self._head(
            200, [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))]
        )
        self.wfile.write(payload)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, tls: ssl.SSLContext | None) -> None:
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.gate = threading.Event()
        self.tls = tls
        super().__init__(("127.0.0.1", 0), _Handler)

    def get_request(self):
        sock, address = super().get_request()
        if self.tls is not None:
            sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address


class StreamUpstream(ThreadedServer):
    """A running streaming upstream: `.url`, `.calls` (per path), `.gate`; TLS with `cert`."""

    _server: _Server

    def __init__(self, cert: tuple[Path, Path] | None = None) -> None:
        tls = None
        if cert is not None:
            tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            tls.load_cert_chain(str(cert[0]), str(cert[1]))
        self.scheme = "https" if tls else "http"
        super().__init__(_Server(tls))

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    @property
    def calls(self) -> Counter[str]:
        return self._server.calls

    @property
    def gate(self) -> threading.Event:
        return self._server.gate
