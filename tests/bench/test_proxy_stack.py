"""Tests for the proxy measurement's own servers: the fixed upstream and the instant resolver."""

from __future__ import annotations

import asyncio
import base64
import json

import aiohttp

from bench.proxy_stack import BODY, instant_resolve_answer
from tests.bench.proxy_support import with_fixed_server


def test_instant_answer_serves_the_benchmark_body_as_a_shared_hit() -> None:
    answer = json.loads(instant_resolve_answer())
    assert (answer["action"], answer["decision"]) == ("serve", "shared")
    response = answer["response"]
    assert response["status"] == 200
    assert base64.b64decode(response["body"]) == BODY
    assert ["Content-Length", str(len(BODY))] in response["headers"]


def test_fixed_server_answers_every_request_on_one_connection() -> None:
    async def exercise(base: str) -> list[bytes]:
        connector = aiohttp.TCPConnector(limit=1)
        async with aiohttp.ClientSession(connector=connector) as session:
            bodies = []
            for index in range(3):
                async with session.get(f"{base}/item?i={index}") as response:
                    assert response.status == 200
                    bodies.append(await response.read())
            # A request with a body must be read past, or the next answer would be misaligned.
            async with session.post(f"{base}/write", data=b"x" * 50) as response:
                bodies.append(await response.read())
            async with session.get(f"{base}/after") as response:
                bodies.append(await response.read())
            return bodies

    assert asyncio.run(with_fixed_server(b'{"ok": 1}', exercise)) == [b'{"ok": 1}'] * 5
