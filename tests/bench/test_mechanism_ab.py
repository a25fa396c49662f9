"""bench/mechanism_ab.py: the verdict follows the declared row and bound, and a small real run
through three resolver processes measures every condition in every round."""

from __future__ import annotations

import random

from bench import mechanism_ab
from bench.mechanism_ab import ALL_ON, MECHANISMS


def rounds_where(slower: dict[str, float], rounds: int = 8) -> list[dict[str, dict[str, float]]]:
    """Rounds in which each mechanism switched off makes a hit `slower[m]` times as slow (with a
    little noise), throughput alike."""
    noise = random.Random(0)
    made = []
    for _ in range(rounds):
        on = {"p50_ms": 1.0, "throughput_rps": 1000.0}
        row = {ALL_ON: on}
        for mechanism in MECHANISMS:
            factor = slower[mechanism] * (1 + noise.uniform(-0.01, 0.01))
            row[mechanism] = {"p50_ms": factor, "throughput_rps": 1000.0 / factor}
        made.append(row)
    return made


def test_a_mechanism_is_kept_only_when_its_lower_bound_reaches_five_percent() -> None:
    names = list(MECHANISMS)
    worth = {names[0]: 1.20, names[1]: 1.02}
    measured = {1: rounds_where(worth), 8: rounds_where(worth)}
    rows = {row["mechanism"]: row for row in mechanism_ab.verdicts(measured)}
    assert rows[names[0]]["verdict"] == "kept"
    assert rows[names[1]]["verdict"] == "goes"
    assert 1.18 < rows[names[0]]["off_over_on_p50_1_client"]["low"] < 1.20
    # Throughput at 8 clients is beside the verdict, never in it.
    measured[8] = rounds_where({name: 1.0 for name in names})
    again = {row["mechanism"]: row for row in mechanism_ab.verdicts(measured)}
    assert again[names[0]]["verdict"] == "kept"


def test_a_small_run_measures_every_condition_in_every_round() -> None:
    result = mechanism_ab.run(rounds=2, requests=12, exchanges=200)
    assert {row["mechanism"] for row in result["mechanisms"]} == set(MECHANISMS)
    for width in ("1", "8"):
        assert len(result["raw"][width]) == 2
        for measured in result["raw"][width]:
            assert set(measured) == {ALL_ON, *MECHANISMS}
            assert all(numbers["requests"] == 12 for numbers in measured.values())
            assert all(numbers["p50_ms"] > 0 for numbers in measured.values())
    assert "| hot protocol |" in mechanism_ab.table(result)
