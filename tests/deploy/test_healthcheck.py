"""deploy/healthcheck.py, the probe every container's HEALTHCHECK runs, against real sockets."""

from __future__ import annotations

import contextlib
import http.server
import importlib.util
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from types import ModuleType

import pytest

from tests.deploy.compose_local import REPO_ROOT
from tests.support.servers import free_port

SCRIPT = REPO_ROOT / "deploy" / "healthcheck.py"


@pytest.fixture(scope="module")
def healthcheck() -> ModuleType:
    spec = importlib.util.spec_from_file_location("groundhog_healthcheck", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        status = 200 if self.path == "/healthz" else 503
        body = b'{"status": "ok"}' if status == 200 else b"starting"
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def http_server() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_a_server_answering_200_is_healthy(healthcheck: ModuleType) -> None:
    with http_server() as port:
        healthy, reason = healthcheck.probe(f"http://127.0.0.1:{port}/healthz")
    assert healthy, reason
    assert reason.endswith("HTTP 200")


def test_a_server_answering_an_error_is_unhealthy(healthcheck: ModuleType) -> None:
    with http_server() as port:
        healthy, reason = healthcheck.probe(f"http://127.0.0.1:{port}/starting")
    assert not healthy
    assert "HTTP 503" in reason


def test_nothing_listening_is_unhealthy(healthcheck: ModuleType) -> None:
    port = free_port()
    healthy, reason = healthcheck.probe(f"http://127.0.0.1:{port}/healthz", timeout=1.0)
    assert not healthy
    assert f"127.0.0.1:{port}" in reason


def test_tcp_targets_only_need_an_accepting_port(healthcheck: ModuleType) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert healthcheck.probe(f"tcp://127.0.0.1:{port}")[0]
    assert not healthcheck.probe(f"tcp://127.0.0.1:{port}", timeout=1.0)[0]


@pytest.mark.parametrize(
    ("target", "message"),
    [("tcp://127.0.0.1", "needs a host and a port"), ("ftp://127.0.0.1/x", "unsupported scheme")],
)
def test_bad_targets_say_what_is_wrong(healthcheck: ModuleType, target: str, message: str) -> None:
    healthy, reason = healthcheck.probe(target)
    assert not healthy
    assert message in reason


def test_proxy_variables_do_not_reroute_the_probe(
    healthcheck: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A worker container has HTTP_PROXY set; its own probe must still reach loopback directly.
    dead_proxy = f"http://127.0.0.1:{free_port()}"
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, dead_proxy)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with http_server() as port:
        healthy, reason = healthcheck.probe(f"http://127.0.0.1:{port}/healthz")
    assert healthy, reason


def test_the_script_exits_0_or_1_as_docker_expects() -> None:
    with http_server() as port:
        ok = subprocess.run(
            [sys.executable, str(SCRIPT), f"http://127.0.0.1:{port}/healthz"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert ok.returncode == 0, ok.stderr
    failing = subprocess.run(
        [sys.executable, str(SCRIPT), f"tcp://127.0.0.1:{free_port()}"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert failing.returncode == 1
    assert "tcp://127.0.0.1" in failing.stderr


def test_the_default_target_is_the_resolver(healthcheck: ModuleType) -> None:
    assert healthcheck.DEFAULT_TARGET == "http://127.0.0.1:8070/healthz"
