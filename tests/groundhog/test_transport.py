"""Unit tests of groundhog/transport.py against a scripted HTTP server on loopback."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from groundhog.errors import GroundhogError, ResolverUnreachable
from groundhog.shim import api, patches
from groundhog.transport import AdminTransport, raise_for_problem, resolver_url_from_env

Answer = tuple[int, str, bytes]


class _Scripted(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, script: Callable[[str, str, dict[str, str], bytes], Answer]) -> None:
        self.script = script
        self.seen: list[tuple[str, str, dict[str, str], bytes]] = []
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Scripted

    def log_message(self, format: str, *args: object) -> None:
        return

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        headers = {name.lower(): value for name, value in self.headers.items()}
        self.server.seen.append((self.command, self.path, headers, body))
        status, content_type, payload = self.server.script(self.command, self.path, headers, body)
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_DELETE = _answer


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[..., Answer]], tuple[str, _Scripted]]]:
    started: list[tuple[_Scripted, threading.Thread]] = []

    def start(script: Callable[..., Answer]) -> tuple[str, _Scripted]:
        server = _Scripted(script)
        thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
        thread.start()
        started.append((server, thread))
        return f"http://127.0.0.1:{server.server_address[1]}", server

    yield start
    for server, thread in started:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(autouse=True)
def no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GROUNDHOG_RESOLVER_URL", "GROUNDHOG_ADMIN_TOKEN", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)


def test_resolver_url_precedence(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolver_url_from_env() == "http://127.0.0.1:8070"
    monkeypatch.setenv("GROUNDHOG_RESOLVER_URL", "http://env:1/")
    assert resolver_url_from_env() == "http://env:1"
    assert resolver_url_from_env("http://given:2//") == "http://given:2"


def test_json_sends_the_token_and_params_and_parses_the_answer(
    serve: Callable[..., tuple[str, _Scripted]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, server = serve(lambda *_: (200, "application/json", b'{"ok": [1, 2]}'))
    monkeypatch.setenv("GROUNDHOG_ADMIN_TOKEN", "from-env")
    transport = AdminTransport(url + "/")
    try:
        answer = transport.json("POST", "/v1/x", json={"a": 1}, params={"q": "v w"})
    finally:
        transport.close()
    assert answer == {"ok": [1, 2]}
    method, path, headers, body = server.seen[0]
    assert (method, path) == ("POST", "/v1/x?q=v+w")
    assert headers["authorization"] == "Bearer from-env"
    assert json.loads(body) == {"a": 1}


def test_an_explicit_empty_token_sends_no_authorization(
    serve: Callable[..., tuple[str, _Scripted]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, server = serve(lambda *_: (200, "application/json", b"{}"))
    monkeypatch.setenv("GROUNDHOG_ADMIN_TOKEN", "from-env")
    transport = AdminTransport(url, token="")
    transport.json("GET", "/")
    transport.close()
    assert "authorization" not in server.seen[0][2]


def test_empty_and_204_answers_are_none(serve: Callable[..., tuple[str, _Scripted]]) -> None:
    url, _ = serve(lambda method, *_: (204 if method == "DELETE" else 200, "", b""))
    with_transport = AdminTransport(url)
    assert with_transport.json("DELETE", "/v1/tapes/t") is None
    assert with_transport.json("GET", "/empty") is None
    with_transport.close()


def test_non_json_success_is_a_clear_error(serve: Callable[..., tuple[str, _Scripted]]) -> None:
    url, _ = serve(lambda *_: (200, "text/html", b"<html>hi</html>"))
    transport = AdminTransport(url)
    with pytest.raises(GroundhogError, match=r"GET /page answered non-JSON: '<html>hi</html>'"):
        transport.json("GET", "/page")
    transport.close()


def test_problems_become_typed_errors_with_extras(
    serve: Callable[..., tuple[str, _Scripted]],
) -> None:
    problem = {
        "type": "https://groundhog.dev/problems/conflict",
        "title": "Conflict",
        "status": 409,
        "detail": "world_seed differs",
        "fields": ["world_seed"],
    }
    url, _ = serve(lambda *_: (409, "application/problem+json", json.dumps(problem).encode()))
    transport = AdminTransport(url)
    with pytest.raises(GroundhogError) as raised:
        transport.request("POST", "/v1/tapes")
    transport.close()
    error = raised.value
    assert (error.status, error.title, error.detail) == (409, "Conflict", "world_seed differs")
    assert error.type.endswith("/conflict") and error.extras == {"fields": ["world_seed"]}


def test_a_non_problem_error_body_becomes_the_detail() -> None:
    response = httpx.Response(500, text="  upstream exploded  ")
    with pytest.raises(GroundhogError) as raised:
        raise_for_problem(response)
    assert (raised.value.status, raised.value.detail) == (500, "upstream exploded")
    raise_for_problem(httpx.Response(201))  # success passes


def test_stream_yields_the_body_and_raises_problems(
    serve: Callable[..., tuple[str, _Scripted]],
) -> None:
    def script(method: str, path: str, *_: object) -> Answer:
        if path == "/big":
            return 200, "application/octet-stream", b"x" * 50_000
        return 404, "application/problem+json", b'{"title": "Not found", "detail": "no"}'

    url, _ = serve(script)
    transport = AdminTransport(url)
    with transport.stream("GET", "/big") as response:
        assert b"".join(response.iter_bytes()) == b"x" * 50_000
    with pytest.raises(GroundhogError, match="404 Not found: no"), transport.stream("GET", "/x"):
        pass
    transport.close()


def test_nothing_listening_says_how_to_start_the_resolver() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    transport = AdminTransport(url)
    for call in (
        lambda: transport.request("GET", "/healthz"),
        lambda: transport.stream("GET", "/x").__enter__(),
    ):
        with pytest.raises(ResolverUnreachable) as raised:
            call()
        assert raised.value.url == url
        assert f"cannot reach the resolver at {url}" in raised.value.detail
        assert "groundhog up" in raised.value.detail
    transport.close()


def test_admin_calls_do_not_move_a_branch_clock(
    serve: Callable[..., tuple[str, _Scripted]],
) -> None:
    url, _ = serve(lambda *_: (200, "application/json", b"{}"))
    transport = AdminTransport(url)
    assert not patches.installed()
    with api.shim(world_seed=1, tick=1.0) as block:
        transport.json("GET", "/")
        assert block.state.elapsed_ns == 0
    transport.close()
