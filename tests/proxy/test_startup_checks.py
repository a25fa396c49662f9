"""The proxy warns at start when its resolver does not answer, naming the URL and the fix."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from proxy.startup_checks import resolver_problem
from tests.support.servers import free_port, running_server, wait_until
from tests.support.threaded_server import ThreadedServer


@contextmanager
def health_server(status: int) -> Iterator[str]:
    class Health(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"status": "ok"}).encode()
            self.send_response(status if self.path == "/healthz" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Health)
    with ThreadedServer(server):
        yield f"http://127.0.0.1:{server.server_port}"


def test_a_live_resolver_is_no_problem_and_a_dead_or_sick_one_is() -> None:
    with health_server(200) as url:
        assert resolver_problem(url) is None
    with health_server(503) as url:
        assert resolver_problem(url) == "/healthz answered 503"
    assert "refused" in (resolver_problem(f"http://127.0.0.1:{free_port()}") or "").lower()


def test_groundhog_proxy_against_a_dead_resolver_says_so_at_start(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    args = ["groundhog.cli", "proxy", "--resolver-url", dead, "--data", str(tmp_path)]
    with running_server(args, health_path=None) as proxy:
        wait_until(lambda: "does not answer" in proxy.log(), timeout=60, what="the warning")
        line = next(line for line in proxy.log().splitlines() if "does not answer" in line)
    assert dead in line and "groundhog up" in line and "--resolver-url" in line, line
