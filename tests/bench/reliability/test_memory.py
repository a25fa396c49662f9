"""Unit tests for the reliability RSS series: the flatness verdict from first and last thirds."""

from __future__ import annotations

import threading
import time

from bench.reliability.memory import (
    FLAT_GROWTH_RATIO,
    FLAT_GROWTH_SLACK_KIB,
    MemorySampler,
    MemorySeries,
)


def series(values: list[int]) -> MemorySeries:
    return MemorySeries("resolver", [(float(index), kib) for index, kib in enumerate(values)])


def test_fewer_than_three_samples_give_no_verdict() -> None:
    summary = series([1000, 2000]).summary()
    assert summary == {"name": "resolver", "samples": 2, "flat": None}


def test_steady_memory_is_flat_with_its_thirds_and_peak() -> None:
    values = [100_000, 102_400, 101_376, 102_400, 103_424, 102_400]
    summary = series(values).summary()
    first = (100_000 + 102_400) / 2
    last = (103_424 + 102_400) / 2
    assert summary["samples"] == 6
    assert summary["first_third_mib"] == round(first / 1024, 1)
    assert summary["last_third_mib"] == round(last / 1024, 1)
    assert summary["peak_mib"] == round(103_424 / 1024, 1)
    assert summary["growth_ratio"] == round(last / first, 3)
    assert summary["flat"] is True


def test_large_growth_beyond_ratio_and_slack_is_not_flat() -> None:
    start = 200_000
    grown = int(start * (FLAT_GROWTH_RATIO + 0.5))
    assert grown - start > FLAT_GROWTH_SLACK_KIB
    summary = series([start, start, start, grown, grown, grown]).summary()
    assert summary["flat"] is False
    assert summary["growth_ratio"] == round(grown / start, 3)


def test_small_process_may_double_within_the_absolute_slack() -> None:
    start = 4_096
    doubled = start * 2
    assert doubled - start <= FLAT_GROWTH_SLACK_KIB
    summary = series([start, start, start, doubled, doubled, doubled]).summary()
    assert summary["flat"] is True
    assert summary["growth_ratio"] == 2.0


def test_growth_just_over_the_ratio_on_a_large_process_is_a_leak() -> None:
    start = 1_000_000
    grown = int(start * FLAT_GROWTH_RATIO) + FLAT_GROWTH_SLACK_KIB // 2 + 1
    assert grown > start * FLAT_GROWTH_RATIO
    assert grown - start > FLAT_GROWTH_SLACK_KIB
    assert series([start, start, start, grown, grown, grown]).summary()["flat"] is False


def test_thirds_of_an_uneven_count_use_floor_division() -> None:
    values = [10, 20, 30, 40, 50, 60, 70]
    summary = series([v * 1024 for v in values]).summary()
    # 7 // 3 == 2 samples per third: (10+20)/2 and (60+70)/2 MiB.
    assert summary["first_third_mib"] == 15.0
    assert summary["last_third_mib"] == 65.0


def test_zero_first_third_does_not_divide_by_zero() -> None:
    assert series([0, 0, 0]).summary()["growth_ratio"] == 0.0


class FakeChild:
    def __init__(self, name: str, readings: list[int | None]) -> None:
        self.name = name
        self.readings = readings

    def rss_kib(self) -> int | None:
        return self.readings.pop(0) if self.readings else None


def test_sampler_records_only_readings_that_exist() -> None:
    present = FakeChild("proxy", [5000, 6000])
    gone = FakeChild("dead", [])
    sampler = MemorySampler([present, gone], interval=0.001)  # type: ignore[list-item]
    samples = sampler.series["proxy"].samples
    with sampler:
        deadline = time.monotonic() + 10
        while len(samples) < 2 and time.monotonic() < deadline:
            threading.Event().wait(0.01)
    kib = [value for _, value in sampler.series["proxy"].samples]
    assert kib == [5000, 6000]
    assert sampler.series["dead"].samples == []
    names = [summary["name"] for summary in sampler.summaries()]
    assert names == ["proxy", "dead"]
