"""Tests for the siblings' group rows: turns between the groups, and the rows through a real
resolver, proxy and mitmdump (two rounds), on SQLite and on PostgreSQL, and as sidecars.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy
from aiohttp import web
from aiohttp.test_utils import TestServer

from bench.harness import await_child, spawn_child
from bench.proxy_groups import (
    GROUP,
    PLAIN_GROUP,
    PLAIN_SIDECARS,
    SIBLINGS,
    SIDECARS,
    group_conditions,
    interleaved_groups,
)
from bench.proxy_stack import (
    BODY,
    child_processes,
    delete_tapes,
    proxy_arguments,
    resolver_arguments,
    start_mitmdump,
    start_sidecars,
)


def test_interleaved_groups_ask_new_addresses_taking_turns() -> None:
    asked: list[str] = []

    async def item(request: web.Request) -> web.Response:
        asked.append(request.path_qs)
        return web.Response(body=BODY, content_type="application/json")

    async def run() -> dict[str, dict[str, float]]:
        app = web.Application()
        app.router.add_get("/item", item)
        async with TestServer(app, host="127.0.0.1") as server:
            base = str(server.make_url("")).rstrip("/")
            conditions = [("same", [None] * 4, True), ("each", [None] * 4, False)]
            return await interleaved_groups(conditions, base, rounds=6, slices=2)

    measured = asyncio.run(run())
    for name in ("same", "each"):
        assert measured[name]["requests"] == 24  # four answers a round, one latency a round
        assert 0 < measured[name]["p50_ms"] <= measured[name]["p90_ms"]
        assert measured[name]["throughput_rps"] > 0
    timed = [path for path in asked if "warm" not in path]
    assert len(asked) == len(timed) + 2 * 3 * 4  # three warm-up groups per condition first
    groups = [timed[start : start + 4] for start in range(0, len(timed), 4)]
    same = [group for group in groups if "t=g0&" in group[0]]
    each = [group for group in groups if "t=g1&" in group[0]]
    assert all(len(set(group)) == 1 for group in same)  # siblings: one address
    assert all(len(set(group)) == 4 for group in each)  # plain forwards: one each
    assert len({group[0] for group in same}) == 6  # a new address every round
    assert len({path for group in each for path in group}) == 24
    # Slices of three rounds, the conditions taking turns: g0 g0 g0 g1 g1 g1 g0 ...
    order = ["g0" if "t=g0&" in group[0] else "g1" for group in groups]
    assert order == ["g0"] * 3 + ["g1"] * 3 + ["g0"] * 3 + ["g1"] * 3


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest) -> str | None:
    """No URL (the resolver's SQLite file), or PostgreSQL (skipped, visibly, where absent)."""
    if request.param == "sqlite":
        return None
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def stack(tmp_path: Path, database_url: str | None) -> Iterator[dict[str, Any]]:
    """Upstream, resolver (on `database_url`), Groundhog proxy and mitmdump, as in `measure`.

    All start at once (each spends its start importing), then each is awaited.
    """
    with child_processes() as kids:
        upstream = spawn_child(
            "upstream", ["bench.proxy_perf", "--serve-upstream"], log_dir=tmp_path
        )
        kids.append(upstream)
        resolver = spawn_child(
            "resolver", resolver_arguments(tmp_path, database_url), log_dir=tmp_path
        )
        kids.append(resolver)
        proxy = spawn_child("proxy", proxy_arguments(resolver.url, tmp_path), log_dir=tmp_path)
        kids.append(proxy)
        plain = start_mitmdump("mitmdump", [], tmp_path)
        kids.append(plain)
        for child, health in ((upstream, "tcp"), (resolver, "http"), (proxy, "tcp")):
            await_child(child, health=health)
        yield {"upstream": upstream, "resolver": resolver, "proxy": proxy, "plain": plain}


def test_group_rows_through_the_real_proxy_record_in_the_chosen_store(
    stack: dict[str, Any], database_url: str | None
) -> None:
    tape = f"test-siblings-{time.time_ns()}"
    resolver = stack["resolver"]
    measured = group_conditions(
        resolver.url,
        stack["proxy"].port,
        stack["plain"].url,
        stack["upstream"].url,
        rounds=2,
        tape=tape,
    )
    assert set(measured) == {SIBLINGS, PLAIN_GROUP}
    for numbers in measured.values():
        assert numbers["requests"] == 2 * GROUP
        assert numbers["p50_ms"] > 0
    if database_url is None:
        url = f"sqlite:///{resolver.log_path.parent / 'groundhog.sqlite3'}"
    else:
        url = database_url
    engine = sqlalchemy.create_engine(url)
    count = sqlalchemy.text(
        "SELECT count(*) FROM gh_exchanges e JOIN gh_tapes t ON t.id = e.tape_id"
        " WHERE t.name = :tape"
    )
    try:
        with engine.connect() as connection:
            # Each siblings' group recorded its one new address once: 3 warm-up rounds + 2.
            assert connection.execute(count, {"tape": tape}).scalar_one() == 5
        delete_tapes(resolver.url, [tape])
        with engine.connect() as connection:
            assert connection.execute(count, {"tape": tape}).scalar_one() == 0
    finally:
        engine.dispose()


def test_sidecar_group_rows_ask_each_sibling_through_a_proxy_of_its_own(tmp_path: Path) -> None:
    """GROUP Groundhog proxies on one resolver and GROUP mitmdumps, as `measure` starts them."""
    tape = f"test-sidecars-{time.time_ns()}"
    with child_processes() as kids:
        upstream = spawn_child(
            "upstream", ["bench.proxy_perf", "--serve-upstream"], log_dir=tmp_path
        )
        kids.append(upstream)
        resolver = spawn_child("resolver", resolver_arguments(tmp_path, None), log_dir=tmp_path)
        kids.append(resolver)
        await_child(resolver, health="http")
        proxy = spawn_child("proxy", proxy_arguments(resolver.url, tmp_path), log_dir=tmp_path)
        kids.append(proxy)
        sidecars, plains = start_sidecars(resolver.url, tmp_path, kids, GROUP)
        plain = start_mitmdump("mitmdump", [], tmp_path)
        kids.append(plain)
        for child, health in ((upstream, "tcp"), (proxy, "tcp")):
            await_child(child, health=health)
        ports = [proxy.port, *(child.port for child in sidecars)]
        measured = group_conditions(
            resolver.url,
            proxy.port,
            plain.url,
            upstream.url,
            rounds=2,
            tape=tape,
            sidecar_ports=ports,
            plain_sidecar_urls=[plain.url, *(child.url for child in plains)],
        )
        assert len(set(ports)) == GROUP and len({child.url for child in plains}) == GROUP - 1
        with pytest.raises(ValueError, match="one sidecar of each kind per sibling"):
            group_conditions(
                resolver.url, proxy.port, plain.url, upstream.url, 1, f"{tape}-x", sidecar_ports=[1]
            )
        # Every sidecar proxy asked the one resolver: each group recorded its address once.
        exchanges = httpx.get(f"{resolver.url}/v1/tapes/{tape}", trust_env=False).json()
    assert set(measured) == {SIBLINGS, PLAIN_GROUP, SIDECARS, PLAIN_SIDECARS}
    for numbers_measured in measured.values():
        assert numbers_measured["requests"] == 2 * GROUP and numbers_measured["p50_ms"] > 0
    # Two conditions of siblings, 3 warm-up rounds and 2 measured each: 10 new addresses.
    assert exchanges["exchanges"] == 10
