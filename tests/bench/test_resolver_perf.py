"""Unit tests for the resolver benchmark's own logic: ratios, table, load test, turns.

The full measurement (tapes of up to 1M exchanges, child processes) is never run here.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bench.resolver_perf import _compare, interleaved, load_test, table


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


def fake_resolve(decision: str, status: int = 200) -> web.Application:
    async def resolve(_request: web.Request) -> web.Response:
        return web.json_response({"decision": decision}, status=status)

    app = web.Application()
    app.router.add_post("/v1/resolve", resolve)
    return app


def runload(app: web.Application, bodies: list[dict[str, Any]], concurrency: int) -> Any:
    async def run() -> dict[str, float]:
        async with TestServer(app, host="127.0.0.1") as server:
            return await load_test(str(server.make_url("")).rstrip("/"), bodies, concurrency)

    return asyncio.run(run())


def test_load_test_counts_every_answer_and_orders_its_percentiles() -> None:
    result = runload(fake_resolve("baseline"), [{}] * 12, 3)
    assert result["requests"] == 12
    assert result["throughput_rps"] > 0
    assert 0 < result["p50_ms"] <= result["p99_ms"]


@pytest.mark.parametrize(("decision", "status"), [("fresh", 200), ("shared", 500)])
def test_load_test_refuses_anything_but_a_hit(decision: str, status: int) -> None:
    with pytest.raises(RuntimeError, match="expected a hit"):
        runload(fake_resolve(decision, status), [{}] * 2, 1)


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
