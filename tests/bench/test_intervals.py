"""Intervals on constructed data whose answers are known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench import intervals, stats


def test_a_variance_ratio_interval_covers_the_truth_and_excludes_one() -> None:
    rng = np.random.default_rng(1)
    wide, narrow = rng.normal(scale=3.0, size=200), rng.normal(scale=1.0, size=200)
    ratio = intervals.variance_ratio(wide, narrow, paired=False)
    assert ratio["low"] < 9.0 < ratio["high"]
    assert ratio["low"] > 1.0
    same = intervals.variance_ratio(narrow, rng.normal(size=200), paired=False)
    assert same["low"] < 1.0 < same["high"]


def test_equivalence_needs_the_whole_interval_inside_the_margin() -> None:
    assert intervals.equivalence(stats.Estimate(0.01, 0.02), 0.1)["equivalent"]
    # Not rejecting zero is not equivalence: a wide interval fails.
    assert not intervals.equivalence(stats.Estimate(0.0, 0.2), 0.1)["equivalent"]
    assert not intervals.equivalence(stats.Estimate(0.3, 0.01), 0.1)["equivalent"]


def test_exact_rates() -> None:
    none = intervals.rate(0, 100)
    assert none["value"] == 0 and none["low"] == 0 and 0.03 < none["high"] < 0.04
    assert intervals.rate(0, 0)["value"] is None
    some = intervals.rate(5, 10)
    assert some["low"] < 0.5 < some["high"]


def test_reshuffled_sequential_reports_median_and_iqr() -> None:
    rng = np.random.default_rng(2)
    strong = rng.normal(loc=1.0, scale=1.0, size=60)
    row = intervals.reshuffled_sequential(
        strong, truth_sign=1, per_sample=2, alpha=0.05, min_samples=5, reshuffles=50
    )
    assert row["stable_reached"] == 1.0
    low, high = row["stable_iqr"]
    assert low <= row["stable_median"] <= high <= 120
    noise = rng.normal(size=20)
    row = intervals.reshuffled_sequential(
        noise, truth_sign=1, per_sample=2, alpha=0.05, min_samples=5, reshuffles=20
    )
    assert row["stable_median"] == math.inf


def test_mean_difference() -> None:
    got = intervals.mean_difference([1.0, 1.1, 0.9, 1.0], [0.0, 0.1, -0.1, 0.0])
    assert got["value"] == pytest.approx(1.0) and got["low"] > 0.5


def test_a_t_interval_of_a_mean_over_a_few_worlds() -> None:
    interval = intervals.t_mean([1.0, 2.0, 3.0, 4.0])
    half = 3.182446 * float(np.std([1.0, 2.0, 3.0, 4.0], ddof=1)) / 2.0
    assert interval["value"] == pytest.approx(2.5)
    assert interval["low"] == pytest.approx(2.5 - half, rel=1e-5)
    assert interval["high"] == pytest.approx(2.5 + half, rel=1e-5)
    # A count that never varies has a zero-width interval; one world has none.
    assert intervals.t_mean([7, 7, 7]) == {"value": 7.0, "low": 7.0, "high": 7.0, "level": 0.95}
    assert intervals.t_mean([7])["low"] is None
