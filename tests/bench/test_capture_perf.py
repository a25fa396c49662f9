"""bench/capture_perf.py: the captured-vs-proxied row comes from what its clients measured.

No timing is asserted (speed is measured, never tested): the pure parts are checked on
constructed rounds (a ratio is the rounds' own, and moves when they do), a machine without
namespaces gets the reason instead of a row, and a small real run (root only; skipped with the
reason elsewhere) gives rows whose ratios are the quotients of the numbers printed beside them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import capture_perf
from bench.capture_perf import CAPTURED, PROXIED, CaptureSkipped, round_ratio, row

Rounds = list[tuple[list[float], float]]


def rounds(latencies: list[list[float]]) -> Rounds:
    """Rounds of one client asking one after another: each round's seconds, its latencies' sum."""
    return [(taken, sum(taken)) for taken in latencies]


def test_the_ratio_is_the_pooled_rounds_own() -> None:
    proxied = rounds([[0.010, 0.012, 0.011], [0.009, 0.010, 0.011], [0.012, 0.010, 0.013]])
    captured = rounds([[2 * x for x in taken] for taken, _ in proxied])
    ratio = round_ratio(proxied, captured)
    assert ratio["p50"]["value"] == pytest.approx(2.0)
    assert ratio["throughput"]["value"] == pytest.approx(0.5)
    for interval in ratio.values():
        low, high, value = interval["low"], interval["high"], interval["value"]
        assert low is not None and high is not None and value is not None
        assert low <= value <= high

    slower = rounds([[3 * x for x in taken] for taken, _ in proxied])
    assert round_ratio(proxied, slower)["p50"]["value"] == pytest.approx(3.0)


def test_the_interval_widens_when_the_rounds_disagree() -> None:
    proxied = rounds([[0.010] * 4] * 6)
    steady = round_ratio(proxied, rounds([[0.011] * 4] * 6))["p50"]
    noisy = round_ratio(proxied, rounds([[0.005] * 4, [0.020] * 4] * 3))["p50"]
    assert steady["low"] == steady["high"] == pytest.approx(1.1)
    assert noisy["low"] is not None and noisy["high"] is not None
    assert noisy["high"] - noisy["low"] > 0.5


def test_rounds_must_pair() -> None:
    with pytest.raises(ValueError, match="same number"):
        round_ratio(rounds([[0.01, 0.01]] * 3), rounds([[0.01, 0.01]] * 2))


def test_a_row_summarises_each_condition_from_its_rounds() -> None:
    taken = {
        "captured": rounds([[0.002, 0.004], [0.003, 0.005]]),
        "proxied": rounds([[0.001, 0.002], [0.002, 0.003]]),
    }
    measured = row(taken, clients=1)
    assert measured["rounds"] == 2 and measured["clients"] == 1
    assert measured["conditions"][CAPTURED]["p50_ms"] == pytest.approx(3.5)
    assert measured["conditions"][PROXIED]["p50_ms"] == pytest.approx(2.0)
    assert measured["p50_captured_vs_proxied"]["value"] == pytest.approx(1.75)
    assert measured["goal_met"] is False  # 1.75x is past the 1.2x goal


def test_without_namespaces_the_run_says_why_and_measures_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def refuse() -> None:
        raise CaptureSkipped("no capture namespaces on this machine: no CAP_NET_ADMIN")

    monkeypatch.setattr(capture_perf, "capture_possible", refuse)
    out = tmp_path / "rows.json"
    capture_perf.main(["--json", str(out)])
    assert "skipped: no capture namespaces on this machine" in capsys.readouterr().out
    assert json.loads(out.read_text()) == {
        "skipped": "no capture namespaces on this machine: no CAP_NET_ADMIN"
    }


def test_a_small_real_run_gives_rows_derived_from_its_measurements() -> None:
    try:
        capture_perf.capture_possible()
    except CaptureSkipped as skipped:
        pytest.skip(str(skipped))
    rows = capture_perf.measure(rounds=2, per_round=3)
    layout = [(measured["clients"], measured["connections"]) for measured in rows]
    assert layout == [(1, capture_perf.KEPT), (8, capture_perf.KEPT), (1, capture_perf.FRESH)]
    for measured in rows:
        captured, proxied = (measured["conditions"][label] for label in (CAPTURED, PROXIED))
        assert captured["requests"] == proxied["requests"] == 2 * 3 * measured["clients"]
        ratio = measured["p50_captured_vs_proxied"]
        assert ratio["value"] == pytest.approx(captured["p50_ms"] / proxied["p50_ms"])
        throughput = measured["throughput_captured_vs_proxied"]["value"]
        assert throughput == pytest.approx(captured["throughput_rps"] / proxied["throughput_rps"])
        assert ratio["low"] <= ratio["value"] <= ratio["high"]
