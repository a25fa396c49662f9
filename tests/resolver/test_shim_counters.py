"""The merge rule for reported shim counters: never back, per channel and for the clock."""

from __future__ import annotations

import pytest

from resolver.shim_counters import CountersMismatch, merge_counters


def counters(clock: int, **occurrences: int) -> dict[str, object]:
    return {"version": 1, "world_seed": 3, "clock_ns": clock, "occurrences": occurrences}


def test_first_report_is_stored_as_sent() -> None:
    assert merge_counters({}, counters(5, uuid4=2)) == counters(5, uuid4=2)


def test_a_late_older_report_does_not_take_the_branch_back() -> None:
    stored = counters(900, uuid4=7, random=3)
    merged = merge_counters(stored, counters(100, uuid4=2, bits=4))
    assert merged["clock_ns"] == 900
    assert merged["occurrences"] == {"uuid4": 7, "random": 3, "bits": 4}


def test_a_newer_report_moves_forward() -> None:
    merged = merge_counters(counters(100, uuid4=2), counters(200, uuid4=5))
    assert merged == counters(200, uuid4=5)


def test_another_world_is_refused() -> None:
    with pytest.raises(CountersMismatch, match="world_seed"):
        merge_counters(counters(1), {**counters(2), "world_seed": 4})
