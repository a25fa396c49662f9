"""Recorded traffic goes through an egress proxy when mitmproxy runs in upstream mode.

Training clusters often reach the world only through a corporate forward proxy. Because the
addon records through mitmproxy's own upstream path, `mode=upstream:URL` (what the CLI's
`--upstream-proxy` sets) applies to recorded misses too; tape hits open no connection at all.
The egress proxy here is a few lines on loopback that counts what passes through it.
"""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.proxy.stack import running_stack
from tests.proxy.upstream_server import Upstream
from tests.support.threaded_server import ThreadedServer


class _Relay(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Egress

    def log_message(self, format: str, *args) -> None:
        return

    def do_GET(self) -> None:
        self.server.seen.append(self.path)  # absolute-form: the target URL itself
        target = urlsplit(self.path)
        connection = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
        try:
            headers = {k: v for k, v in self.headers.items() if not k.lower().startswith("proxy-")}
            connection.request(
                "GET", target.path + (f"?{target.query}" if target.query else ""), headers=headers
            )
            answer = connection.getresponse()
            body = answer.read()
        finally:
            connection.close()
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in {"transfer-encoding", "content-length", "connection"}:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Egress(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        self.seen: list[str] = []
        super().__init__(("127.0.0.1", 0), _Relay)


@pytest.fixture
def egress() -> Iterator[_Egress]:
    server = _Egress()
    running = ThreadedServer(server)
    try:
        yield server
    finally:
        running.stop()


def test_recorded_misses_go_through_the_egress_proxy_and_hits_go_nowhere(
    tmp_path: Path, upstream: Upstream, egress: _Egress
) -> None:
    mode = f"mode=upstream:http://127.0.0.1:{egress.server_address[1]}"
    with running_stack(tmp_path, "--set", mode) as stack:
        tape = stack.open_tape()
        first, second = stack.fork(tape, 2)
        url = f"{upstream.url}/via-egress?q=1"
        answers = []
        for branch in (first, second):
            with httpx.Client(
                proxy=stack.proxy.url,
                trust_env=False,
                timeout=60,
                headers={"X-Groundhog-Tape": tape, "X-Groundhog-Branch": branch},
            ) as client:
                answers.append(client.get(url))

    assert [a.headers["x-groundhog-decision"] for a in answers] == ["recorded", "shared"]
    assert answers[0].content == answers[1].content
    assert egress.seen == [url]  # the one live call went through the egress proxy
    assert upstream.state.count("/via-egress") == 1
