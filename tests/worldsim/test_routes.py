"""Unit tests of worldsim/routes.py: the public endpoints as thin adapters over the world."""

from __future__ import annotations

import asyncio
import json

import pytest
from starlette.requests import Request

from worldsim.errors import BodyTooLarge
from worldsim.routes import read_body

from .conftest import TestClient

BRIEF = {"id": "brief-wind", "topic": "wind", "title": "Wind brief", "sources": ["d06"]}


def _request(chunks: list[bytes], headers: dict[str, str]) -> Request:
    pending = [{"type": "http.request", "body": c, "more_body": True} for c in chunks]
    pending.append({"type": "http.request", "body": b"", "more_body": False})

    async def receive() -> dict[str, object]:
        return pending.pop(0)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/docs",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }
    return Request(scope, receive)


def test_read_body_joins_chunks_under_the_limit() -> None:
    request = _request([b"ab", b"cd"], {})
    assert asyncio.run(read_body(request, 4)) == b"abcd"


def test_read_body_refuses_a_declared_length_before_reading() -> None:
    request = _request([b"x"], {"Content-Length": "11"})
    with pytest.raises(BodyTooLarge) as raised:
        asyncio.run(read_body(request, 10))
    assert raised.value.detail == "the body declares 11 bytes; the limit is 10"
    assert raised.value.extras == {"limit": 10}


def test_read_body_refuses_a_stream_that_passes_the_limit() -> None:
    request = _request([b"12345", b"678901"], {"Content-Length": "bogus"})
    with pytest.raises(BodyTooLarge, match="passed the limit of 10 bytes"):
        asyncio.run(read_body(request, 10))


def test_reads_answer_the_worlds_bytes_and_headers(client: TestClient) -> None:
    first = client.get("/docs/d01", headers={"X-Groundhog-Branch": "root/a"})
    assert first.status_code == 200
    assert first.headers["content-type"].startswith("application/json")
    assert json.loads(first.content)["id"] == "d01"
    again = client.get("/docs/d01", headers={"X-Groundhog-Branch": "root/b"})
    assert again.content == first.content


def test_publish_is_201_and_visible_only_in_its_branch(client: TestClient) -> None:
    created = client.post("/docs", json=BRIEF, headers={"X-Groundhog-Branch": "root/w"})
    assert created.status_code == 201
    assert client.get("/docs/brief-wind", headers={"X-Groundhog-Branch": "root/w"}).is_success
    assert (
        client.get("/docs/brief-wind", headers={"X-Groundhog-Branch": "root/o"}).status_code == 404
    )


@pytest.mark.parametrize(
    ("path", "params"),
    [("/search", {}), ("/search", {"q": ""}), ("/review", {}), ("/review", {"doc": "x" * 65})],
)
def test_required_query_parameters_are_validated(
    client: TestClient, path: str, params: dict[str, str]
) -> None:
    assert client.get(path, params=params).status_code == 422


def test_the_seed_header_changes_exogenous_reads(client: TestClient) -> None:
    seven = client.get("/trends", headers={"X-Groundhog-Seed": "7"}).content
    eight = client.get("/trends", headers={"X-Groundhog-Seed": "8"}).content
    assert seven != eight
    bad = client.get("/trends", headers={"X-Groundhog-Seed": "x"})
    assert bad.status_code == 422 and "must be an integer" in bad.json()["detail"]
