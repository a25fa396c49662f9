"""The load a proxy measurement sends: GETs of new addresses through a proxy, timed.

Every row of `bench.proxy_perf` is clients asking an upstream's URLs through some proxy (or
none): mitmdump, Groundhog as a branch, a sidecar. They must all be asked the same way — one
aiohttp session per condition, the same negotiation headers (they join the request key), each
answer read to its end and anything but a 200 a failure, not a fast row — and the record and hit
paths take turns with their baseline (`interleaved`, on `bench.load.take_turns`).
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Awaitable, Callable, Sequence

import aiohttp

from bench.harness import LOOPBACK
from bench.load import SLICES, SliceRun, slice_of, summary, take_turns, timed, timed_concurrently
from groundhog.worker_env import proxy_url_with_credentials

# Negotiation headers join the request key: the load's clients send exactly these, and the
# resolver asked directly is asked with the same, so both look up the same addresses.
NEGOTIATION_HEADERS = {"Accept": "*/*", "Accept-Encoding": "identity"}


def load_session(*, force_close: bool = False) -> aiohttp.ClientSession:
    """The load's client: unlimited connections, no proxy variables, the negotiation headers
    (`force_close`: a new connection for every request instead of kept-alive ones)."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0, force_close=force_close),
        trust_env=False,
        headers=NEGOTIATION_HEADERS,
        skip_auto_headers=("User-Agent",),
    )


async def get_ok(session: aiohttp.ClientSession, proxy: str | None, url: str) -> None:
    """GET `url` through `proxy` (None: directly) and read the answer; raise unless a 200."""
    async with session.get(url, proxy=proxy) as response:
        await response.read()
        if response.status != 200:
            raise RuntimeError(f"{url} via {proxy} answered {response.status}")


_call_ids = itertools.count()


async def post_tool_call(session: aiohttp.ClientSession, proxy: str | None, url: str) -> None:
    """An MCP `tools/call` of `search` naming `url`, POSTed to it (the fixed upstream answers
    any request); raise unless a 200. Each call has its own JSON-RPC id, as a client's would:
    the id leaves the request key, so siblings' calls still meet at one address."""
    call = {
        "jsonrpc": "2.0",
        "id": next(_call_ids),
        "method": "tools/call",
        "params": {"name": "search", "arguments": {"url": url}},
    }
    body = json.dumps(call).encode()
    headers = {"Content-Type": "application/json"}
    async with session.post(url, data=body, headers=headers, proxy=proxy) as response:
        await response.read()
        if response.status != 200:
            raise RuntimeError(f"tools/call {url} via {proxy} answered {response.status}")


Asker = Callable[[aiohttp.ClientSession, str | None, str], Awaitable[None]]


async def load(proxies: Sequence[str | None], urls: list[list[str]]) -> dict[str, float]:
    """Client i asks its urls in order, one at a time, through proxies[i]; all clients at once."""
    async with load_session() as session:

        async def ask(proxy: str | None, url: str) -> None:
            await get_ok(session, proxy, url)

        return await timed_concurrently(ask, proxies, urls)


async def interleaved(
    conditions: Sequence[tuple[str, Sequence[str | None]]],
    urls: list[list[str]],
    slices: int = SLICES,
    asks: Asker = get_ok,
) -> dict[str, dict[str, float]]:
    """Each condition (name, one proxy per client) asks `urls`, the conditions taking turns
    slice by slice (`bench.load.take_turns`): client i asks its slice of urls[i]; `asks`: how
    (a GET, or an MCP `tools/call`)."""
    async with contextlib.AsyncExitStack() as stack:
        sessions = {name: await stack.enter_async_context(load_session()) for name, _ in conditions}

        def turn(name: str, proxies: Sequence[str | None]) -> SliceRun:
            session = sessions[name]

            async def ask(proxy: str | None, url: str) -> None:
                await asks(session, proxy, url)

            async def run(index: int) -> tuple[list[float], float]:
                part = [slice_of(sequence, index, slices) for sequence in urls]
                return await timed(ask, proxies, part)

            return run

        taken = await take_turns(
            {name: turn(name, proxies) for name, proxies in conditions}, slices
        )
    return {name: summary(*numbers) for name, numbers in taken.items()}


def urls_for(base: str, clients: int, per_client: int, tag: str) -> list[list[str]]:
    """`per_client` new addresses under `base` for each of `clients`, none shared, all tagged."""
    return [[f"{base}/item?c={c}&i={i}&t={tag}" for i in range(per_client)] for c in range(clients)]


def proxy_with_identity(port: int, tape: str, branch: str) -> str:
    """The proxy on `port` with `tape` and `branch` as its credentials (how workers name them)."""
    return proxy_url_with_credentials(f"http://{LOOPBACK}:{port}", tape, branch)
