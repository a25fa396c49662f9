"""Tests for the proxy benchmark's own logic: fixed servers, load, summaries, ratios, table.

The full measurement belongs to `python -m bench.proxy_perf`; only the group rows run here
through a real resolver, proxy and mitmdump (two rounds), on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest
import sqlalchemy
from aiohttp import web
from aiohttp.test_utils import TestServer

from bench import proxy_perf
from bench.harness import await_child, free_port, spawn_child
from bench.proxy_perf import (
    BODY,
    GROUP,
    NO_ADDON,
    PLAIN_GROUP,
    PLAIN_SIDECARS,
    REPLAY,
    SIBLINGS,
    SIDECARS,
    _children,
    _delete_tapes,
    _group_conditions,
    _instant_resolve_answer,
    _interleaved,
    _interleaved_groups,
    _load,
    _proxy_with_identity,
    _row,
    _serve_fixed,
    _start_mitmdump,
    _start_sidecars,
    _summary,
    _timed_concurrently,
    _urls,
    median_rows,
    proxy_arguments,
    resolver_arguments,
    store_label,
    table,
)


def test_instant_answer_serves_the_benchmark_body_as_a_shared_hit() -> None:
    answer = json.loads(_instant_resolve_answer())
    assert (answer["action"], answer["decision"]) == ("serve", "shared")
    response = answer["response"]
    assert response["status"] == 200
    assert base64.b64decode(response["body"]) == BODY
    assert ["Content-Length", str(len(BODY))] in response["headers"]


def test_urls_are_distinct_per_client_and_tagged() -> None:
    urls = _urls("http://127.0.0.1:1", 3, 4, "n3")
    assert [len(sequence) for sequence in urls] == [4, 4, 4]
    flat = [url for sequence in urls for url in sequence]
    assert len(set(flat)) == 12
    assert urls[2][1] == "http://127.0.0.1:1/item?c=2&i=1&t=n3"


def test_proxy_identity_escapes_the_branch_separator() -> None:
    url = _proxy_with_identity(8080, "perf", "root/b1/c2")
    assert url == "http://perf:root%2Fb1%2Fc2@127.0.0.1:8080"


def test_summary_of_known_latencies() -> None:
    latencies = [0.001 * value for value in range(1, 11)]  # 1..10 ms
    summary = _summary(latencies, elapsed=2.0)
    assert summary["requests"] == 10
    assert summary["p50_ms"] == pytest.approx(5.5)
    # Exclusive-method decile over 1..10: position 0.9 * 11 = 9.9 -> 9 + 0.9 * (10 - 9).
    assert summary["p90_ms"] == pytest.approx(9.9)
    assert summary["throughput_rps"] == pytest.approx(5.0)


def test_summary_needs_at_least_two_latencies() -> None:
    with pytest.raises(statistics.StatisticsError):
        _summary([0.1], elapsed=1.0)


def numbers(p50: float, rps: float) -> dict[str, float]:
    return {"requests": 100, "p50_ms": p50, "p90_ms": p50 * 2, "throughput_rps": rps}


def test_row_gives_ratios_against_no_addon_and_replay_rounded() -> None:
    measured = {NO_ADDON: numbers(2.0, 900.0), REPLAY: numbers(3.0, 600.0)}
    row = _row("groundhog hit path", 8, numbers(2.2, 810.0), measured)
    assert row["condition"] == "groundhog hit path" and row["clients"] == 8
    assert row["p50_vs_no_addon"] == round(2.2 / 2.0, 3)
    assert row["throughput_vs_no_addon"] == round(810.0 / 900.0, 3)
    assert row["p50_vs_replay"] == round(2.2 / 3.0, 3)
    assert row["throughput_vs_replay"] == round(810.0 / 600.0, 3)
    assert row["requests"] == 100  # integers are left alone


def test_row_without_a_baseline_measured_fails_loudly() -> None:
    with pytest.raises(KeyError):
        _row("x", 1, numbers(1.0, 1.0), {NO_ADDON: numbers(1.0, 1.0)})


def test_siblings_row_is_also_judged_against_four_plain_forwards() -> None:
    measured = {
        NO_ADDON: numbers(2.0, 500.0),
        REPLAY: numbers(4.0, 250.0),
        PLAIN_GROUP: numbers(6.0, 600.0),
    }
    row = _row(SIBLINGS, 1, numbers(15.0, 240.0), measured)
    assert row["p50_vs_no_addon"] == 7.5  # the ratio, unchanged: one plain forward
    assert row["p50_vs_plain_group"] == 2.5
    assert row["throughput_vs_plain_group"] == 0.4
    # The sidecar siblings are judged against four plain forwards through four proxies.
    measured[PLAIN_SIDECARS] = numbers(3.0, 1000.0)
    sidecars = _row(SIDECARS, 1, numbers(4.5, 800.0), measured)
    assert sidecars["p50_vs_no_addon"] == 2.25 and sidecars["p50_vs_plain_group"] == 1.5
    # Only the siblings rows have the second baseline; without it measured, it fails loudly.
    assert "p50_vs_plain_group" not in _row(PLAIN_GROUP, 1, measured[PLAIN_GROUP], measured)
    with pytest.raises(KeyError):
        _row(
            SIBLINGS,
            1,
            numbers(15.0, 240.0),
            {NO_ADDON: measured[NO_ADDON], REPLAY: measured[REPLAY]},
        )


def test_table_formats_one_line_per_row_under_the_store() -> None:
    measured = {NO_ADDON: numbers(2.0, 1000.0), REPLAY: numbers(4.0, 500.0)}
    rows = [{**_row("direct", 1, numbers(1.0, 2000.0), measured), "store": "sqlite (a file)"}]
    lines = table(rows).splitlines()
    assert len(lines) == 5
    assert lines[0] == "proxy rows; the resolver's store: sqlite (a file)"
    assert lines[4] == "| direct | 1 | 1.00 | 2.00 | 2000 | 0.50x | 2.00x | 0.25x | 4.00x |"


def test_table_states_the_siblings_against_both_baselines() -> None:
    measured = {
        NO_ADDON: numbers(2.0, 500.0),
        REPLAY: numbers(4.0, 250.0),
        PLAIN_GROUP: numbers(6.0, 600.0),
    }
    rows = [
        {**_row(name, 1, measured[name], measured), "store": "postgresql (u)"}
        for name in (NO_ADDON, REPLAY, PLAIN_GROUP)
    ]
    rows.append({**_row(SIBLINGS, 1, numbers(15.0, 240.0), measured), "store": "postgresql (u)"})
    measured[PLAIN_SIDECARS] = numbers(4.0, 900.0)
    rows.append({**_row(SIDECARS, 1, numbers(5.0, 700.0), measured), "store": "postgresql (u)"})
    text = table(rows)
    assert text.startswith("proxy rows; the resolver's store: postgresql (u)\n")
    assert text.splitlines()[-3:] == [
        f"{GROUP} siblings' last answer, through one proxy (goal: within 1.3x of one plain "
        f"forward): 7.50x one plain forward, 2.50x {GROUP} concurrent plain forwards through "
        "one proxy (p50, mitmproxy with no addon, same run)",
        "",
        f"{GROUP} siblings' last answer, one sidecar each (goal: within 1.3x of one plain "
        f"forward): 2.50x one plain forward, 1.25x {GROUP} concurrent plain forwards one "
        "sidecar each (p50, mitmproxy with no addon, same run)",
    ]


def test_store_label_names_the_database_without_its_password() -> None:
    assert store_label(None) == "sqlite (a fresh file)"
    label = store_label("postgresql+psycopg://bench:secret@127.0.0.1:5432/test")
    assert label == "postgresql (postgresql+psycopg://bench:***@127.0.0.1:5432/test)"


def test_main_gives_every_run_the_database_url(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[dict[str, Any]] = []
    measured = {NO_ADDON: numbers(2.0, 1000.0), REPLAY: numbers(4.0, 500.0)}

    def fake_measure(**options: Any) -> list[dict[str, Any]]:
        calls.append(options)
        label = store_label(options["database_url"])
        return [{**_row("direct", 1, numbers(1.0, 2000.0), measured), "store": label}]

    monkeypatch.setattr(proxy_perf, "measure", fake_measure)
    url = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
    proxy_perf.main(["--quick", "--repeat", "2", "--database-url", url])
    assert calls == [{"quick": True, "database_url": url}] * 2
    assert capsys.readouterr().out.startswith(
        f"proxy rows; the resolver's store: postgresql ({url})"
    )


def test_timed_concurrently_pairs_each_asker_with_its_urls() -> None:
    asked: list[tuple[str, str]] = []

    async def ask(asker: str, url: str) -> None:
        asked.append((asker, url))
        await asyncio.sleep(0)

    url_lists = [["a1", "a2", "a3"], ["b1", "b2", "b3"]]
    summary = asyncio.run(_timed_concurrently(ask, ["A", "B"], url_lists))
    assert summary["requests"] == 6
    assert sorted(asked) == [(a, u) for a, us in zip("AB", url_lists, strict=True) for u in us]
    # Each asker goes through its list in order.
    assert [u for a, u in asked if a == "A"] == ["a1", "a2", "a3"]


# The library builds one coroutine before zip notices the mismatch; it is never awaited.
@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited:RuntimeWarning")
def test_timed_concurrently_refuses_mismatched_askers_and_lists() -> None:
    async def ask(_asker: str, _url: str) -> None:
        return None

    with pytest.raises(ValueError):
        asyncio.run(_timed_concurrently(ask, ["A"], [["a"], ["b"]]))


async def with_fixed_server(body: bytes, exercise: Any) -> Any:
    port = free_port()
    server = asyncio.create_task(_serve_fixed("127.0.0.1", port, body))
    try:
        for _ in range(200):
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.01)
                continue
            writer.close()
            break
        return await exercise(f"http://127.0.0.1:{port}")
    finally:
        server.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await server


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


def test_load_through_no_proxy_counts_every_request() -> None:
    async def exercise(base: str) -> dict[str, float]:
        return await _load([None, None], _urls(base, 2, 3, "t"))

    summary = asyncio.run(with_fixed_server(BODY, exercise))
    assert summary["requests"] == 6
    assert summary["p50_ms"] <= summary["p90_ms"]


def test_load_refuses_a_non_200_answer() -> None:
    async def exercise(base: str) -> dict[str, float]:
        return await _load([None], [[f"{base}/x", f"{base}/y"]])

    async def run() -> None:
        # A server with no routes answers 404 to everything: a broken path.
        app = web.Application()
        async with TestServer(app, host="127.0.0.1") as server:
            await exercise(str(server.make_url("")).rstrip("/"))

    with pytest.raises(RuntimeError, match="answered 404"):
        asyncio.run(run())


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
            return await _interleaved_groups(conditions, base, rounds=6, slices=2)

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
    with _children() as kids:
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
        plain = _start_mitmdump("mitmdump", [], tmp_path)
        kids.append(plain)
        for child, health in ((upstream, "tcp"), (resolver, "http"), (proxy, "tcp")):
            await_child(child, health=health)
        yield {"upstream": upstream, "resolver": resolver, "proxy": proxy, "plain": plain}


def test_group_rows_through_the_real_proxy_record_in_the_chosen_store(
    stack: dict[str, Any], database_url: str | None
) -> None:
    tape = f"test-siblings-{time.time_ns()}"
    resolver = stack["resolver"]
    measured = _group_conditions(
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
        _delete_tapes(resolver.url, [tape])
        with engine.connect() as connection:
            assert connection.execute(count, {"tape": tape}).scalar_one() == 0
    finally:
        engine.dispose()


def test_sidecar_group_rows_ask_each_sibling_through_a_proxy_of_its_own(tmp_path: Path) -> None:
    """GROUP Groundhog proxies on one resolver and GROUP mitmdumps, as `measure` starts them."""
    tape = f"test-sidecars-{time.time_ns()}"
    with _children() as kids:
        upstream = spawn_child(
            "upstream", ["bench.proxy_perf", "--serve-upstream"], log_dir=tmp_path
        )
        kids.append(upstream)
        resolver = spawn_child("resolver", resolver_arguments(tmp_path, None), log_dir=tmp_path)
        kids.append(resolver)
        await_child(resolver, health="http")
        proxy = spawn_child("proxy", proxy_arguments(resolver.url, tmp_path), log_dir=tmp_path)
        kids.append(proxy)
        sidecars, plains = _start_sidecars(resolver.url, tmp_path, kids)
        plain = _start_mitmdump("mitmdump", [], tmp_path)
        kids.append(plain)
        for child, health in ((upstream, "tcp"), (proxy, "tcp")):
            await_child(child, health=health)
        ports = [proxy.port, *(child.port for child in sidecars)]
        measured = _group_conditions(
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
            _group_conditions(
                resolver.url, proxy.port, plain.url, upstream.url, 1, f"{tape}-x", sidecar_ports=[1]
            )
        # Every sidecar proxy asked the one resolver: each group recorded its address once.
        exchanges = httpx.get(f"{resolver.url}/v1/tapes/{tape}", trust_env=False).json()
    assert set(measured) == {SIBLINGS, PLAIN_GROUP, SIDECARS, PLAIN_SIDECARS}
    for numbers_measured in measured.values():
        assert numbers_measured["requests"] == 2 * GROUP and numbers_measured["p50_ms"] > 0
    # Two conditions of siblings, 3 warm-up rounds and 2 measured each: 10 new addresses.
    assert exchanges["exchanges"] == 10


def test_median_rows_take_each_number_over_runs() -> None:
    def run(p50: float, ratio: float) -> list[dict[str, Any]]:
        return [
            {
                "condition": "x",
                "clients": 1,
                "requests": 10,
                "p50_ms": p50,
                "p50_vs_no_addon": ratio,
            }
        ]

    rows = median_rows([run(1.0, 2.0), run(9.0, 1.0), run(2.0, 1.5)])
    assert rows == [
        {"condition": "x", "clients": 1, "requests": 10, "p50_ms": 2.0, "p50_vs_no_addon": 1.5}
    ]
    with pytest.raises(ValueError, match="different conditions"):
        median_rows([run(1.0, 1.0), [{**run(1.0, 1.0)[0], "condition": "y"}]])


def test_interleaved_conditions_take_turns_over_slices_of_every_clients_urls() -> None:
    async def exercise(base: str) -> dict[str, dict[str, float]]:
        conditions = [("first", [None, None]), ("second", [None, None])]
        return await _interleaved(conditions, _urls(base, 2, 6, "t"), slices=3)

    measured = asyncio.run(with_fixed_server(BODY, exercise))
    assert set(measured) == {"first", "second"}
    assert all(numbers["requests"] == 12 for numbers in measured.values())
