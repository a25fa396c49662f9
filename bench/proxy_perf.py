"""How much the Groundhog proxy costs per request, against mitmproxy itself in the same run.

Every worker request goes through the proxy, so its latency and throughput bound a rollout's
speed. This script measures, at 1 and 8 concurrent clients over plain HTTP on loopback:
the upstream directly; mitmdump with no addon; mitmdump's own server replay
(`server_replay_reuse`); Groundhog's record path (resolve, live fetch, record) and hit path
(served from tape) through the real resolver (a proxy with `groundhog_branch_leases=false`),
and through a proxy taking branch leases (the default since issue 54: its first ask of an
address, then a sibling's, which it answers itself); four sibling branches asking one new address
at once (one records, three wait on it; latency is the group's last answer, against one plain
forward through mitmdump) and, taking turns with it, four concurrent plain forwards of four new
addresses through mitmdump with no addon (the group's last answer): mitmproxy spends several ms
of CPU per flow in one Python thread, so four flows at once cannot finish as soon as one, and
the siblings row is reported against both; the same two groups as deployed, one sidecar proxy
per worker (four Groundhog proxies sharing the resolver, and four mitmdumps); the resolver's
hit alone (asked directly, with the
proxy's own client, proxy/resolver_http.py, and with aiohttp and httpx, the general clients it
replaced); the hit path against an
instant stand-in resolver, which isolates the proxy's own cost; and the branch capability
check alone (`bench.capability_cost`: a hit under `required` presenting the capability against
one under `optional`, alternating rounds, as a ratio with an interval; goal under 1.05x).
Ratios are against mitmdump with no addon and against server replay, measured in the same run;
the record and hit paths take turns with mitmdump slice by slice, so a neighbour's load falls
on both. Goals (issue 18):
hit p50 within 1.15x of no-addon and throughput at least 1.0x; recorded miss p50 within 2.0x
and throughput at least 0.6x; four siblings' last answer within 1.3x of one plain forward.

The resolver keeps its tapes in a fresh SQLite file, or in the database `--database-url` names
(PostgreSQL, the many-node store); tape names carry the run's time, so a database holding
earlier runs' tapes is fine, and the run deletes its tapes from such a database at the end.

    python -m bench.proxy_perf [--quick] [--repeat N] [--json out.json] [--database-url URL]

The processes are `bench.proxy_stack`'s, the load `bench.proxy_load`'s, the siblings' groups
`bench.proxy_groups`'s and the rows and table `bench.proxy_rows`'s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import aiohttp
import httpx

from bench import capability_cost
from bench.harness import LOOPBACK, ChildService, cpu_seconds, start_child
from bench.load import timed_concurrently
from bench.proxy_groups import GROUP, group_conditions
from bench.proxy_load import (
    NEGOTIATION_HEADERS,
    interleaved,
    load,
    post_tool_call,
    proxy_with_identity,
    urls_for,
)
from bench.proxy_rows import NO_ADDON, REPLAY, median_rows, ratio_row, store_label, table
from bench.proxy_stack import (
    BODY,
    child_processes,
    delete_tapes,
    instant_resolve_answer,
    open_tape,
    serve_fixed,
    start_mitmdump,
    start_proxy,
    start_sidecars,
    start_upstream_and_resolver,
)
from groundhog.protocol.wire import ResolveAsk
from proxy.options import SECONDS_OPTIONS
from proxy.resolver_client import ResolverClient

logger = logging.getLogger("bench.proxy_perf")

CONCURRENCY = (1, 8)
MCP_RECORD = "groundhog MCP tools/call record path"
MCP_HIT = "groundhog MCP tools/call hit path"
MCP_NO_ADDON = "mitmproxy (no addon), MCP tools/call"
PROXY_CLIENT = "proxy's client"
LEASED_FIRST = "groundhog hit path, leased sidecar, first ask of an address"
LEASED_HIT = "groundhog hit path, leased sidecar"
LEASES_ON = ("--set", "groundhog_branch_leases=true")  # the default since issue 54; said anyway
# The resolver path: every hit asked of the resolver, as before leases were the default.
LEASES_OFF = ("--set", "groundhog_branch_leases=false")
RESOLVER_CPU = "resolver CPU per 1000 hits"
# After the leased hits, their shipped batches land within a ship window (and a round trip).
SHIPPED_WITHIN_SECONDS = SECONDS_OPTIONS["groundhog_lease_ship_seconds"][0] + 0.5


def measure(quick: bool = False, database_url: str | None = None) -> list[dict[str, Any]]:
    """Rows of {condition, clients, requests, p50_ms, p90_ms, throughput_rps, ratios, store}.

    `database_url` gives the resolver that store instead of a fresh SQLite file.
    """
    total = 160 if quick else 800
    run = time.time_ns()  # a database may hold earlier (or concurrent) runs' tapes
    tapes = {clients: f"perf{clients}-{run}" for clients in CONCURRENCY}
    siblings_tape = f"perf-siblings-{run}"
    capability_tape = f"perf-capability-{run}"
    rows: list[dict[str, Any]] = []
    with (
        tempfile.TemporaryDirectory(prefix="gh-proxy-perf-") as temporary,
        child_processes() as kids,
    ):
        work = Path(temporary)
        upstream, resolver = start_upstream_and_resolver(work, database_url, kids)
        proxy = start_proxy("proxy", resolver.url, work, *LEASES_OFF)
        kids.append(proxy)
        leased = start_proxy("leased-proxy", resolver.url, work, *LEASES_ON)
        kids.append(leased)
        plain = start_mitmdump("mitmdump", [], work)
        kids.append(plain)
        instant = start_child(
            "instant-resolver",
            ["bench.proxy_perf", "--serve-instant-resolver"],
            health="tcp",
            log_dir=work,
        )
        kids.append(instant)
        lone_proxy = start_proxy("proxy-on-instant-resolver", instant.url, work, *LEASES_OFF)
        kids.append(lone_proxy)
        sidecars, plain_sidecars = start_sidecars(resolver.url, work, kids, GROUP)
        try:
            for clients in CONCURRENCY:
                per_client = max(total // clients, 10)
                urls = urls_for(upstream.url, clients, per_client, f"n{clients}")
                warm = urls_for(upstream.url, clients, 5, f"warm{clients}")
                measured = _mitmproxy_conditions(urls, warm, work)
                groundhog, cpu = _groundhog_conditions(
                    resolver, (proxy.port, leased.port), plain.url, urls, warm, tapes[clients]
                )
                measured |= groundhog
                rows += [{**row, "clients": clients} for row in cpu]
                # The proxy's own cost: a hit answered by a resolver stand-in that does no work.
                lone = [proxy_with_identity(lone_proxy.port, "perf", "root")] * clients
                asyncio.run(load(lone, warm))
                measured["groundhog hit path, instant resolver"] = asyncio.run(load(lone, urls))
                if clients == 1:
                    # Against one plain forward (the no-addon row of this same loop, 1 client) and
                    # against four at once (PLAIN_GROUP, taking turns with the siblings).
                    rounds = max(total // 8, 10)
                    # As deployed: sidecars taking branch leases (the default).
                    measured |= group_conditions(
                        resolver.url,
                        leased.port,
                        plain.url,
                        upstream.url,
                        rounds,
                        siblings_tape,
                        sidecar_ports=[leased.port, *(child.port for child in sidecars)],
                        plain_sidecar_urls=[plain.url, *(child.url for child in plain_sidecars)],
                    )
                rows += [
                    ratio_row(name, clients, numbers, measured)
                    for name, numbers in measured.items()
                ]
                if clients == 1:
                    rows.append(
                        capability_cost.measure_capability_cost(
                            resolver.url,
                            proxy.port,
                            upstream.url,
                            capability_tape,
                            rounds=capability_cost.QUICK_ROUNDS
                            if quick
                            else capability_cost.ROUNDS,
                        )
                    )
                rows.sort(key=lambda row: "cpu_ms" in row)  # the CPU rows after the timed ones
        finally:
            if database_url:  # a database outlives the run: leave it as it was
                mcp_tapes = [f"{tape}-mcp" for tape in tapes.values()]
                capability_tapes = [f"{capability_tape}-{side}" for side in capability_cost.SIDES]
                delete_tapes(
                    resolver.url,
                    [*tapes.values(), *mcp_tapes, siblings_tape, *capability_tapes],
                )
    store = store_label(database_url)
    return [{**row, "store": store} for row in rows]


def _mitmproxy_conditions(
    urls: list[list[str]], warm: list[list[str]], work: Path
) -> dict[str, dict[str, float]]:
    clients = len(urls)
    measured: dict[str, dict[str, float]] = {}
    asyncio.run(load([None] * clients, warm))
    measured["direct"] = asyncio.run(load([None] * clients, urls))
    # Server replay needs a recording of exactly these URLs: record them through mitmdump -w.
    flows = work / f"flows{clients}.mitm"
    recorder = start_mitmdump(f"recorder{clients}", ["-w", str(flows)], work)
    try:
        for sequence in (warm, urls):
            asyncio.run(load([recorder.url] * clients, sequence))
    finally:
        recorder.stop()
    replay_options = ["server_replay_reuse=true", "server_replay_extra=kill"]
    replay_options.append("connection_strategy=lazy")
    arguments = ["--server-replay", str(flows)]
    for option in replay_options:
        arguments += ["--set", option]
    replay = start_mitmdump(f"replay{clients}", arguments, work)
    try:
        asyncio.run(load([replay.url] * clients, warm))
        measured[REPLAY] = asyncio.run(load([replay.url] * clients, urls))
    finally:
        replay.stop()
    return measured


def _groundhog_conditions(
    resolver: ChildService,
    proxy_ports: tuple[int, int],
    plain_url: str,
    urls: list[list[str]],
    warm: list[list[str]],
    tape: str,
) -> tuple[dict[str, dict[str, float]], list[dict[str, Any]]]:
    """Record and hit paths, taking turns with their baseline (mitmdump with no addon); and
    the resolver's CPU per 1000 hits through each proxy.

    `proxy_ports`: a proxy asking the resolver for every hit (leases off), and one taking branch
    leases (the default): its first ask of an address is a resolver hit it keeps; a sibling's
    next one is answered by it."""
    resolver_url = resolver.url
    clients = len(urls)
    proxy_port, leased_port = proxy_ports
    branches = open_tape(resolver_url, tape, 9 * clients + 3)
    (
        recorders,
        hitters,
        by_proxy_client,
        by_aiohttp,
        by_httpx,
        first_leased,
        leased_hitters,
        cpu_plain,
        cpu_leased,
    ) = (branches[k * clients : (k + 1) * clients] for k in range(9))

    def as_branches(names: list[str], port: int = proxy_port) -> list[str | None]:
        return [proxy_with_identity(port, tape, name) for name in names]

    asyncio.run(load([plain_url] * clients, warm))
    asyncio.run(load(as_branches([branches[-2]] * clients), warm))
    asyncio.run(load(as_branches([branches[-1]] * clients), warm))
    asyncio.run(load(as_branches([branches[-3]] * clients, leased_port), warm))
    conditions: list[tuple[str, Sequence[str | None]]] = [
        (NO_ADDON, [plain_url] * clients),
        ("groundhog record path", as_branches(recorders)),
        ("groundhog hit path", as_branches(hitters)),
        (LEASED_FIRST, as_branches(first_leased, leased_port)),
        (LEASED_HIT, as_branches(leased_hitters, leased_port)),
    ]
    measured = asyncio.run(interleaved(conditions, urls))
    # An MCP tools/call of a read-only tool (the operation read from the body, its id left
    # out of the key), recorded and hit, beside a plain forward of the same POST.
    mcp_tape = f"{tape}-mcp"
    tool_config = {"mcp_tools": {"search": "read"}}
    mcp = [
        proxy_with_identity(proxy_port, mcp_tape, name)
        for name in open_tape(resolver_url, mcp_tape, 2 * clients + 1, tool_config)
    ]
    asyncio.run(interleaved([("warm", mcp[-1:] * clients)], warm, asks=post_tool_call))
    tool_calls: list[tuple[str, Sequence[str | None]]] = [
        (MCP_NO_ADDON, [plain_url] * clients),
        (MCP_RECORD, mcp[:clients]),
        (MCP_HIT, mcp[clients : 2 * clients]),
    ]
    measured |= asyncio.run(interleaved(tool_calls, urls, asks=post_tool_call))
    # Where the hit path's time goes: the resolver's own answer asked directly, with the
    # proxy's client (proxy/resolver_http.py), and with aiohttp and httpx.AsyncClient, the
    # general clients it replaced.
    askers = ((PROXY_CLIENT, by_proxy_client), ("aiohttp", by_aiohttp), ("httpx", by_httpx))
    for library, group in askers:
        measured[f"resolver hit alone ({library})"] = asyncio.run(
            _resolve_directly(resolver_url, tape, group, urls, library)
        )
    cpu = [
        _resolver_cpu(resolver, "plain proxy", as_branches(cpu_plain), urls),
        _resolver_cpu(resolver, "leased sidecar", as_branches(cpu_leased, leased_port), urls),
    ]
    return measured, cpu


def _resolver_cpu(
    resolver: ChildService, through: str, proxies: Sequence[str | None], urls: list[list[str]]
) -> dict[str, Any]:
    """The resolver's CPU per 1000 hits of `urls` through `proxies` (fresh branches: every ask
    a hit), counted until a leased sidecar's batches have landed too."""
    before = cpu_seconds(resolver.process.pid)
    asyncio.run(load(proxies, urls))
    time.sleep(SHIPPED_WITHIN_SECONDS)
    used = cpu_seconds(resolver.process.pid) - before
    hits = sum(len(sequence) for sequence in urls)
    return {"condition": f"{RESOLVER_CPU} ({through})", "cpu_ms": 1e6 * used / hits}


async def _resolve_directly(
    resolver_url: str, tape: str, branches: list[str], url_lists: list[list[str]], library: str
) -> dict[str, float]:
    """Ask `/v1/resolve` for the hit path's addresses with no proxy in between."""
    endpoint = f"{resolver_url}/v1/resolve"

    def payload(branch: str, url: str) -> dict[str, Any]:
        parsed = httpx.URL(url)
        return {
            "tape": tape,
            "branch": branch,
            "method": "GET",
            "scheme": "http",
            "host": parsed.host,
            "port": parsed.port,
            "path": parsed.path,
            "query": [list(pair) for pair in parsed.params.multi_items()],
            "headers": [list(pair) for pair in NEGOTIATION_HEADERS.items()],
            "body": "",
            "body_too_large": False,
        }

    proxy_client = ResolverClient(resolver_url, resolve_timeout=60)
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session,
        httpx.AsyncClient(trust_env=False, timeout=60) as client,
    ):

        async def ask(branch: str, url: str) -> None:
            answer: Mapping[str, Any]
            if library == PROXY_CLIENT:
                answer = await proxy_client.resolve(cast(ResolveAsk, payload(branch, url)))
            elif library == "aiohttp":
                async with session.post(endpoint, json=payload(branch, url)) as response:
                    answer = await response.json()
            else:
                answer = (await client.post(endpoint, json=payload(branch, url))).json()
            if answer.get("decision") != "shared":
                raise RuntimeError(f"expected a hit for {url} as {branch}, got {answer}")

        try:
            return await timed_concurrently(ask, branches, url_lists)
        finally:
            await proxy_client.close()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.proxy_perf", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="160 requests per condition")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument(
        "--database-url",
        metavar="URL",
        help="the resolver's store (e.g. PostgreSQL) instead of a fresh SQLite file",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="measure N whole runs and report each number's median (a noisy machine)",
    )
    parser.add_argument("--serve-upstream", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve-instant-resolver", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--host", default=LOOPBACK, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_upstream or args.serve_instant_resolver:
        body = BODY if args.serve_upstream else instant_resolve_answer()
        asyncio.run(serve_fixed(args.host, args.port, body))
        return
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    runs = [measure(quick=args.quick, database_url=args.database_url) for _ in range(args.repeat)]
    rows = median_rows(runs)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    sys.stdout.write(table(rows) + "\n")


if __name__ == "__main__":
    main()
