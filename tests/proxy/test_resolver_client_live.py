"""proxy/resolver_client.py against a real resolver: a frozen resolver is a quick 503, and a
slow single-flight fetch that renews its lease is made once and shared byte for byte.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest
from aiohttp import web

from proxy.resolver_client import ResolverClient, ResolverUnavailable
from tests.proxy.stack import running_stack
from tests.proxy.upstream_server import Upstream
from tests.support.servers import ServerProcess, running_server

SLOW_SECONDS = 4.0


@pytest.fixture(scope="module")
def one_second_lease(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    env = {"GROUNDHOG_CLAIM_LEASE_SECONDS": "1", "GROUNDHOG_RESOLVE_WAIT_SECONDS": "3"}
    data = tmp_path_factory.mktemp("lease-resolver")
    with running_server(["resolver", "--data", str(data)], env=env) as server:
        yield server


def _frozen(server: ServerProcess):
    """SIGSTOP the resolver for the block (it holds its sockets open but answers nothing)."""
    os.kill(server.process.pid, signal.SIGSTOP)
    return _Thaw(server)


class _Thaw:
    def __init__(self, server: ServerProcess) -> None:
        self.server = server

    def __enter__(self) -> None:
        return None

    def __exit__(self, *_exc: object) -> None:
        os.kill(self.server.process.pid, signal.SIGCONT)


def test_a_frozen_resolver_gives_the_worker_a_503_within_the_resolve_timeout(
    tmp_path: Path, upstream: Upstream
) -> None:
    with running_stack(tmp_path, "--resolve-timeout", "1") as stack:
        tape = stack.open_tape()
        with _frozen(stack.resolver):
            reply = httpx.get(
                upstream.url + "/frozen",
                proxy=stack.proxy.url,
                headers={"X-Groundhog-Tape": tape, "X-Groundhog-Branch": "root"},
                timeout=60,  # generous: the 90 s hang of issue 12 would still fail it
                trust_env=False,
            )
        assert reply.status_code == 503
        assert reply.json()["type"].endswith("/resolver-unavailable")
        assert reply.elapsed.total_seconds() < 30
        assert upstream.state.count("/frozen") == 0


def test_the_client_times_a_frozen_resolver_out_as_unavailable(
    one_second_lease: ServerProcess,
) -> None:
    client = ResolverClient(one_second_lease.url, resolve_timeout=0.5)

    async def ask() -> None:
        try:
            await client.resolve(
                {"tape": "t", "branch": "root", "method": "GET", "host": "h", "port": 80}
            )
        finally:
            await client.close()

    with _frozen(one_second_lease), pytest.raises(ResolverUnavailable, match="Timeout"):
        asyncio.run(ask())


async def _slow_world(calls: list[int]) -> web.AppRunner:
    draws = itertools.count(1)

    async def slow(_request: web.Request) -> web.Response:
        calls.append(1)
        draw = next(draws)
        await asyncio.sleep(SLOW_SECONDS)  # the world is slow: four lease lengths
        return web.Response(body=f"draw {draw}".encode(), headers={"Set-Cookie": "s=1"})

    app = web.Application()
    app.router.add_get("/slow", slow)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner


def _payload(tape: str, branch: str, port: int) -> dict[str, Any]:
    return {
        "tape": tape,
        "branch": branch,
        "method": "GET",
        "scheme": "http",
        "host": "127.0.0.1",
        "port": port,
        "path": "/slow",
    }


async def _ask(
    client: ResolverClient, http: aiohttp.ClientSession, payload: dict, renew: bool
) -> tuple[str, bytes]:
    """What the proxy does: resolve; on forward fetch (renewing), record, serve the answer."""
    answer = await client.resolve(payload)
    if answer["action"] == "serve":
        return answer["decision"], base64.b64decode(answer["response"]["body"])
    ticket, lease = answer["ticket"], answer["lease_seconds"]

    async def keep() -> None:
        while renew and await client.renew(ticket) is not None:
            await asyncio.sleep(lease / 3)

    keeper = asyncio.create_task(keep())
    url = f"http://127.0.0.1:{payload['port']}/slow"
    async with http.get(url) as response:
        body = await response.read()
        headers = [[name, value] for name, value in response.headers.items()]
    keeper.cancel()
    sent = {"status": response.status, "headers": headers, "body": base64.b64encode(body).decode()}
    recorded = await client.record({"ticket": ticket, "response": sent})
    served = recorded["response"]
    served_body = body if served["body"] is None else base64.b64decode(served["body"])
    assert all(name.lower() != "set-cookie" for name, _v in served["headers"])
    return recorded["decision"], served_body


def _run_group(url: str, tape: str, renew: bool) -> tuple[list[tuple[str, bytes]], int]:
    admin = httpx.Client(base_url=url, trust_env=False, timeout=30)
    admin.post("/v1/tapes", json={"name": tape}).raise_for_status()
    branches = admin.post(f"/v1/tapes/{tape}/fork", json={"children": 4}).json()["branches"]

    async def group() -> tuple[list[tuple[str, bytes]], int]:
        calls: list[int] = []
        runner = await _slow_world(calls)
        port = runner.addresses[0][1]
        client = ResolverClient(url, resolve_timeout=5, wait_timeout=10)
        try:
            async with aiohttp.ClientSession() as http:
                served = await asyncio.gather(
                    *(_ask(client, http, _payload(tape, b, port), renew) for b in branches)
                )
        finally:
            await client.close()
            await runner.cleanup()
        return list(served), len(calls)

    return asyncio.run(group())


def test_a_slow_fetch_that_renews_is_made_once_and_every_asker_gets_the_stored_bytes(
    one_second_lease: ServerProcess,
) -> None:
    served, calls = _run_group(one_second_lease.url, "slow-renewed", renew=True)
    assert calls == 1
    assert sorted(decision for decision, _b in served) == ["recorded"] + ["shared"] * 3
    assert len({body for _d, body in served}) == 1


@pytest.mark.slow
def test_without_renewals_the_same_slow_fetch_is_taken_over(
    one_second_lease: ServerProcess,
) -> None:
    """The control: the check above can fail — a holder that stops renewing loses its claim."""
    served, calls = _run_group(one_second_lease.url, "slow-unrenewed", renew=False)
    assert calls >= 2
    # Even then, first recording wins: every asker is served the stored bytes.
    assert len({body for _d, body in served}) == 1
