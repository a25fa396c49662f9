"""Tests for the proxy measurement's load: URLs, proxy identities, GETs through a proxy, turns."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bench.proxy_load import interleaved, load, post_tool_call, proxy_with_identity, urls_for
from bench.proxy_stack import BODY
from tests.bench.proxy_support import with_fixed_server


def test_urls_are_distinct_per_client_and_tagged() -> None:
    urls = urls_for("http://127.0.0.1:1", 3, 4, "n3")
    assert [len(sequence) for sequence in urls] == [4, 4, 4]
    flat = [url for sequence in urls for url in sequence]
    assert len(set(flat)) == 12
    assert urls[2][1] == "http://127.0.0.1:1/item?c=2&i=1&t=n3"


def test_proxy_identity_escapes_the_branch_separator() -> None:
    url = proxy_with_identity(8080, "perf", "root/b1/c2")
    assert url == "http://perf:root%2Fb1%2Fc2@127.0.0.1:8080"


def test_load_through_no_proxy_counts_every_request() -> None:
    async def exercise(base: str) -> dict[str, float]:
        return await load([None, None], urls_for(base, 2, 3, "t"))

    summary = asyncio.run(with_fixed_server(BODY, exercise))
    assert summary["requests"] == 6
    assert summary["p50_ms"] <= summary["p90_ms"]


def test_load_refuses_a_non_200_answer() -> None:
    async def exercise(base: str) -> dict[str, float]:
        return await load([None], [[f"{base}/x", f"{base}/y"]])

    async def run() -> None:
        # A server with no routes answers 404 to everything: a broken path.
        app = web.Application()
        async with TestServer(app, host="127.0.0.1") as server:
            await exercise(str(server.make_url("")).rstrip("/"))

    with pytest.raises(RuntimeError, match="answered 404"):
        asyncio.run(run())


def test_interleaved_conditions_take_turns_over_slices_of_every_clients_urls() -> None:
    async def exercise(base: str) -> dict[str, dict[str, float]]:
        conditions = [("first", [None, None]), ("second", [None, None])]
        return await interleaved(conditions, urls_for(base, 2, 6, "t"), slices=3)

    measured = asyncio.run(with_fixed_server(BODY, exercise))
    assert set(measured) == {"first", "second"}
    assert all(numbers["requests"] == 12 for numbers in measured.values())


def test_tool_calls_post_a_jsonrpc_call_naming_the_url_with_a_fresh_id_each() -> None:
    seen: list[dict] = []

    async def handle(request: web.Request) -> web.Response:
        seen.append(await request.json())
        return web.Response(text="{}")

    async def run() -> dict[str, dict[str, float]]:
        app = web.Application()
        app.router.add_post("/{tail:.*}", handle)
        async with TestServer(app, host="127.0.0.1") as server:
            base = str(server.make_url("")).rstrip("/")
            return await interleaved(
                [("mcp", [None])], [[f"{base}/a", f"{base}/b"]], 2, post_tool_call
            )

    measured = asyncio.run(run())
    assert measured["mcp"]["requests"] == 2
    assert [call["params"]["arguments"]["url"].rsplit("/", 1)[1] for call in seen] == ["a", "b"]
    assert {call["method"] for call in seen} == {"tools/call"}
    assert seen[0]["id"] != seen[1]["id"]
