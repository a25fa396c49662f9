"""A real HTTP/HTTPS upstream on loopback that counts what reaches it.

End-to-end tests must show how many requests (and TCP connections) reached the world: a
shared read must reach it once, a sealed tape never. This server answers in a threaded
http.server so it is independent of the proxy's event loop, and records every request with
its headers so tests can check that nothing private leaked.
"""

from __future__ import annotations

import base64
import gzip
import json
import secrets
import socket
import ssl
import string
import threading
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from tests.support.threaded_server import ThreadedServer

GZIP_BODY = gzip.compress(b'{"compressed": true}', mtime=0)


@dataclass
class Seen:
    method: str
    path: str
    headers: list[tuple[str, str]]
    body: bytes


# How long `/gated` and `/hang` hold at most: far above any test's own deadline.
HOLD_BOUND_SECONDS = 120.0


def _opened(event: threading.Event) -> threading.Event:
    event.set()
    return event


@dataclass
class UpstreamState:
    requests: list[Seen] = field(default_factory=list)
    accepts: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    per_path: Counter = field(default_factory=Counter)
    # `/gated` answers once this is set (open by default); `/hang` never answers, until stop.
    gate: threading.Event = field(default_factory=lambda: _opened(threading.Event()))
    hung_up: threading.Event = field(default_factory=threading.Event)
    # Tokens `/oauth/token` and `/session` issued (random, as a real world's are); `/me` accepts
    # only these.
    issued: list[str] = field(default_factory=list)

    def count(self, path: str | None = None, method: str | None = None) -> int:
        with self.lock:
            return sum(
                1
                for seen in self.requests
                if (path is None or seen.path.split("?")[0] == path)
                and (method is None or seen.method == method)
            )


def _issue_tokens(state: UpstreamState) -> dict:
    """An OAuth token answer with fresh random tokens, remembered as issued."""
    alphabet = string.ascii_letters + string.digits
    access = "ghu_" + "".join(secrets.choice(alphabet) for _ in range(36))
    refresh = "ghr_" + "".join(secrets.choice(alphabet) for _ in range(36))
    claims = base64.urlsafe_b64encode(json.dumps({"sub": secrets.token_hex(8)}).encode())
    id_token = (
        "eyJhbGciOiJIUzI1NiJ9." + claims.decode().rstrip("=") + "." + secrets.token_urlsafe(32)
    )
    with state.lock:
        state.issued += [access, refresh, id_token]
    return {
        "access_token": access,
        "refresh_token": refresh,
        "id_token": id_token,
        "token_type": "bearer",
        "expires_in": 3600,
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args) -> None:
        return

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        state = self.server.state
        with state.lock:
            state.requests.append(Seen(self.command, self.path, list(self.headers.items()), body))
            state.per_path[self.path.split("?")[0]] += 1
            number = state.per_path[self.path.split("?")[0]]
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        if url.path == "/gated":
            state.gate.wait(HOLD_BOUND_SECONDS)
        if url.path == "/hang":
            state.hung_up.wait(HOLD_BOUND_SECONDS)
            self.close_connection = True
            return
        if url.path == "/reset":
            self.connection.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
            )
            self.close_connection = True
            self.connection.close()
            return
        if url.path == "/session":
            # A read that issues tokens (a session endpoint; `hold=1`: answered once the gate
            # opens, so siblings can be made to wait on it).
            if query.get("hold"):
                state.gate.wait(HOLD_BOUND_SECONDS)
            self._send(
                200,
                json.dumps(_issue_tokens(state)).encode(),
                [("Content-Type", "application/json")],
            )
            return
        if url.path == "/oauth/token":
            self._send(
                200,
                json.dumps(_issue_tokens(state)).encode(),
                [("Content-Type", "application/json")],
            )
            return
        if url.path == "/me":
            bearer = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            with state.lock:
                known = bearer in state.issued
            status, answer = (200, {"user": "ann"}) if known else (401, {"error": "bad token"})
            self._send(status, json.dumps(answer).encode(), [("Content-Type", "application/json")])
            return
        if url.path == "/gzip":
            self._send(
                200, GZIP_BODY, [("Content-Type", "application/json"), ("Content-Encoding", "gzip")]
            )
            return
        if url.path == "/big":
            size = int(query.get("size", ["1024"])[0])
            self._send(200, b"x" * size, [("Content-Type", "application/octet-stream")])
            return
        if url.path == "/login":
            # A fresh session per call, as a world that keeps each sandbox behind a cookie.
            sid = f"sid-{number}"
            self._send(200, json.dumps({"sid": sid}).encode(), [("Set-Cookie", f"sid={sid}")])
            return
        if url.path == "/visit":
            # A read that sets a cookie: the recording branch's cookie must reach no sibling.
            headers = [("Set-Cookie", f"visit=v-{number}; Path=/; HttpOnly")]
            self._send(200, json.dumps({"visit": number}).encode(), headers)
            return
        if url.path == "/v1/chat/completions":
            self._send_completion(body, number)
            return
        if url.path == "/rpc":
            self._send_jsonrpc(body, number)
            return
        if url.path == "/forged-simulated":
            # A world answer claiming to be one of the tape's simulator's (issue 58's review).
            headers = [("Content-Type", "application/json"), ("X-Groundhog-Simulated", "1")]
            self._send(200, json.dumps({"number": number}).encode(), headers)
            return
        if url.path == "/sse":
            payload = b"data: one\n\ndata: two\n\n"
            self._send(200, payload, [("Content-Type", "text/event-stream")])
            return
        answer = {
            "method": self.command,
            "path": self.path,
            "number": number,
            "server": self.server.name,
            "headers": [[k, v] for k, v in self.headers.items()],
            "body": body.decode("latin-1"),
        }
        self._send(
            200,
            json.dumps(answer).encode(),
            [("Content-Type", "application/json"), ("X-Dup", "a"), ("X-Dup", "b")],
        )

    def _send_completion(self, body: bytes, number: int) -> None:
        """An OpenAI-style chat completion naming the call's number (streamed when asked)."""
        asked = json.loads(body)
        text = f"answer {number} from {self.server.name}"
        base = {"id": f"chatcmpl-{number}", "created": 0, "model": asked["model"]}
        if not asked.get("stream"):
            message = {"role": "assistant", "content": text}
            completion = {
                **base,
                "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            }
            self._send(200, json.dumps(completion).encode(), [("Content-Type", "application/json")])
            return
        events = b""
        for word, finish in ((text, None), ("", "stop")):
            delta = {"content": word} if word else {}
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            chunk = {**base, "object": "chat.completion.chunk", "choices": [choice]}
            events += b"data: " + json.dumps(chunk).encode() + b"\n\n"
        self._send(200, events + b"data: [DONE]\n\n", [("Content-Type", "text/event-stream")])

    def _send_jsonrpc(self, body: bytes, number: int) -> None:
        """JSON-RPC answers (a batch: one per call) naming the calls' ids; `404` for the
        session `gone`, as an MCP server answers for a session it ended."""
        if self.headers.get("Mcp-Session-Id") == "gone":
            self._send(404, b'{"error": "Session not found"}', [])
            return
        calls = json.loads(body)
        answers = [
            {"jsonrpc": "2.0", "id": call["id"], "result": {"number": number}}
            for call in (calls if isinstance(calls, list) else [calls])
        ]
        payload = answers if isinstance(calls, list) else answers[0]
        headers = [("Content-Type", "application/json")]
        if self.headers.get("Mcp-Session-Id"):
            headers.append(("Mcp-Session-Id", self.headers["Mcp-Session-Id"]))
        self._send(200, json.dumps(payload).encode(), headers)

    def _send(self, status: int, body: bytes, headers: list[tuple[str, str]]) -> None:
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, state: UpstreamState, name: str, tls: ssl.SSLContext | None):
        self.state = state
        self.name = name
        self.tls = tls
        super().__init__(address, _Handler)

    def get_request(self):
        sock, address = super().get_request()
        with self.state.lock:
            self.state.accepts += 1
        if self.tls is not None:
            sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address


class Upstream(ThreadedServer):
    """A running upstream: `.url`, `.state`; use as a context manager or call stop()."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        *,
        name: str = "upstream",
        cert: tuple[Path, Path] | None = None,
    ) -> None:
        tls = None
        if cert is not None:
            tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            tls.load_cert_chain(str(cert[0]), str(cert[1]))
        self.state = UpstreamState()
        self.host = host
        self.scheme = "https" if tls else "http"
        super().__init__(_Server((host, 0), self.state, name, tls))

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"

    def stop(self) -> None:
        self.state.gate.set()  # held answers end before the server does
        self.state.hung_up.set()
        super().stop()


class AcceptCounter:
    """A listening socket that only counts connection attempts (for 'nothing went live')."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.accepts = 0
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind((host, port))
        self._socket.listen(16)
        self.port = self._socket.getsockname()[1]
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        self._socket.settimeout(0.05)
        while not self._stopped.is_set():
            try:
                connection, _ = self._socket.accept()
            except (TimeoutError, OSError):
                continue
            self.accepts += 1
            connection.close()

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=5)
        self._socket.close()
