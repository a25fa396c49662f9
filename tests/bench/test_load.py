"""Tests for the speed rows' timing: summaries, concurrent askers, conditions taking turns."""

from __future__ import annotations

import asyncio
import statistics

import pytest

from bench.load import SliceRun, slice_of, summary, take_turns, timed_concurrently


def test_summary_of_known_latencies() -> None:
    latencies = [0.001 * value for value in range(1, 11)]  # 1..10 ms
    summarised = summary(latencies, elapsed=2.0)
    assert summarised["requests"] == 10
    assert summarised["p50_ms"] == pytest.approx(5.5)
    # Exclusive-method decile over 1..10: position 0.9 * 11 = 9.9 -> 9 + 0.9 * (10 - 9).
    assert summarised["p90_ms"] == pytest.approx(9.9)
    # Nearest rank: index int(0.99 * 10) = 9, the largest (never extrapolated past it).
    assert summarised["p99_ms"] == pytest.approx(10.0)
    assert summarised["throughput_rps"] == pytest.approx(5.0)


def test_summary_needs_at_least_two_latencies() -> None:
    with pytest.raises(statistics.StatisticsError):
        summary([0.1], elapsed=1.0)


def test_timed_concurrently_pairs_each_asker_with_its_urls() -> None:
    asked: list[tuple[str, str]] = []

    async def ask(asker: str, url: str) -> None:
        asked.append((asker, url))
        await asyncio.sleep(0)

    url_lists = [["a1", "a2", "a3"], ["b1", "b2", "b3"]]
    summarised = asyncio.run(timed_concurrently(ask, ["A", "B"], url_lists))
    assert summarised["requests"] == 6
    assert sorted(asked) == [(a, u) for a, us in zip("AB", url_lists, strict=True) for u in us]
    # Each asker goes through its list in order.
    assert [u for a, u in asked if a == "A"] == ["a1", "a2", "a3"]


# The library builds one coroutine before zip notices the mismatch; it is never awaited.
@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited:RuntimeWarning")
def test_timed_concurrently_refuses_mismatched_askers_and_lists() -> None:
    async def ask(_asker: str, _url: str) -> None:
        return None

    with pytest.raises(ValueError):
        asyncio.run(timed_concurrently(ask, ["A"], [["a"], ["b"]]))


def test_slices_cover_every_item_once_in_order() -> None:
    items = list(range(11))
    parts = [list(slice_of(items, index, 3)) for index in range(3)]
    assert parts == [[0, 1, 2], [3, 4, 5, 6], [7, 8, 9, 10]]
    assert [list(slice_of(items[:2], index, 5)) for index in range(5)] == [[], [], [0], [], [1]]


def test_conditions_take_turns_slice_by_slice_and_sum_their_numbers() -> None:
    ran: list[tuple[str, int]] = []

    def condition(name: str, seconds: float) -> SliceRun:
        async def run(index: int) -> tuple[list[float], float]:
            ran.append((name, index))
            return [seconds, seconds], seconds * 2

        return run

    taken = asyncio.run(take_turns({"base": condition("base", 0.5), "hit": condition("hit", 1)}, 3))
    # In the order given, every slice: a later condition may ask what an earlier one recorded.
    assert ran == [("base", 0), ("hit", 0), ("base", 1), ("hit", 1), ("base", 2), ("hit", 2)]
    assert taken == {"base": ([0.5] * 6, 3.0), "hit": ([1.0] * 6, 6.0)}
