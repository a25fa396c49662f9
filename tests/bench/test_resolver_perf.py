"""Unit tests for the resolver benchmark's own logic: bodies, bulk load, ratios, table, load test.

The full measurement (tapes of up to 1M exchanges, child processes) is never run here; a
five-exchange tape is loaded and asked through an in-process resolver instead.
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from fastapi.testclient import TestClient

from bench.resolver_perf import (
    BRANCHES,
    HOST,
    _compare,
    bulk_load,
    drop_tapes,
    hit_bodies,
    interleaved,
    item_request,
    load_test,
    resolve_body,
    table,
    tape_name,
)
from resolver.app import create_app
from resolver.schemas import check_tape_name
from resolver.settings import load_settings


def test_item_request_addresses_the_indexed_item() -> None:
    request = item_request(42)
    assert (request.method, request.scheme, request.host, request.port) == (
        "GET",
        "https",
        HOST,
        443,
    )
    assert request.path == "/items/42"
    assert request.url() == f"https://{HOST}/items/42?q=x"


def test_resolve_body_is_a_get_for_the_item_on_the_branch() -> None:
    body = resolve_body("tape-a", "root/b3", 7)
    assert body["tape"] == "tape-a" and body["branch"] == "root/b3"
    assert (body["method"], body["host"], body["port"]) == ("GET", HOST, 443)
    assert body["path"] == "/items/7"
    assert body["query"] == [["q", "x"]]
    assert body["headers"] == [] and body["body"] == ""


def test_hit_bodies_are_distinct_branch_and_item_pairs() -> None:
    size = 10
    bodies = hit_bodies("t", size, 50, random.Random(1))
    pairs = [(body["branch"], body["path"]) for body in bodies]
    assert len(pairs) == 50
    assert len(set(pairs)) == 50
    for branch, path in pairs:
        assert 0 <= int(branch.removeprefix("root/b")) < BRANCHES
        assert 0 <= int(path.removeprefix("/items/")) < size


def test_hit_bodies_never_ask_more_pairs_than_exist() -> None:
    bodies = hit_bodies("t", 2, 1000, random.Random(0))
    pairs = {(body["branch"], body["path"]) for body in bodies}
    assert len(bodies) == len(pairs) == 2 * BRANCHES


def test_compare_divides_by_the_baseline() -> None:
    base = {"throughput_rps": 1000.0, "p50_ms": 2.0, "p99_ms": 8.0}
    result = {"requests": 10, "throughput_rps": 500.0, "p50_ms": 3.0, "p99_ms": 4.0}
    compared = _compare(result, base)
    assert compared["throughput_ratio"] == pytest.approx(0.5)
    assert compared["p50_ratio"] == pytest.approx(1.5)
    assert compared["p99_ratio"] == pytest.approx(0.5)
    assert compared["requests"] == 10


def test_table_has_a_baseline_row_per_client_count_and_a_row_per_tape() -> None:
    result: dict[str, Any] = {
        "database": "sqlite",
        "baselines": {"1": {"throughput_rps": 2000.4, "p50_ms": 0.5, "p99_ms": 0.9}},
        "tapes": [
            {
                "exchanges": 100000,
                "concurrency": 1,
                "throughput_rps": 1000.0,
                "throughput_ratio": 0.5,
                "p50_ms": 1.0,
                "p50_ratio": 2.0,
                "p99_ms": 3.0,
                "p99_ratio": 3.333,
            }
        ],
    }
    lines = table(result).splitlines()
    assert "sqlite" in lines[0]
    assert lines[3] == "| baseline | 1 | 2000 | 1.00 | 0.50 | 1.00 | 0.90 | 1.00 |"
    assert lines[4] == "| 100,000 | 1 | 1000 | 0.50 | 1.00 | 2.00 | 3.00 | 3.33 |"
    assert len(lines) == 5


def exchange_rows(path: Path) -> list[tuple[str, int, str, str]]:
    with sqlite3.connect(path) as connection:
        return connection.execute(
            "SELECT request_url, occurrence, fingerprint, key_hash FROM gh_exchanges"
        ).fetchall()


@pytest.fixture(scope="module")
def loaded_tape(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("resolver-perf")
    bulk_load(f"sqlite:///{data / 'groundhog.sqlite3'}", "perf-5", 5)
    return data


def test_bulk_load_writes_one_exchange_per_item_at_occurrence_zero(loaded_tape: Path) -> None:
    rows = exchange_rows(loaded_tape / "groundhog.sqlite3")
    assert sorted(url for url, _, _, _ in rows) == sorted(
        f"https://{HOST}/items/{index}?q=x" for index in range(5)
    )
    assert {(occurrence, fingerprint) for _, occurrence, fingerprint, _ in rows} == {(0, "")}
    assert len({key for _, _, _, key in rows}) == 5


def test_bulk_load_forks_the_branches(loaded_tape: Path) -> None:
    with sqlite3.connect(loaded_tape / "groundhog.sqlite3") as connection:
        names = {row[0] for row in connection.execute("SELECT path FROM gh_branches")}
    assert {f"root/b{index}" for index in range(BRANCHES)} <= names


def test_every_hit_body_is_served_shared_by_the_real_resolver(loaded_tape: Path) -> None:
    """The property the benchmark relies on: each (branch, item) pair is a hit."""
    settings = load_settings(data_dir=loaded_tape)
    with TestClient(create_app(settings)) as client:
        for body in hit_bodies("perf-5", 5, 6, random.Random(2)):
            answer = client.post("/v1/resolve", json=body).json()
            assert answer["decision"] == "shared", answer
            assert answer["action"] == "serve"


def fake_resolve(decision: str, status: int = 200) -> web.Application:
    async def resolve(_request: web.Request) -> web.Response:
        return web.json_response({"decision": decision}, status=status)

    app = web.Application()
    app.router.add_post("/v1/resolve", resolve)
    return app


def run_load(app: web.Application, bodies: list[dict[str, Any]], concurrency: int) -> Any:
    async def run() -> dict[str, float]:
        async with TestServer(app, host="127.0.0.1") as server:
            return await load_test(str(server.make_url("")).rstrip("/"), bodies, concurrency)

    return asyncio.run(run())


def test_load_test_counts_every_answer_and_orders_its_percentiles() -> None:
    result = run_load(fake_resolve("baseline"), [{}] * 12, 3)
    assert result["requests"] == 12
    assert result["throughput_rps"] > 0
    assert 0 < result["p50_ms"] <= result["p99_ms"]


@pytest.mark.parametrize(("decision", "status"), [("fresh", 200), ("shared", 500)])
def test_load_test_refuses_anything_but_a_hit(decision: str, status: int) -> None:
    with pytest.raises(RuntimeError, match="expected a hit"):
        run_load(fake_resolve(decision, status), [{}] * 2, 1)


def test_interleaved_conditions_take_turns_slice_by_slice() -> None:
    """The baseline and each tape ask in the same moments: A's slice, B's, A's, B's, ..."""
    arrivals: list[tuple[str, int]] = []

    def numbered(name: str) -> web.Application:
        async def resolve(request: web.Request) -> web.Response:
            arrivals.append((name, (await request.json())["n"]))
            return web.json_response({"decision": "baseline"})

        app = web.Application()
        app.router.add_post("/v1/resolve", resolve)
        return app

    async def run() -> dict[str, dict[str, float]]:
        async with (
            TestServer(numbered("a"), host="127.0.0.1") as first,
            TestServer(numbered("b"), host="127.0.0.1") as second,
        ):
            conditions = {
                "a": (str(first.make_url("")).rstrip("/"), [{"n": n} for n in range(9)]),
                "b": (str(second.make_url("")).rstrip("/"), [{"n": n} for n in range(6)]),
            }
            return await interleaved(conditions, 1, slices=3)

    measured = asyncio.run(run())
    assert {name: numbers["requests"] for name, numbers in measured.items()} == {"a": 9, "b": 6}
    turns = [name for index, (name, _) in enumerate(arrivals) if arrivals[index - 1][0] != name]
    assert turns == ["a", "b", "a", "b", "a", "b"]
    assert [n for name, n in arrivals if name == "a"] == list(range(9))
    assert [n for name, n in arrivals if name == "b"] == list(range(6))


def test_tape_names_differ_between_runs_and_are_valid() -> None:
    first, second = tape_name(1_000), tape_name(1_000)
    assert first != second
    assert first.startswith("perf-1000-")
    assert check_tape_name(first) == first


def test_drop_tapes_deletes_the_named_tapes_only(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'groundhog.sqlite3'}"
    bulk_load(url, "kept", 3)
    bulk_load(url, "dropped", 4)
    drop_tapes(url, ["dropped", "never-made"])
    with sqlite3.connect(tmp_path / "groundhog.sqlite3") as connection:
        names = [row[0] for row in connection.execute("SELECT name FROM gh_tapes")]
        exchanges = connection.execute("SELECT count(*) FROM gh_exchanges").fetchone()[0]
    assert names == ["kept"]
    assert exchanges == 3
