"""How much the Groundhog proxy costs per request, against mitmproxy itself in the same run.

Every worker request goes through the proxy, so its latency and throughput bound a rollout's
speed. This script measures, at 1 and 8 concurrent clients over plain HTTP on loopback:
the upstream directly; mitmdump with no addon; mitmdump's own server replay
(`server_replay_reuse`); Groundhog's record path (resolve, live fetch, record) and hit path
(served from tape) through the real resolver; four sibling branches asking one new address
at once (one records, three wait on it; latency is the group's last answer, against one plain
forward through mitmdump) and, taking turns with it, four concurrent plain forwards of four new
addresses through mitmdump with no addon (the group's last answer): mitmproxy spends several ms
of CPU per flow in one Python thread, so four flows at once cannot finish as soon as one, and
the siblings row is reported against both; the same two groups as deployed, one sidecar proxy
per worker (four Groundhog proxies sharing the resolver, and four mitmdumps); the resolver's
hit alone (asked directly, with the
proxy's own client, proxy/resolver_http.py, and with aiohttp and httpx, the general clients it
replaced); and the hit path against an
instant stand-in resolver, which isolates the proxy's own cost. Ratios are against mitmdump
with no addon and against server replay, measured in the same run; the record and hit paths
take turns with mitmdump slice by slice, so a neighbour's load falls on both. Goals (issue 18):
hit p50 within 1.15x of no-addon and throughput at least 1.0x; recorded miss p50 within 2.0x
and throughput at least 0.6x; four siblings' last answer within 1.3x of one plain forward.

The resolver keeps its tapes in a fresh SQLite file, or in the database `--database-url` names
(PostgreSQL, the many-node store); tape names carry the run's time, so a database holding
earlier runs' tapes is fine, and the run deletes its tapes from such a database at the end.

    python -m bench.proxy_perf [--quick] [--repeat N] [--json out.json] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import itertools
import json
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import aiohttp
import httpx
from sqlalchemy.engine import make_url

from bench.harness import (
    LOOPBACK,
    ChildService,
    await_child,
    free_port,
    spawn_child,
    start_child,
    wait_for_child,
)
from groundhog.lifetime import tied_command
from groundhog.protocol.wire import ResolveAsk
from groundhog.worker_env import proxy_url_with_credentials
from proxy.resolver_client import ResolverClient

logger = logging.getLogger("bench.proxy_perf")

BODY = json.dumps({"items": [{"id": i, "title": f"result {i}"} for i in range(24)]}).encode()
CONCURRENCY = (1, 8)
NO_ADDON = "mitmproxy (no addon)"
PROXY_CLIENT = "proxy's client"
GROUP = 4  # siblings asking one new address at once
SLICES = 5  # turns the record and hit paths take with their baseline
SIBLINGS = f"groundhog {GROUP} siblings, one new address (last answer)"
# The siblings' second baseline: what mitmproxy alone takes to forward GROUP new requests at once.
PLAIN_GROUP = f"mitmproxy (no addon) {GROUP} concurrent plain forwards, new addresses (last answer)"
# The same two groups as deployed: every worker has its own sidecar proxy, so the group's flows
# are not queued in one proxy's thread.
SIDECARS = f"groundhog {GROUP} siblings, one sidecar proxy each, one new address (last answer)"
PLAIN_SIDECARS = (
    f"mitmproxy (no addon) {GROUP} concurrent plain forwards, one proxy each (last answer)"
)
# Each group row and the row it is also judged against.
GROUP_BASELINES = {SIBLINGS: PLAIN_GROUP, SIDECARS: PLAIN_SIDECARS}
REPLAY = "mitmproxy server replay"


# -- servers run as their own processes so they do not share the client's GIL -----------------


def _instant_resolve_answer() -> bytes:
    """A fixed `/v1/resolve` hit answer, so the proxy's own cost can be told apart."""
    head = [["Content-Type", "application/json"], ["Content-Length", str(len(BODY))]]
    response = {"status": 200, "headers": head, "body": base64.b64encode(BODY).decode()}
    answer = {
        "action": "serve",
        "decision": "shared",
        "occurrence": 0,
        "fingerprint": "",
        "request_key": "0" * 64,
        "ticket": None,
        "upstream_headers": [],
        "response": response,
    }
    return json.dumps(answer).encode()


async def _serve_fixed(host: str, port: int, body: bytes) -> None:
    """A minimal keep-alive HTTP/1.1 server answering every request with `body`."""
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    head += b"Content-Length: %d\r\n\r\n" % len(body)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while True:
                request_head = await reader.readuntil(b"\r\n\r\n")
                for line in request_head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        await reader.readexactly(int(line.split(b":", 1)[1]))
                writer.write(head + body)
                await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, host, port)
    async with server:
        await server.serve_forever()


# -- load generation ------------------------------------------------------------------------


# Negotiation headers join the request key: the load's clients send exactly these, and the
# resolver asked directly is asked with the same, so both look up the same addresses.
NEGOTIATION_HEADERS = {"Accept": "*/*", "Accept-Encoding": "identity"}


def _load_session() -> aiohttp.ClientSession:
    """The load's client: unlimited connections, no proxy variables, the negotiation headers."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0),
        trust_env=False,
        headers=NEGOTIATION_HEADERS,
        skip_auto_headers=("User-Agent",),
    )


async def _get_ok(session: aiohttp.ClientSession, proxy: str | None, url: str) -> None:
    async with session.get(url, proxy=proxy) as response:
        await response.read()
        if response.status != 200:
            raise RuntimeError(f"{url} via {proxy} answered {response.status}")


async def _load(proxies: Sequence[str | None], urls: list[list[str]]) -> dict[str, float]:
    """Client i asks its urls in order, one at a time, through proxies[i]; all clients at once."""
    async with _load_session() as session:

        async def ask(proxy: str | None, url: str) -> None:
            await _get_ok(session, proxy, url)

        return await _timed_concurrently(ask, proxies, urls)


async def _timed_concurrently[Asker](
    ask: Callable[[Asker, str], Awaitable[None]],
    askers: Sequence[Asker],
    url_lists: list[list[str]],
) -> dict[str, float]:
    """Asker i asks url_lists[i] one at a time, all askers at once; each ask's latency counts."""
    return _summary(*await _timed(ask, askers, url_lists))


async def _timed[Asker](
    ask: Callable[[Asker, str], Awaitable[None]],
    askers: Sequence[Asker],
    url_lists: list[list[str]],
) -> tuple[list[float], float]:
    """`_timed_concurrently`'s raw numbers: every latency, and the seconds it all took."""
    latencies: list[float] = []

    async def one(asker: Asker, sequence: list[str]) -> None:
        for url in sequence:
            started = time.perf_counter()
            await ask(asker, url)
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(one(a, s) for a, s in zip(askers, url_lists, strict=True)))
    return latencies, time.perf_counter() - started


async def _interleaved(
    conditions: Sequence[tuple[str, Sequence[str | None]]], urls: list[list[str]], slices: int
) -> dict[str, dict[str, float]]:
    """Each condition asks `urls` through its proxies, the conditions taking turns slice by slice.

    On a shared machine the load changes from one second to the next; a baseline measured a
    minute before the condition it judges can be twice as slow or fast. Taking turns puts the
    baseline and the conditions in the same moments, in the same order each slice (a later
    condition may depend on an earlier one: the hit path asks what the record path recorded).
    """
    per_client = len(urls[0])
    bounds = [per_client * index // slices for index in range(slices + 1)]
    latencies: dict[str, list[float]] = {name: [] for name, _ in conditions}
    elapsed = dict.fromkeys(latencies, 0.0)
    async with contextlib.AsyncExitStack() as stack:
        sessions = {
            name: await stack.enter_async_context(
                aiohttp.ClientSession(
                    connector=aiohttp.TCPConnector(limit=0),
                    trust_env=False,
                    headers=NEGOTIATION_HEADERS,
                    skip_auto_headers=("User-Agent",),
                )
            )
            for name, _ in conditions
        }
        for start, end in itertools.pairwise(bounds):
            part = [sequence[start:end] for sequence in urls]
            for name, proxies in conditions:
                session = sessions[name]

                async def ask(proxy: str | None, url: str, session=session) -> None:
                    async with session.get(url, proxy=proxy) as response:
                        await response.read()
                        if response.status != 200:
                            raise RuntimeError(f"{url} via {proxy} answered {response.status}")

                taken, seconds = await _timed(ask, proxies, part)
                latencies[name] += taken
                elapsed[name] += seconds
    return {name: _summary(latencies[name], elapsed[name]) for name in latencies}


def _urls(base: str, clients: int, per_client: int, tag: str) -> list[list[str]]:
    return [[f"{base}/item?c={c}&i={i}&t={tag}" for i in range(per_client)] for c in range(clients)]


def _proxy_with_identity(port: int, tape: str, branch: str) -> str:
    return proxy_url_with_credentials(f"http://{LOOPBACK}:{port}", tape, branch)


# -- processes --------------------------------------------------------------------------------


def _start_mitmdump(name: str, arguments: Sequence[str], log_dir: Path) -> ChildService:
    child = _spawn_mitmdump(name, arguments, log_dir)
    _await_mitmdump(child)
    return child


def _await_mitmdump(child: ChildService) -> None:
    wait_for_child(
        child.name,
        child.command,
        child.process,
        url=child.url,
        health="tcp",
        timeout=60,
        log_tail=child.log_tail,
    )


def _spawn_mitmdump(name: str, arguments: Sequence[str], log_dir: Path) -> ChildService:
    """mitmdump with `arguments`, started but not yet awaited (`_await_mitmdump`)."""
    import subprocess

    port = free_port()
    command = [
        sys.executable,
        "-c",
        "from mitmproxy.tools.main import mitmdump; mitmdump()",
        "-q",
        "--listen-host",
        LOOPBACK,
        "--listen-port",
        str(port),
        *arguments,
    ]
    log_path = log_dir / f"{name}.log"
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(tied_command(command), stdout=log_file, stderr=subprocess.STDOUT)
    return ChildService(name, command, port, process, log_path)


def resolver_arguments(work: Path, database_url: str | None) -> list[str]:
    """The real resolver's command: its tapes in a SQLite file under `work`, or `database_url`."""
    arguments = ["resolver", "--data", str(work)]
    if database_url:
        arguments += ["--database-url", database_url]
    return arguments


def proxy_arguments(resolver_url: str, work: Path) -> list[str]:
    """The Groundhog proxy's command, asking the resolver at `resolver_url`."""
    return ["proxy", "--resolver-url", resolver_url, "--data", str(work), "--log-level", "warn"]


def store_label(database_url: str | None) -> str:
    """Which store the resolver used, for the table's title and each row (no password)."""
    if not database_url:
        return "sqlite (a fresh file)"
    url = make_url(database_url)
    return f"{url.get_backend_name()} ({url.render_as_string(hide_password=True)})"


def _open_tape(resolver_url: str, tape: str, children: int) -> list[str]:
    """Create `tape` and fork `children` branches off its root; their names."""
    created = httpx.post(
        f"{resolver_url}/v1/tapes", json={"name": tape}, trust_env=False, timeout=30
    )
    if created.status_code != 201:  # an earlier run's tape would mix its recordings into ours
        raise RuntimeError(f"tape {tape} not created: {created.status_code} {created.text:.300}")
    forked = httpx.post(
        f"{resolver_url}/v1/tapes/{tape}/fork",
        json={"parent": "root", "children": children},
        trust_env=False,
        timeout=30,
    )
    forked.raise_for_status()
    branches: list[str] = forked.json()["branches"]
    return branches


def _delete_tapes(resolver_url: str, tapes: Sequence[str]) -> None:
    """Remove this run's tapes from a database that outlives it (best effort, logged)."""
    for tape in tapes:
        try:
            answer = httpx.delete(f"{resolver_url}/v1/tapes/{tape}", trust_env=False, timeout=120)
        except httpx.HTTPError as error:
            logger.warning("could not delete tape %s: %s", tape, error)
            continue
        if answer.status_code not in (204, 404):
            logger.warning("could not delete tape %s: %s", tape, answer.status_code)


def _start_proxy(name: str, resolver_url: str, work: Path) -> ChildService:
    return start_child(name, proxy_arguments(resolver_url, work), health="tcp", log_dir=work)


def _start_sidecars(
    resolver_url: str, work: Path, kids: list[ChildService]
) -> tuple[list[ChildService], list[ChildService]]:
    """GROUP - 1 more Groundhog proxies on the resolver and as many more mitmdumps, so each of
    a group's workers has a sidecar of its own (the first of each kind is the main one)."""
    proxies = []
    for index in range(1, GROUP):
        data = work / f"sidecar-{index}"  # its own CA directory: no two proxies create one file
        data.mkdir()
        child = spawn_child(f"sidecar-{index}", proxy_arguments(resolver_url, data), log_dir=work)
        kids.append(child)
        proxies.append(child)
    plains = []
    for index in range(1, GROUP):
        plain = _spawn_mitmdump(f"mitmdump-sidecar-{index}", [], work)
        kids.append(plain)
        plains.append(plain)
    for child in proxies:
        await_child(child, health="tcp")
    for plain in plains:
        _await_mitmdump(plain)
    return proxies, plains


@contextlib.contextmanager
def _children() -> Iterator[list[ChildService]]:
    children: list[ChildService] = []
    try:
        yield children
    finally:
        for child in reversed(children):
            child.stop()


# -- the measurement --------------------------------------------------------------------------


def measure(quick: bool = False, database_url: str | None = None) -> list[dict[str, Any]]:
    """Rows of {condition, clients, requests, p50_ms, p90_ms, throughput_rps, ratios, store}.

    `database_url` gives the resolver that store instead of a fresh SQLite file.
    """
    total = 160 if quick else 800
    run = time.time_ns()  # a database may hold earlier (or concurrent) runs' tapes
    tapes = {clients: f"perf{clients}-{run}" for clients in CONCURRENCY}
    siblings_tape = f"perf-siblings-{run}"
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="gh-proxy-perf-") as temporary, _children() as kids:
        work = Path(temporary)
        upstream = start_child(
            "upstream", ["bench.proxy_perf", "--serve-upstream"], health="tcp", log_dir=work
        )
        kids.append(upstream)
        resolver_command = resolver_arguments(work, database_url)
        resolver = start_child("resolver", resolver_command, health="http", log_dir=work)
        kids.append(resolver)
        proxy = _start_proxy("proxy", resolver.url, work)
        kids.append(proxy)
        plain = _start_mitmdump("mitmdump", [], work)
        kids.append(plain)
        instant = start_child(
            "instant-resolver",
            ["bench.proxy_perf", "--serve-instant-resolver"],
            health="tcp",
            log_dir=work,
        )
        kids.append(instant)
        lone_proxy = _start_proxy("proxy-on-instant-resolver", instant.url, work)
        kids.append(lone_proxy)
        sidecars, plain_sidecars = _start_sidecars(resolver.url, work, kids)
        try:
            for clients in CONCURRENCY:
                per_client = max(total // clients, 10)
                urls = _urls(upstream.url, clients, per_client, f"n{clients}")
                warm = _urls(upstream.url, clients, 5, f"warm{clients}")
                measured = _mitmproxy_conditions(urls, warm, work)
                measured |= _groundhog_conditions(
                    resolver.url, proxy.port, plain.url, urls, warm, tapes[clients]
                )
                # The proxy's own cost: a hit answered by a resolver stand-in that does no work.
                lone = [_proxy_with_identity(lone_proxy.port, "perf", "root")] * clients
                asyncio.run(_load(lone, warm))
                measured["groundhog hit path, instant resolver"] = asyncio.run(_load(lone, urls))
                if clients == 1:
                    # Against one plain forward (the no-addon row of this same loop, 1 client) and
                    # against four at once (PLAIN_GROUP, taking turns with the siblings).
                    rounds = max(total // 8, 10)
                    measured |= _group_conditions(
                        resolver.url,
                        proxy.port,
                        plain.url,
                        upstream.url,
                        rounds,
                        siblings_tape,
                        sidecar_ports=[proxy.port, *(child.port for child in sidecars)],
                        plain_sidecar_urls=[plain.url, *(child.url for child in plain_sidecars)],
                    )
                rows += [
                    _row(name, clients, numbers, measured) for name, numbers in measured.items()
                ]
        finally:
            if database_url:  # a database outlives the run: leave it as it was
                _delete_tapes(resolver.url, [*tapes.values(), siblings_tape])
    store = store_label(database_url)
    return [{**row, "store": store} for row in rows]


def _mitmproxy_conditions(
    urls: list[list[str]], warm: list[list[str]], work: Path
) -> dict[str, dict[str, float]]:
    clients = len(urls)
    measured: dict[str, dict[str, float]] = {}
    asyncio.run(_load([None] * clients, warm))
    measured["direct"] = asyncio.run(_load([None] * clients, urls))
    # Server replay needs a recording of exactly these URLs: record them through mitmdump -w.
    flows = work / f"flows{clients}.mitm"
    recorder = _start_mitmdump(f"recorder{clients}", ["-w", str(flows)], work)
    try:
        for sequence in (warm, urls):
            asyncio.run(_load([recorder.url] * clients, sequence))
    finally:
        recorder.stop()
    replay_options = ["server_replay_reuse=true", "server_replay_extra=kill"]
    replay_options.append("connection_strategy=lazy")
    arguments = ["--server-replay", str(flows)]
    for option in replay_options:
        arguments += ["--set", option]
    replay = _start_mitmdump(f"replay{clients}", arguments, work)
    try:
        asyncio.run(_load([replay.url] * clients, warm))
        measured[REPLAY] = asyncio.run(_load([replay.url] * clients, urls))
    finally:
        replay.stop()
    return measured


def _groundhog_conditions(
    resolver_url: str,
    proxy_port: int,
    plain_url: str,
    urls: list[list[str]],
    warm: list[list[str]],
    tape: str,
) -> dict[str, dict[str, float]]:
    """Record and hit paths, taking turns with their baseline (mitmdump with no addon)."""
    clients = len(urls)
    branches = _open_tape(resolver_url, tape, 5 * clients + 2)
    recorders, hitters, by_proxy_client, by_aiohttp, by_httpx = (
        branches[k * clients : (k + 1) * clients] for k in range(5)
    )

    def as_branches(names: list[str]) -> list[str | None]:
        return [_proxy_with_identity(proxy_port, tape, name) for name in names]

    asyncio.run(_load([plain_url] * clients, warm))
    asyncio.run(_load(as_branches([branches[-2]] * clients), warm))
    asyncio.run(_load(as_branches([branches[-1]] * clients), warm))
    conditions: list[tuple[str, Sequence[str | None]]] = [
        (NO_ADDON, [plain_url] * clients),
        ("groundhog record path", as_branches(recorders)),
        ("groundhog hit path", as_branches(hitters)),
    ]
    measured = asyncio.run(_interleaved(conditions, urls, SLICES))
    # Where the hit path's time goes: the resolver's own answer asked directly, with the
    # proxy's client (proxy/resolver_http.py), and with aiohttp and httpx.AsyncClient, the
    # general clients it replaced.
    askers = ((PROXY_CLIENT, by_proxy_client), ("aiohttp", by_aiohttp), ("httpx", by_httpx))
    for library, group in askers:
        measured[f"resolver hit alone ({library})"] = asyncio.run(
            _resolve_directly(resolver_url, tape, group, urls, library)
        )
    return measured


def _group_conditions(
    resolver_url: str,
    proxy_port: int,
    plain_url: str,
    upstream_url: str,
    rounds: int,
    tape: str,
    *,
    sidecar_ports: Sequence[int] = (),
    plain_sidecar_urls: Sequence[str] = (),
) -> dict[str, dict[str, float]]:
    """GROUP siblings ask one new address at once, taking turns with GROUP plain forwards.

    One sibling records the address, the others wait on it (single flight) and are served its
    bytes, so this is the pace of every new read in a rollout group. Its second baseline asks
    GROUP new addresses at once through mitmdump with no addon: mitmproxy handles flows in one
    Python thread, so that group's last answer shows what four flows cost before any addon.
    Given GROUP `sidecar_ports` (Groundhog proxies) and `plain_sidecar_urls` (mitmdumps), both
    groups are also asked as deployed, each sibling through a proxy of its own.
    """
    siblings = _open_tape(resolver_url, tape, GROUP)
    conditions: list[tuple[str, Sequence[str | None], bool]] = [
        (SIBLINGS, [_proxy_with_identity(proxy_port, tape, name) for name in siblings], True),
        (PLAIN_GROUP, [plain_url] * GROUP, False),
    ]
    if sidecar_ports or plain_sidecar_urls:
        if len(sidecar_ports) != GROUP or len(plain_sidecar_urls) != GROUP:
            raise ValueError(f"one sidecar of each kind per sibling: {GROUP} of each")
        pairs = zip(sidecar_ports, siblings, strict=True)
        sidecars = [_proxy_with_identity(port, tape, name) for port, name in pairs]
        conditions += [(SIDECARS, sidecars, True), (PLAIN_SIDECARS, plain_sidecar_urls, False)]
    return asyncio.run(_interleaved_groups(conditions, upstream_url, rounds, SLICES))


async def _interleaved_groups(
    conditions: Sequence[tuple[str, Sequence[str | None], bool]],
    upstream_url: str,
    rounds: int,
    slices: int,
) -> dict[str, dict[str, float]]:
    """Each condition (name, proxies, one address) asks `rounds` groups, taking turns by slice.

    A group is one request through each of the condition's proxies, all at once: of one new
    address when `one address` is true (siblings), else of a new address each. Each round is
    one latency sample, the group's last answer; throughput counts answers. As in
    `_interleaved`, the conditions take turns so a neighbour's load falls on all of them.
    """
    bounds = [rounds * index // slices for index in range(slices + 1)]
    latencies: dict[str, list[float]] = {name: [] for name, _, _ in conditions}
    elapsed = dict.fromkeys(latencies, 0.0)
    async with contextlib.AsyncExitStack() as stack:
        sessions = {name: await stack.enter_async_context(_load_session()) for name in latencies}

        async def group(name: str, proxies: Sequence[str | None], one: bool, tag: str) -> None:
            urls = [
                f"{upstream_url}/item?t={tag}" + ("" if one else f"&m={member}")
                for member in range(len(proxies))
            ]
            session = sessions[name]
            await asyncio.gather(
                *(_get_ok(session, proxy, url) for proxy, url in zip(proxies, urls, strict=True))
            )

        for position, (name, proxies, one) in enumerate(conditions):
            for warm in range(3):  # connections to the proxy opened before timing
                await group(name, proxies, one, f"g{position}-warm&i={warm}")
        for start, end in itertools.pairwise(bounds):
            for position, (name, proxies, one) in enumerate(conditions):
                started = time.perf_counter()
                for index in range(start, end):
                    asked = time.perf_counter()
                    await group(name, proxies, one, f"g{position}&i={index}")
                    latencies[name].append(time.perf_counter() - asked)
                elapsed[name] += time.perf_counter() - started
    measured = {}
    for name, proxies, _ in conditions:
        summary = _summary(latencies[name], elapsed[name])
        summary["requests"] = len(latencies[name]) * len(proxies)
        summary["throughput_rps"] = summary["requests"] / elapsed[name]
        measured[name] = summary
    return measured


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
            return await _timed_concurrently(ask, branches, url_lists)
        finally:
            await proxy_client.close()


def _summary(latencies: list[float], elapsed: float) -> dict[str, float]:
    return {
        "requests": len(latencies),
        "p50_ms": statistics.median(latencies) * 1000,
        "p90_ms": statistics.quantiles(latencies, n=10)[-1] * 1000,
        "throughput_rps": len(latencies) / elapsed,
    }


def _row(condition: str, clients: int, numbers: dict, measured: dict) -> dict[str, Any]:
    row: dict[str, Any] = {"condition": condition, "clients": clients, **numbers}
    baselines = [("no_addon", measured[NO_ADDON]), ("replay", measured[REPLAY])]
    if condition in GROUP_BASELINES:
        # Issue 18 judges the siblings against one plain forward (the no-addon row); four plain
        # forwards at once, through one proxy or one each, show how much of that gap is
        # mitmproxy's own cost of four flows.
        baselines.append(("plain_group", measured[GROUP_BASELINES[condition]]))
    for name, baseline in baselines:
        row[f"p50_vs_{name}"] = numbers["p50_ms"] / baseline["p50_ms"]
        row[f"throughput_vs_{name}"] = numbers["throughput_rps"] / baseline["throughput_rps"]
    return {
        key: round(value, 3) if isinstance(value, float) else value for key, value in row.items()
    }


def median_rows(runs: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each number the median over whole runs; ratios are taken within a run first.

    On a shared machine one run's baseline can be slowed by a neighbour; ratios from the same
    run move together, and the median of several runs drops an unlucky one.
    """
    combined = []
    for rows in zip(*runs, strict=True):
        first = rows[0]
        if any(
            (row["condition"], row["clients"]) != (first["condition"], first["clients"])
            for row in rows
        ):
            raise ValueError("runs measured different conditions")
        merged = dict(first)
        for key, value in first.items():
            if isinstance(value, float):
                merged[key] = round(statistics.median(row[key] for row in rows), 3)
        combined.append(merged)
    return combined


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as markdown, titled with the resolver's store, then the siblings' two ratios."""
    stores = ", ".join(dict.fromkeys(str(row.get("store", "not recorded")) for row in rows))
    lines = [
        f"proxy rows; the resolver's store: {stores}",
        "",
        "| condition | clients | p50 ms | p90 ms | req/s | p50 vs no-addon | req/s vs no-addon "
        "| p50 vs replay | req/s vs replay |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['condition']} | {row['clients']} | {row['p50_ms']:.2f} | {row['p90_ms']:.2f} "
            f"| {row['throughput_rps']:.0f} | {row['p50_vs_no_addon']:.2f}x "
            f"| {row['throughput_vs_no_addon']:.2f}x | {row['p50_vs_replay']:.2f}x "
            f"| {row['throughput_vs_replay']:.2f}x |"
        )
    for row in rows:
        if row["condition"] in GROUP_BASELINES:
            how = "through one proxy" if row["condition"] == SIBLINGS else "one sidecar each"
            lines += [
                "",
                f"{GROUP} siblings' last answer, {how} (goal: within 1.3x of one plain forward): "
                f"{row['p50_vs_no_addon']:.2f}x one plain forward, "
                f"{row['p50_vs_plain_group']:.2f}x {GROUP} concurrent plain forwards "
                f"{how} (p50, mitmproxy with no addon, same run)",
            ]
    return "\n".join(lines)


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
        body = BODY if args.serve_upstream else _instant_resolve_answer()
        asyncio.run(_serve_fixed(args.host, args.port, body))
        return
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    runs = [measure(quick=args.quick, database_url=args.database_url) for _ in range(args.repeat)]
    rows = median_rows(runs)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    sys.stdout.write(table(rows) + "\n")


if __name__ == "__main__":
    main()
