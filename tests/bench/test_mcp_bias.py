"""bench.mcp_bias: the days a run measures on, their expectations, the offset, the control.

The fixed days put the same offset into every run's MCP bias; these tests hold that the layout
names the days the collectors use, that the expectations are the in-process rewards averaged,
that the raw bias of a run equal to its expectations is the offset and the adjusted bias zero,
and that the proposed control's margin fails a 0.04 discrepancy as often as alpha.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import replace

import pytest

from bench import collect, mcp_bias
from bench.config import for_world, quick_config
from bench.groups import agent_seed
from worldsim import mcp_check, mcp_state


def _layout(worlds: int = 3, pairs: int = 2) -> mcp_bias.Layout:
    config = replace(for_world(quick_config(), "mcp"), worlds=worlds, reference_pairs=pairs)
    return mcp_bias.Layout.of(config)


def test_the_layout_names_the_days_and_seeds_the_collectors_use() -> None:
    config = replace(for_world(quick_config(), "mcp"), worlds=3, reference_pairs=2)
    layout = mcp_bias.Layout.of(config)
    assert list(layout.condition_days) == collect.world_seeds(config, 3)
    first = config.reference_first_seed
    assert layout.better_days == (first, first + 2)
    assert layout.worse_days == (first + 1, first + 3)
    assert layout.seed(first, "upgrade") == agent_seed(config.agent_seed, first, 2)


def test_expectations_are_the_in_process_rewards_averaged_over_salts() -> None:
    layout = _layout(worlds=1, pairs=1)
    expected = mcp_bias.expectations(layout, salts=(3, 4))
    # Each salt's desk runs the cells in order; (C)'s day's `compare` is its first rollout.
    day = layout.condition_days[0]

    async def reward(salt: int) -> float:
        desk = mcp_state.Desk(salt)
        seed = layout.seed(day, "compare")
        return (await mcp_check.rollout_on_day(desk, "t", day, "compare", seed)).reward

    by_hand = [asyncio.run(reward(salt)) for salt in (3, 4)]
    assert by_hand[0] != by_hand[1]
    assert expected.of(day, "compare") == pytest.approx(sum(by_hand) / 2, abs=1e-12)
    assert expected.variances[(day, "compare")] == pytest.approx(
        (by_hand[0] - by_hand[1]) ** 2 / 2, abs=1e-12
    )
    assert len(expected.means) == 4  # (C)'s day for both actions, one better and one worse day


def _known(layout: mcp_bias.Layout, lift: float) -> mcp_bias.Expectations:
    """Expectations where (C)'s days' contrast is ``lift`` above the reference days'."""
    means = {}
    for index, day in enumerate(layout.condition_days):
        means[(day, "upgrade")], means[(day, "compare")] = 0.5 + lift + 0.01 * index, 0.3
    for index, day in enumerate(layout.better_days):
        means[(day, "upgrade")] = 0.6 - 0.02 * index
    for index, day in enumerate(layout.worse_days):
        means[(day, "compare")] = 0.4 + 0.03 * index
    return mcp_bias.Expectations(means, {cell: 0.01 for cell in means}, salts=100)


def _run_at(
    layout: mcp_bias.Layout, expected: mcp_bias.Expectations, noise: float
) -> mcp_bias.RunContrasts:
    """A run whose every value is its day's expectation plus alternating +-noise."""
    sign = [1.0, -1.0]
    return mcp_bias.RunContrasts(
        condition={
            d: expected.of(d, "upgrade") - expected.of(d, "compare") + noise * sign[i % 2]
            for i, d in enumerate(layout.condition_days)
        },
        better={
            d: expected.of(d, "upgrade") + noise * sign[i % 2]
            for i, d in enumerate(layout.better_days)
        },
        worse={
            d: expected.of(d, "compare") - noise * sign[i % 2]
            for i, d in enumerate(layout.worse_days)
        },
    )


def test_a_run_at_its_days_expectations_shows_the_offset_raw_and_nothing_adjusted() -> None:
    layout = _layout(worlds=4, pairs=4)
    expected = _known(layout, lift=0.05)
    run = _run_at(layout, expected, noise=0.1)
    offset = mcp_bias.fixed_offset(layout, expected)
    # (0.2 + 0.05 + mean 0.015) - (mean 0.57 - mean 0.445)
    assert offset.value == pytest.approx(0.265 - 0.125)
    assert mcp_bias.raw_bias(run).value == pytest.approx(offset.value)
    assert mcp_bias.adjusted_bias(run, layout, expected).value == pytest.approx(0.0, abs=1e-12)
    assert mcp_bias.reference_against_expectation(run, layout, expected).value == pytest.approx(
        0.0, abs=1e-12
    )


def test_the_adjusted_bias_sees_a_reference_that_is_off() -> None:
    layout = _layout(worlds=4, pairs=4)
    expected = _known(layout, lift=0.0)
    run = _run_at(layout, expected, noise=0.1)
    low = replace(run, better={d: v - 0.04 for d, v in run.better.items()})
    assert mcp_bias.adjusted_bias(low, layout, expected).value == pytest.approx(0.04)
    assert mcp_bias.reference_against_expectation(low, layout, expected).value == pytest.approx(
        -0.04
    )


def test_the_monte_carlo_error_shrinks_with_the_salts() -> None:
    layout = _layout(worlds=4, pairs=4)
    few = _known(layout, lift=0.0)
    many = replace(few, salts=few.salts * 4)
    assert mcp_bias.fixed_offset(layout, many).stderr == pytest.approx(
        mcp_bias.fixed_offset(layout, few).stderr / 2
    )


def test_the_control_at_margin_004_fails_a_004_discrepancy_as_often_as_alpha() -> None:
    plan = mcp_bias.control_plan(0.04)
    assert plan.margin == 0.04
    assert plan.pass_at_zero == pytest.approx(0.95, abs=1e-6)
    assert plan.pass_at_discrepancy == pytest.approx(0.05, abs=1e-3)
    # TOST at alpha 0.05 passes 95% at zero when the margin is (z_0.95 + z_0.975) s.e.
    assert plan.stderr_needed == pytest.approx(0.04 / (1.6449 + 1.9600), rel=1e-3)
    assert mcp_bias.pairs_needed(0.137, plan.stderr_needed, salts=64) == math.ceil(
        0.137 * (1 + 1 / 64) / plan.stderr_needed**2
    )


def test_a_simulated_run_shares_conditions_reads_and_is_seeded() -> None:
    layout = _layout(worlds=2, pairs=1)
    first, again = mcp_bias.simulated_runs(layout, (11, 11))
    assert first == again
    other = mcp_bias.simulated_runs(layout, (12,))[0]
    assert other.better != first.better
    assert set(first.condition) == set(layout.condition_days)
    assert set(first.better) | set(first.worse) == set(layout.better_days + layout.worse_days)
