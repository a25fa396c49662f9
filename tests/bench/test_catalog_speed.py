"""bench/catalog_speed.py: the catalog's speed row is computed from the rounds' measurements."""

from __future__ import annotations

import pytest

from bench.catalog_speed import BUDGET, row


def test_the_row_is_the_ratio_of_each_rounds_p50s_with_an_interval() -> None:
    rounds = [(0.00102, 0.00100), (0.00101, 0.00100), (0.00103, 0.00100), (0.00100, 0.00100)]
    measured = row(rounds)
    assert measured["rounds"] == 4
    assert measured["ratio_median"] == pytest.approx(1.015)
    low, high = measured["ratio_interval_95"]
    assert 1.0 <= low <= measured["ratio_mean"] <= high <= 1.03
    assert measured["within_budget"] and measured["budget"] == BUDGET
    slower = row([(0.0011, 0.0010), (0.0012, 0.0010)])
    assert not slower["within_budget"] and slower["on_p50_ms"] == pytest.approx(1.15)


def test_no_rounds_is_no_row() -> None:
    with pytest.raises(ValueError):
        row([])
