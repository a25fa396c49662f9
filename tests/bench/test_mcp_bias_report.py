"""bench.mcp_bias_report: a run's raw MCP rollouts as per-day contrasts, by quarter, simulated.

The report reads (C)'s groups and the reference's roles from a run's raw files; these tests
hold that each world's contrast is its better action minus its worse, that the reference's
better and worse rewards keep their own days, that the quarters follow collection (day)
order, and that the simulation mode takes the days every run uses at the sizes it is given.
"""

from __future__ import annotations

import json

import pytest

from bench import mcp_bias_report
from bench.measurements import ConditionData, ReferenceData, Rollout


def _rollout(day: int, action: str, reward: float) -> Rollout:
    return Rollout(day, f"b-{day}-{action}", action, reward, None, None)


def _run() -> tuple[ConditionData, ReferenceData]:
    condition = ConditionData(name="groundhog", actions=("first", "compare", "upgrade"))
    for day, (first, compare, upgrade) in {1000: (0.1, 0.4, 0.7), 1001: (0.0, 0.5, 0.55)}.items():
        for action, reward in zip(
            ("first", "compare", "upgrade"), (first, compare, upgrade), strict=True
        ):
            condition.rollouts.append(_rollout(day, action, reward))
    reference = ReferenceData()
    for index in range(8):
        reference.better.append(_rollout(500_000 + 2 * index, "upgrade", 0.6 + 0.1 * index))
        reference.worse_independent.append(_rollout(500_001 + 2 * index, "compare", 0.4))
    return condition, reference


def test_the_runs_contrasts_are_per_day_better_minus_worse() -> None:
    condition, reference = _run()
    run = mcp_bias_report.run_contrasts(condition, reference, "upgrade", "compare")
    assert run.condition == pytest.approx({1000: 0.3, 1001: 0.05})
    assert run.better[500_002] == pytest.approx(0.7)
    assert set(run.worse) == {500_001 + 2 * i for i in range(8)}


def test_the_quarters_follow_the_days_in_collection_order() -> None:
    condition, reference = _run()
    reference.better.reverse()  # the file's order is not the phase's: the days are
    run = mcp_bias_report.run_contrasts(condition, reference, "upgrade", "compare")
    parts = mcp_bias_report.quarters(run)
    assert [round(q.value, 6) for q in parts] == [0.25, 0.45, 0.65, 0.85]


def test_the_simulation_mode_uses_every_runs_days_at_the_sizes_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    layout = mcp_bias_report.simulated_layout(3, 2)
    assert layout.condition_days == (1000, 1001, 1002)
    assert layout.better_days == (500_000, 500_002)
    assert mcp_bias_report.main(["--simulate", "2,2", "--runs", "2"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert (printed["worlds"], printed["pairs"], printed["runs"]) == (2, 2, 2)
    assert printed["bias_sd"] > 0


def test_without_a_run_or_a_simulation_the_report_refuses() -> None:
    with pytest.raises(SystemExit):
        mcp_bias_report.main([])
