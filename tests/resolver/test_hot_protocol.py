"""resolver/hot_protocol.py on a real uvicorn server over loopback TCP: which requests the lane
answers, that its answers are the app's own, and that uvicorn's connection handling (keep-alive,
pipelining, graceful shutdown) still holds around it."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httptools
import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from resolver.app import create_app, uvicorn_protocol
from resolver.auth import check_proxy
from resolver.hot_protocol import protocol_for
from resolver.problem_handlers import install_error_handlers
from resolver.settings import load_settings
from tests.support.servers import wait_until

DEADLINE_SECONDS = 30.0
TOKEN = "proxy-secret"


@contextlib.contextmanager
def serving(app: Any, protocol: type[asyncio.Protocol]) -> Iterator[tuple[str, uvicorn.Server]]:
    """`app` under uvicorn with `protocol`, on an ephemeral loopback port, in a thread."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, http=protocol, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_until(
            lambda: (server.started and bool(server.servers)) or not thread.is_alive(),
            timeout=DEADLINE_SECONDS,
            what="uvicorn to start",
        )
        assert thread.is_alive(), "uvicorn stopped while starting"
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}", server
    finally:
        server.should_exit = True
        thread.join(DEADLINE_SECONDS)


def resolve_body(tape: str, path: str = "/items") -> dict[str, Any]:
    return {
        "tape": tape,
        "branch": "root",
        "method": "GET",
        "scheme": "http",
        "host": "upstream.test",
        "port": 80,
        "path": path,
        "query": [],
        "headers": [],
        "body": "",
    }


@pytest.fixture
def resolver(tmp_path: Path) -> Iterator[tuple[httpx.Client, type[Any]]]:
    """The real resolver app behind the lane, with a proxy token and a tape named `t`."""
    app = create_app(load_settings(data_dir=tmp_path, proxy_token=TOKEN))
    protocol = uvicorn_protocol(app)
    with serving(app, protocol) as (url, _), httpx.Client(base_url=url, trust_env=False) as client:
        assert client.post("/v1/tapes", json={"name": "t"}).status_code == 201
        yield client, protocol


AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_a_resolve_is_answered_in_the_lane_and_an_admin_call_is_not(
    resolver: tuple[httpx.Client, Any],
) -> None:
    client, protocol = resolver
    before = protocol.answered
    answer = client.post("/v1/resolve", json=resolve_body("t"), headers=AUTH)
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/json"
    assert answer.json()["action"] == "forward"
    assert protocol.answered == before + 1
    assert client.get("/v1/tapes/t").status_code == 200
    assert protocol.answered == before + 1


def test_the_guard_refuses_in_the_lane_with_the_apps_problem(
    resolver: tuple[httpx.Client, Any],
) -> None:
    client, protocol = resolver
    before = protocol.answered
    refused = client.post("/v1/resolve", json=resolve_body("t"))
    assert refused.status_code == 401
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.headers["www-authenticate"] == "Bearer"
    assert "GROUNDHOG_PROXY_TOKEN" in refused.json()["detail"]
    assert protocol.answered == before + 1
    wrong = client.post("/v1/resolve", json=resolve_body("t"), headers={"Authorization": "x"})
    assert wrong.status_code == 401


def test_bad_input_gets_the_same_problem_from_the_lane_and_from_the_app(
    resolver: tuple[httpx.Client, Any],
) -> None:
    client, protocol = resolver
    before = protocol.answered
    headers = {**AUTH, "Content-Type": "application/json"}
    in_lane = client.post("/v1/resolve", content=b'{"tape": 1}', headers=headers)
    assert protocol.answered == before + 1
    # A chunked body (no length) is left to uvicorn and the app.
    through_app = client.post("/v1/resolve", content=iter([b'{"tape": 1}']), headers=headers)
    assert protocol.answered == before + 1
    assert in_lane.status_code == through_app.status_code == 422
    assert in_lane.headers["content-type"] == through_app.headers["content-type"]
    assert in_lane.json() == through_app.json()
    missing = client.post("/v1/resolve", json=resolve_body("nope"), headers=AUTH)
    assert missing.status_code == 404
    assert missing.json()["type"].endswith("/not-found")


def test_an_oversized_body_is_refused_by_the_apps_body_limit(tmp_path: Path) -> None:
    app = create_app(load_settings(data_dir=tmp_path, max_body_bytes=1024))
    protocol = uvicorn_protocol(app)
    with serving(app, protocol) as (url, _), httpx.Client(base_url=url, trust_env=False) as client:
        refused = client.post("/v1/resolve", content=b"x" * (400 * 1024))
        assert refused.status_code == 413
        assert refused.headers["content-type"] == "application/problem+json"
        assert protocol.answered == 0


def _read_answers(sock: socket.socket, count: int) -> list[tuple[int, bytes]]:
    """`count` HTTP/1.1 answers read off `sock` in order: (status, body)."""
    return [(status, body) for status, _, body in _read_full_answers(sock, count)]


def _read_full_answers(
    sock: socket.socket, count: int
) -> list[tuple[int, dict[bytes, bytes], bytes]]:
    """`count` HTTP/1.1 answers read off `sock` in order: (status, headers, body)."""
    answers: list[tuple[int, dict[bytes, bytes], bytes]] = []
    body: list[bytes] = []
    headers: dict[bytes, bytes] = {}

    class Collector:
        def on_header(self, name: bytes, value: bytes) -> None:
            headers[name.lower()] = value

        def on_body(self, chunk: bytes) -> None:
            body.append(chunk)

        def on_message_complete(self) -> None:
            answers.append((parser.get_status_code(), dict(headers), b"".join(body)))
            body.clear()
            headers.clear()

    parser = httptools.HttpResponseParser(Collector())
    sock.settimeout(DEADLINE_SECONDS)
    while len(answers) < count:
        data = sock.recv(65536)
        if not data:
            break
        parser.feed_data(data)
    return answers


def _post(path: str, body: bytes, *, extra: str = "") -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: resolver\r\nAuthorization: Bearer {TOKEN}\r\n"
    return (head + extra + f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def test_pipelined_requests_are_answered_in_order(resolver: tuple[httpx.Client, Any]) -> None:
    client, protocol = resolver
    host, port = client.base_url.host, client.base_url.port
    assert port is not None
    first = httpx.Request("POST", "/", json=resolve_body("t", "/first")).read()
    third = httpx.Request("POST", "/", json=resolve_body("t", "/third")).read()
    before = protocol.answered
    pipelined = (
        _post("/v1/resolve", first)
        + b"GET /healthz HTTP/1.1\r\nHost: resolver\r\n\r\n"
        + _post("/v1/resolve", third)
    )
    with socket.create_connection((host, port)) as sock:
        sock.sendall(pipelined)
        answers = _read_answers(sock, 3)
    assert [status for status, _ in answers] == [200, 200, 200]
    assert b'"action":"forward"' in answers[0][1]
    assert b'"action"' not in answers[1][1]
    assert b'"action":"forward"' in answers[2][1]
    # The first went through the lane; the two behind it were queued by uvicorn.
    assert protocol.answered == before + 1


class Boom(Exception):
    """An error no exception handler claims."""


def _small_app(
    release: asyncio.Event | None = None, started: threading.Event | None = None
) -> tuple[FastAPI, type[Any]]:
    app = FastAPI()
    app.state.settings = SimpleNamespace(proxy_token=None)
    install_error_handlers(app)

    async def echo(_state: object, body: bytes) -> bytes:
        return b'{"echo":' + body + b"}"

    async def boom(_state: object, _body: bytes) -> bytes:
        raise Boom("unexpected")

    async def held(_state: object, body: bytes) -> bytes:
        assert release is not None and started is not None
        started.set()
        await release.wait()
        return b'{"held":' + body + b"}"

    routes = {"/v1/echo": echo, "/v1/boom": boom, "/v1/held": held}
    return app, protocol_for(app, routes, guard=check_proxy, max_body_bytes=1024)


def test_an_unhandled_error_is_a_500_problem_and_the_connection_serves_on() -> None:
    app, protocol = _small_app()
    with serving(app, protocol) as (url, _), httpx.Client(base_url=url, trust_env=False) as client:
        failed = client.post("/v1/boom", content=b"1")
        assert failed.status_code == 500
        assert failed.headers["content-type"] == "application/problem+json"
        assert "/v1/boom" in failed.json()["detail"]
        echoed = client.post("/v1/echo", content=b"2")
        assert echoed.json() == {"echo": 2}
        assert protocol.answered == 2


def test_a_graceful_shutdown_lets_a_lane_answer_finish_then_closes_the_connection() -> None:
    release, started, shutting_down = asyncio.Event(), threading.Event(), threading.Event()
    app, lane_protocol = _small_app(release, started)

    class Watched(lane_protocol):  # type: ignore[misc, valid-type]
        def shutdown(self) -> None:  # called by uvicorn on each connection as it shuts down
            super().shutdown()
            shutting_down.set()

    with serving(app, Watched) as (url, server):
        host, port = httpx.URL(url).host, httpx.URL(url).port
        assert port is not None
        with socket.create_connection((host, port)) as sock:
            sock.sendall(_post("/v1/held", b"7"))
            assert started.wait(DEADLINE_SECONDS), "the held request never started"
            loop = next(iter(server.server_state.tasks)).get_loop()
            server.should_exit = True
            assert shutting_down.wait(DEADLINE_SECONDS), "the server never began its shutdown"
            loop.call_soon_threadsafe(release.set)
            [(status, headers, body)] = _read_full_answers(sock, 1)
            assert (status, body) == (200, b'{"held":7}')
            assert headers[b"connection"] == b"close"
            assert sock.recv(1) == b""  # closed after the answer, not kept alive


def test_an_error_names_its_own_request_when_another_is_pipelined_behind_it() -> None:
    app, protocol = _small_app()
    with serving(app, protocol) as (url, _):
        host, port = httpx.URL(url).host, httpx.URL(url).port
        assert port is not None
        with socket.create_connection((host, port)) as sock:
            sock.sendall(_post("/v1/boom", b"1") + _post("/v1/other", b"2"))
            (status, failed), (status_behind, _) = _read_answers(sock, 2)
    assert status == 500
    assert "/v1/boom" in failed.decode()
    assert status_behind == 404  # the one behind went through uvicorn and the app's router
