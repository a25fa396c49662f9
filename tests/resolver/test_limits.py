"""The body-size guard: every route but the tape import refuses a huge body before reading it."""

from __future__ import annotations

import base64
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

with warnings.catch_warnings():
    # Starlette 1.x flags its httpx-based TestClient as deprecated; it still works as before.
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from resolver.app import create_app
from resolver.limits import JSON_ENVELOPE_BYTES, BodyLimit
from resolver.settings import load_settings

MAX_BODY_BYTES = 1000
LIMIT = MAX_BODY_BYTES * 4 // 3 + JSON_ENVELOPE_BYTES


class Recorder:
    """An ASGI app that notes what reached it (the route behind the guard)."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        self.bodies.append(body)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


@pytest.fixture
def inner() -> Recorder:
    return Recorder()


@pytest.fixture
def guarded(inner: Recorder) -> Iterator[TestClient]:
    # No `with`: the recorder has no lifespan to run.
    client = TestClient(BodyLimit(inner, max_body_bytes=MAX_BODY_BYTES))
    yield client
    client.close()


def _chunks(size: int, chunk: int = 64 * 1024) -> Iterator[bytes]:
    while size > 0:
        yield b"x" * min(chunk, size)
        size -= chunk


@pytest.mark.parametrize("path", ["/v1/tapes", "/v1/tapes/t/fork", "/v1/resolve"])
def test_a_declared_length_over_the_limit_is_refused_unread(
    guarded: TestClient, inner: Recorder, path: str
) -> None:
    reply = guarded.post(path, content=b"x" * (LIMIT + 1))
    assert reply.status_code == 413
    assert reply.headers["content-type"] == "application/problem+json"
    assert f"max_body_bytes={MAX_BODY_BYTES}" in reply.json()["detail"]
    assert inner.bodies == []


def test_a_chunked_body_over_the_limit_is_refused_unread(
    guarded: TestClient, inner: Recorder
) -> None:
    reply = guarded.post("/v1/tapes", content=_chunks(LIMIT + 1))
    assert reply.status_code == 413
    assert "sent in chunks" in reply.json()["detail"]
    assert inner.bodies == []


def test_bodies_within_the_limit_reach_the_route_whole(
    guarded: TestClient, inner: Recorder
) -> None:
    assert guarded.post("/v1/tapes", content=b"y" * LIMIT).status_code == 200
    assert guarded.post("/v1/tapes", content=_chunks(LIMIT, chunk=1000)).status_code == 200
    assert inner.bodies == [b"y" * LIMIT, b"x" * LIMIT]


def test_the_tape_import_is_not_limited_here(guarded: TestClient, inner: Recorder) -> None:
    reply = guarded.post("/v1/tapes/import", content=b"z" * (LIMIT + 1))
    assert reply.status_code == 200
    assert inner.bodies == [b"z" * (LIMIT + 1)]


def _app(data: Path, **settings: Any) -> TestClient:
    return TestClient(create_app(load_settings(data_dir=data, **settings)))


def _export_of_a_big_tape(data: Path) -> bytes:
    """An exported tape of one exchange with a 400 kB answer, recorded without a tight limit."""
    with _app(data) as roomy:
        assert roomy.post("/v1/tapes", json={"name": "big"}).status_code == 201
        asked = {
            "tape": "big",
            "branch": "root",
            "method": "GET",
            "host": "h",
            "port": 80,
            "path": "/big",
        }
        ticket = roomy.post("/v1/resolve", json=asked).json()["ticket"]
        answer = {"status": 200, "headers": [], "body": base64.b64encode(b"b" * 400_000).decode()}
        recorded = roomy.post("/v1/record", json={"ticket": ticket, "response": answer})
        assert recorded.status_code == 200, recorded.text
        exported = roomy.get("/v1/tapes/big/export")
        assert exported.status_code == 200
        return exported.content


def test_the_resolver_refuses_a_huge_admin_body_but_imports_a_big_tape(tmp_path: Path) -> None:
    export = _export_of_a_big_tape(tmp_path / "roomy")
    assert len(export) > LIMIT
    with _app(tmp_path / "tight", max_body_bytes=MAX_BODY_BYTES) as tight:
        refused = tight.post("/v1/tapes", json={"name": "n", "redact_headers": ["x" * LIMIT]})
        assert refused.status_code == 413
        assert refused.headers["content-type"] == "application/problem+json"
        assert "/v1/tapes" in refused.json()["detail"]
        assert tight.get("/v1/tapes/n").status_code == 404
        imported = tight.post("/v1/tapes/import?name=copy", content=export)
        assert imported.status_code == 201, imported.text
        assert imported.json()["exchanges"] == 1
