"""Unit tests for the counting upstream world: per-path call numbers and each fault route."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer

from bench.reliability.upstream import SECRET_COOKIE, create_app


def with_client(scenario: Callable[[TestClient], Awaitable[None]]) -> None:
    async def run() -> None:
        async with TestClient(TestServer(create_app(), host="127.0.0.1")) as client:
            await scenario(client)

    asyncio.run(run())


def test_item_calls_are_numbered_per_path_and_counted() -> None:
    async def scenario(client: TestClient) -> None:
        answers = []
        for path in ("/item/1", "/item/1", "/item/2"):
            response = await client.get(path, params={"q": "x"})
            assert response.status == 200
            answers.append(await response.json())
        assert [a["call"] for a in answers] == [1, 2, 1]
        assert answers[0] == {"path": "/item/1", "query": "q=x", "call": 1}
        stats = await (await client.get("/_stats")).json()
        assert stats == {"calls": 3, "by_path": {"/item/1": 2, "/item/2": 1}}

    with_client(scenario)


def test_bookkeeping_routes_are_not_counted() -> None:
    async def scenario(client: TestClient) -> None:
        assert (await client.get("/healthz")).status == 200
        await client.get("/_log")
        await client.get("/_headers", params={"path": "/nowhere"})
        stats = await (await client.get("/_stats")).json()
        assert stats["calls"] == 0

    with_client(scenario)


def test_post_is_a_write_with_its_byte_count() -> None:
    async def scenario(client: TestClient) -> None:
        response = await client.post("/docs/3", data=b"12345")
        assert response.status == 201
        assert await response.json() == {"written": "/docs/3", "bytes": 5, "call": 1}

    with_client(scenario)


@pytest.mark.parametrize("code", [404, 500, 503])
def test_status_route_answers_the_code_asked(code: int) -> None:
    async def scenario(client: TestClient) -> None:
        response = await client.get(f"/status/{code}")
        assert response.status == code
        assert await response.json() == {"world_error": code, "call": 1}

    with_client(scenario)


def test_big_route_answers_at_least_the_size_asked_of_repeated_path() -> None:
    async def scenario(client: TestClient) -> None:
        body = await (await client.get("/big/a", params={"size": "1000"})).read()
        assert len(body) >= 1000
        assert len(body) < 1000 + len(b"/big/a|") + 1
        assert set(body.split(b"|")[:-1]) == {b"/big/a"}

    with_client(scenario)


def test_cookie_route_sets_the_secret_cookie() -> None:
    async def scenario(client: TestClient) -> None:
        response = await client.get("/cookie")
        assert response.headers["Set-Cookie"] == SECRET_COOKIE

    with_client(scenario)


def test_echo_and_headers_routes_show_what_was_sent() -> None:
    async def scenario(client: TestClient) -> None:
        echoed = await (await client.get("/echo", headers={"X-Probe": "alpha"})).json()
        assert ["X-Probe", "alpha"] in echoed["headers"]
        await client.get("/item/9", headers={"X-Probe": "beta"})
        seen = await (await client.get("/_headers", params={"path": "/item/9"})).json()
        assert ["X-Probe", "beta"] in seen["headers"]

    with_client(scenario)


def test_log_lists_method_and_path_in_order() -> None:
    async def scenario(client: TestClient) -> None:
        await client.get("/item/1")
        await client.post("/docs/1", data=b"x")
        log = (await (await client.get("/_log")).json())["log"]
        assert [entry[1:] for entry in log] == [["GET", "/item/1"], ["POST", "/docs/1"]]

    with_client(scenario)


def test_reset_route_drops_the_connection_but_counts_the_call() -> None:
    async def scenario(client: TestClient) -> None:
        with pytest.raises(aiohttp.ClientError):
            await (await client.get("/reset/1")).read()
        stats = await (await client.get("/_stats")).json()
        assert stats["by_path"] == {"/reset/1": 1}

    with_client(scenario)


def test_slow_once_sleeps_only_on_the_first_call() -> None:
    async def scenario(client: TestClient) -> None:
        # A first call with a huge delay must time out; the second must answer at once.
        with pytest.raises(TimeoutError):
            await client.get(
                "/slow-once/a", params={"delay": "30"}, timeout=aiohttp.ClientTimeout(total=0.3)
            )
        response = await client.get("/slow-once/a", params={"delay": "30"})
        assert (await response.json())["call"] == 2

    with_client(scenario)


@pytest.mark.parametrize("chunked", [False, True])
def test_download_streams_the_asked_size_with_or_without_a_length(chunked: bool) -> None:
    async def scenario(client: TestClient) -> None:
        query = {"size": "200000", **({"chunked": "1"} if chunked else {})}
        response = await client.get("/download/x", params=query)
        body = await response.read()
        assert len(body) == 200000 and set(body) == {ord("d")}
        assert ("Content-Length" in response.headers) is not chunked
        assert (response.headers.get("Transfer-Encoding") == "chunked") is chunked

    with_client(scenario)
