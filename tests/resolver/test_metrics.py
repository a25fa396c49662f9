"""Unit tests of resolver/metrics.py: one registry per app, decisions and live calls counted."""

from __future__ import annotations

import pytest
from prometheus_client import generate_latest

from engine.policy import LIVE_DECISIONS, Decision
from resolver.metrics import Metrics


def _sample(metrics: Metrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels or None)


def test_two_apps_in_one_process_keep_separate_counts() -> None:
    first, second = Metrics(), Metrics()
    first.observe(Decision.SHARED, 0.001)
    assert _sample(first, "groundhog_decisions_total", decision="shared") == 1.0
    assert _sample(second, "groundhog_decisions_total", decision="shared") is None


@pytest.mark.parametrize("decision", list(Decision))
def test_only_live_decisions_count_as_live_calls(decision: Decision) -> None:
    metrics = Metrics()
    metrics.observe(decision, 0.0)
    metrics.observe(decision, 0.0)
    assert _sample(metrics, "groundhog_decisions_total", decision=str(decision)) == 2.0
    expected_live = 2.0 if decision in LIVE_DECISIONS else 0.0
    assert _sample(metrics, "groundhog_live_calls_total") == expected_live


def test_each_decision_keeps_its_own_count_in_one_app() -> None:
    metrics = Metrics()
    for decision in (Decision.SHARED, Decision.RECORDED, Decision.SHARED, Decision.STALE):
        metrics.observe(decision, 0.0)
    counted = {
        str(decision): _sample(metrics, "groundhog_decisions_total", decision=str(decision))
        for decision in (Decision.SHARED, Decision.RECORDED, Decision.STALE, Decision.WRITE)
    }
    assert counted == {"shared": 2.0, "recorded": 1.0, "stale": 1.0, "write": None}


def test_live_decisions_are_the_upstream_ones() -> None:
    assert {
        Decision.RECORDED,
        Decision.REFETCHED,
        Decision.WRITE,
        Decision.PASSTHROUGH,
        Decision.UPSTREAM_FAILED,  # the call was attempted; the world never answered
    } == LIVE_DECISIONS


def test_resolve_seconds_land_in_the_right_buckets() -> None:
    metrics = Metrics()
    for seconds in (0.0005, 0.003, 0.2, 30.0):
        metrics.observe(Decision.RECORDED, seconds)
    assert _sample(metrics, "groundhog_resolve_seconds_count") == 4.0
    assert _sample(metrics, "groundhog_resolve_seconds_sum") == pytest.approx(30.2035)
    assert _sample(metrics, "groundhog_resolve_seconds_bucket", le="0.001") == 1.0
    assert _sample(metrics, "groundhog_resolve_seconds_bucket", le="0.005") == 2.0
    assert _sample(metrics, "groundhog_resolve_seconds_bucket", le="0.25") == 3.0
    assert _sample(metrics, "groundhog_resolve_seconds_bucket", le="10.0") == 3.0
    assert _sample(metrics, "groundhog_resolve_seconds_bucket", le="60.0") == 4.0


def test_waits_and_tape_sizes_are_exposed() -> None:
    metrics = Metrics()
    metrics.single_flight_waits.inc()
    metrics.tape_exchanges.labels(tape="alpha").set(7)
    text = generate_latest(metrics.registry).decode()
    assert "groundhog_single_flight_waits_total 1.0" in text
    assert 'groundhog_tape_exchanges{tape="alpha"} 7.0' in text
