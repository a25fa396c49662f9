"""Unit tests for the proxy benchmark's own logic: fixed servers, load, summaries, ratios, table.

No proxy or mitmdump is started: the full measurement belongs to `python -m bench.proxy_perf`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import statistics
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bench.harness import free_port
from bench.proxy_perf import (
    BODY,
    NO_ADDON,
    REPLAY,
    _group_rounds,
    _instant_resolve_answer,
    _interleaved,
    _load,
    _proxy_with_identity,
    _row,
    _serve_fixed,
    _summary,
    _timed_concurrently,
    _urls,
    median_rows,
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


def test_table_formats_one_line_per_row() -> None:
    measured = {NO_ADDON: numbers(2.0, 1000.0), REPLAY: numbers(4.0, 500.0)}
    rows = [_row("direct", 1, numbers(1.0, 2000.0), measured)]
    lines = table(rows).splitlines()
    assert len(lines) == 3
    assert lines[2] == "| direct | 1 | 1.00 | 2.00 | 2000 | 0.50x | 2.00x | 0.25x | 4.00x |"


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


def test_group_rounds_count_one_latency_per_round_and_every_answer() -> None:
    async def exercise(base: str) -> dict[str, float]:
        return await _group_rounds([None] * 4, base, rounds=5)

    summary = asyncio.run(with_fixed_server(BODY, exercise))
    assert summary["requests"] == 20  # four answers a round
    assert summary["p50_ms"] <= summary["p90_ms"]
    assert summary["throughput_rps"] > 0


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
