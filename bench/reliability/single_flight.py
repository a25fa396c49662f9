"""A slow upstream fetch under single flight, driven through the proxy's own resolver client.

Issue 12 item 2: a fetch slower than the claim was made twice and the second asker got
bytes its siblings never saw. Here a group of askers resolves one address at once; the asker
that gets `forward` fetches from a world four claim lengths slow, renewing its claim (or not,
for the control), records, and serves what `/v1/record` answers, as the proxy does. The figures
say how many world calls were made and whether every asker got the same, stored bytes.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
from typing import Any

import aiohttp
import httpx
from aiohttp import web

from engine.redaction_rules import PLACEHOLDER_MARK
from groundhog.protocol.wire import ResolveAsk, WireResponse
from proxy.resolver_client import ResolverClient, ResolverProtocolError

SLOW_SECONDS = 4.0


async def _slow_world(calls: list[int]) -> web.AppRunner:
    draws = itertools.count(1)

    async def slow(_request: web.Request) -> web.Response:
        calls.append(1)
        draw = next(draws)  # a new draw per call: a second fetch would show in the bytes
        await asyncio.sleep(SLOW_SECONDS)
        return web.Response(body=f"draw {draw}".encode(), headers={"Set-Cookie": "s=1"})

    app = web.Application()
    app.router.add_get("/slow", slow)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner


def _payload(tape: str, branch: str, port: int) -> ResolveAsk:
    return {
        "tape": tape,
        "branch": branch,
        "method": "GET",
        "scheme": "http",
        "host": "127.0.0.1",
        "port": port,
        "path": "/slow",
        "query": [],
        "headers": [],
        "body": "",
        "body_too_large": False,
    }


def _served(response: WireResponse | None, route: str) -> WireResponse:
    if response is None:
        raise ResolverProtocolError(f"{route} answered without a response")
    return response


async def _fetch(http: aiohttp.ClientSession, port: int) -> dict[str, Any]:
    async with http.get(f"http://127.0.0.1:{port}/slow") as response:
        body = await response.read()
        headers = [[name, value] for name, value in response.headers.items()]
    return {"status": response.status, "headers": headers, "body": base64.b64encode(body).decode()}


async def ask_as_the_proxy(
    client: ResolverClient, http: aiohttp.ClientSession, payload: ResolveAsk, renew: bool
) -> dict[str, Any]:
    """Resolve; on forward fetch (renewing every claim/3), record, serve what record answers."""
    answer = await client.resolve(payload)
    if answer["action"] == "serve":
        response = _served(answer["response"], "/v1/resolve")
        if response["body"] is None:
            raise ResolverProtocolError("/v1/resolve served a response without a body")
        return {
            "decision": answer["decision"],
            "body": base64.b64decode(response["body"]),
            "headers": response["headers"],
        }
    ticket, claim_seconds = answer["ticket"], answer["claim_seconds"]
    if ticket is None:
        raise ResolverProtocolError("/v1/resolve answered forward without a ticket")

    async def keep() -> None:
        while renew and await client.renew(ticket) is not None:
            await asyncio.sleep(claim_seconds / 3)

    keeper = asyncio.create_task(keep())
    try:
        sent = await _fetch(http, payload["port"])
    finally:
        keeper.cancel()
    recorded = await client.record({"ticket": ticket, "response": sent})
    served = _served(recorded["response"], "/v1/record")
    body = served["body"] if served["body"] is not None else sent["body"]
    return {
        "decision": recorded["decision"],
        "body": base64.b64decode(body),
        "headers": served["headers"],
    }


def run_slow_group(resolver_url: str, tape: str, *, renew: bool, askers: int = 4) -> dict[str, Any]:
    """`askers` branches ask one slow address at once; figures for the report."""
    admin = httpx.Client(base_url=resolver_url, trust_env=False, timeout=30)
    admin.post("/v1/tapes", json={"name": tape}).raise_for_status()
    forked = admin.post(f"/v1/tapes/{tape}/fork", json={"children": askers})
    branches = forked.json()["branches"]
    admin.close()

    async def group() -> tuple[list[dict[str, Any]], int]:
        calls: list[int] = []
        runner = await _slow_world(calls)
        port = runner.addresses[0][1]
        client = ResolverClient(resolver_url, resolve_timeout=5, wait_timeout=30)
        try:
            async with aiohttp.ClientSession() as http:
                served = await asyncio.gather(
                    *(
                        ask_as_the_proxy(client, http, _payload(tape, b, port), renew)
                        for b in branches
                    )
                )
        finally:
            await client.close()
            await runner.cleanup()
        return list(served), len(calls)

    served, calls = asyncio.run(group())
    decisions = sorted(answer["decision"] for answer in served)
    return {
        "renewed": renew,
        "askers": askers,
        "world_calls": calls,
        "decisions": decisions,
        "distinct_bodies": len({answer["body"] for answer in served}),
        # The tape keeps a Set-Cookie as a keyed placeholder (the proxy serves it to no reader);
        # a real cookie in an answer served to another branch would hand it that sandbox.
        "set_cookie_served": any(
            name.lower() == "set-cookie" and PLACEHOLDER_MARK not in value
            for answer in served
            for name, value in answer["headers"]
        ),
    }
