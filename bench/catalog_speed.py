"""What looking up the tool catalog adds to a hit (issue 56: under 3%), measured alone.

Two tapes under the `rules` model, identical but for the `catalog` setting, each with the same
rule making `POST /search` a read: on one the shipped catalog applies (every draft looks the
request's host up and, on a catalog route like Tavily's, reads its JSON body for the query and
noise fields; the tape's rule still wins), on the other it is off. The proxy maps the catalog's
real host name, `api.tavily.com`, to a local stand-in (`--map-host`), so the request is the one
the catalog was written for. Each round forks a fresh branch of each tape; each address its
sibling recorded is then asked on both branches in turn (each ask a hit), the one going first
alternating by address;
the row is the median over rounds of (catalog on p50 / catalog off p50), with a bootstrap
interval over the rounds. One run, interleaved: the ratio, never the milliseconds, is the claim.

    python -m bench.catalog_speed [--quick] [--rounds R] [--addresses N] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import statistics
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiohttp

from bench import intervals
from bench.harness import start_child
from bench.proxy_load import load_session, proxy_with_identity
from bench.proxy_stack import (
    fork_children,
    open_tape,
    resolver_arguments,
    serve_fixed,
    start_proxy,
)
from groundhog.launcher import free_port
from groundhog.protocol.headers import DECISION

logger = logging.getLogger("bench.catalog_speed")

CATALOG_HOST = "api.tavily.com"
BUDGET = 1.03
SEARCH_BODY = json.dumps({"query": "groundhog", "max_results": 5}).encode()  # a Tavily search
RULE = {"method": "POST", "host": CATALOG_HOST, "path": "/search", "reads": ["search"]}
CONDITIONS = {"catalog on": {}, "catalog off": {"catalog": {"enabled": False}}}


def row(per_round: Sequence[tuple[float, float]]) -> dict[str, Any]:
    """The speed row from each round's (catalog on p50, catalog off p50), in seconds."""
    if not per_round:
        raise ValueError("no rounds measured")
    ratios = [on / off for on, off in per_round]
    interval = intervals.mean(ratios)
    return {
        "name": "catalog lookup on a hit (catalog on / off, p50)",
        "rounds": len(ratios),
        "ratio_median": statistics.median(ratios),
        "ratio_mean": interval["value"],
        "ratio_interval_95": [interval["low"], interval["high"]],
        "on_p50_ms": 1000 * statistics.median(on for on, _ in per_round),
        "off_p50_ms": 1000 * statistics.median(off for _, off in per_round),
        "budget": BUDGET,
        "within_budget": interval["high"] is not None and interval["high"] < BUDGET,
    }


async def _ask(
    session: aiohttp.ClientSession, proxy: str, url: str, loop: asyncio.AbstractEventLoop
) -> float:
    """Ask `url` once (a Tavily search); its latency, in seconds."""
    started = loop.time()
    async with session.post(
        url, data=SEARCH_BODY, headers={"Content-Type": "application/json"}, proxy=proxy
    ) as answer:
        await answer.read()
        if answer.status != 200:
            raise RuntimeError(f"{url} answered {answer.status}")
        if answer.headers.get(DECISION) not in ("recorded", "shared"):
            raise RuntimeError(f"{url}: {answer.headers.get(DECISION)}")
    return loop.time() - started


async def measure(proxy_port: int, resolver_url: str, rounds: int, addresses: int) -> list:
    """Per round, (catalog on p50, catalog off p50): each address asked on both tapes in
    turn, the one going first alternating, so drift of a shared machine hits both alike."""
    loop = asyncio.get_running_loop()
    urls = [f"http://{CATALOG_HOST}/search?n={index}" for index in range(addresses)]
    tapes = {name: f"catalog-speed-{index}" for index, name in enumerate(CONDITIONS)}
    async with load_session() as session:
        for name, tape in tapes.items():
            config = {"dependency_model": "rules", "rules": [RULE], **CONDITIONS[name]}
            [recorder] = open_tape(resolver_url, tape, 1, config)
            for url in urls:
                await _ask(session, proxy_with_identity(proxy_port, tape, recorder), url, loop)
        per_round = []
        for _ in range(rounds):
            proxies = {}
            for name, tape in tapes.items():
                [branch] = fork_children(resolver_url, tape, 1)
                proxies[name] = proxy_with_identity(proxy_port, tape, branch)
            latencies: dict[str, list[float]] = {name: [] for name in CONDITIONS}
            for index, url in enumerate(urls):
                order = list(CONDITIONS) if index % 2 == 0 else list(reversed(CONDITIONS))
                for name in order:
                    latencies[name].append(await _ask(session, proxies[name], url, loop))
            per_round.append(
                (
                    statistics.median(latencies["catalog on"]),
                    statistics.median(latencies["catalog off"]),
                )
            )
    return per_round


def run(rounds: int, addresses: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch, contextlib.ExitStack() as stack:
        work = Path(scratch)
        stand_in_port = free_port()
        loop = asyncio.new_event_loop()
        listening = asyncio.Event()
        serving = loop.create_task(
            serve_fixed("127.0.0.1", stand_in_port, b'{"results": []}', listening)
        )
        thread = threading.Thread(target=loop.run_forever, daemon=True)
        thread.start()
        stack.callback(lambda: loop.call_soon_threadsafe(serving.cancel))
        resolver = start_child("resolver", resolver_arguments(work, None), health="http",
                               log_dir=work)  # fmt: skip
        stack.callback(resolver.stop)
        mapping = f"{CATALOG_HOST}=127.0.0.1:{stand_in_port}"
        proxy = start_proxy("proxy", resolver.url, work, "--map-host", mapping)
        stack.callback(proxy.stop)
        per_round = asyncio.run(measure(proxy.port, resolver.url, rounds, addresses))
    return row(per_round)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.catalog_speed", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="20 rounds of 100 addresses")
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--addresses", type=int, default=200)
    parser.add_argument("--json", type=Path, default=None, help="also write the row here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    rounds, addresses = (20, 100) if args.quick else (args.rounds, args.addresses)
    result = run(rounds, addresses)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
