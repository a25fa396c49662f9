"""bench.harness: readiness polling with a deadline and clear errors; bench.speed's fallbacks."""

from __future__ import annotations

import os
import sys
import time
import types

import pytest

from bench import harness, speed
from bench.config import quick_config


def test_wait_until_raises_a_service_error_naming_what_it_waited_for() -> None:
    with pytest.raises(harness.ServiceError, match="the impossible"):
        harness.wait_until(lambda: False, timeout=0.2, what="the impossible")


def test_a_child_that_exits_early_is_reported_with_its_output(tmp_path) -> None:
    with pytest.raises(harness.ServiceError, match="exited early") as caught:
        harness.start_child(
            "missing", ["bench_no_such_module"], health="http", timeout=30, log_dir=tmp_path
        )
    assert "No module named" in str(caught.value)


def test_connecting_to_nothing_fails_within_its_deadline() -> None:
    closed = f"http://127.0.0.1:{harness.free_port()}"
    with (
        pytest.raises(harness.ServiceError, match="worldsim"),
        harness.connected_services(closed, closed, closed, timeout=0.3),
    ):
        pass


def test_speed_rows_say_not_measured_when_a_script_is_missing_or_broken(monkeypatch) -> None:
    assert speed.measure_one("bench.no_such_perf_script", quick=True).startswith("not measured")
    broken = types.ModuleType("bench_broken_perf")

    def measure(quick: bool) -> list[dict]:
        raise RuntimeError("boom")

    broken.measure = measure
    monkeypatch.setitem(sys.modules, "bench_broken_perf", broken)
    assert "boom" in speed.measure_one("bench_broken_perf", quick=True)
    working = types.ModuleType("bench_working_perf")
    working.measure = lambda quick: [{"name": "p50", "quick": quick}]
    monkeypatch.setitem(sys.modules, "bench_working_perf", working)
    assert speed.measure_one("bench_working_perf", quick=True) == [{"name": "p50", "quick": True}]


def test_speed_can_be_skipped() -> None:
    from dataclasses import replace

    rows = speed.measure(replace(quick_config(), measure_speed=False), lambda _: None)
    assert all(value.startswith("not measured") for value in rows.values())


def test_cpu_seconds_counts_what_a_process_spent() -> None:
    before = harness.cpu_seconds(os.getpid())
    deadline = time.process_time() + 0.05
    while time.process_time() < deadline:
        pass
    assert harness.cpu_seconds(os.getpid()) - before >= 0.03
