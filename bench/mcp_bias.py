"""Why the MCP cell's (C) bias came out positive in every run, and a control that can see 0.04.

Issue 58 item 3: (C)'s MCP bias was positive in each run and the in-run live reference sat below
one measured alone. The desk's reward is a pure function of the day, the agent's seed and the
world's per-call draws (worldsim/mcp_desk.py: latency is reported, never slept), and every run
measures (C) on the same days (`first_world_seed` on) with the same agent seeds, and the
reference on the same other days (`reference_first_seed` on). So the part of each estimate
that comes from *which* days were drawn is the same in every run: it does not average out over
runs, and five runs are not five independent looks at the bias. This module computes each day's
expected reward over the per-call noise in process (the desk with no transport, each salt its
own independent per-call draws), so that part can be named (`fixed_offset`), taken out of a
run's estimate (`adjusted_bias`), told apart from per-call noise (`simulated_runs`), and a
control sized on what is left (`control_plan`). bench/mcp_bias_report.py prints it for a run.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from bench.config import BenchConfig
from bench.groups import agent_seed
from bench.power import tost_power
from bench.stats import Estimate, difference, mean_estimate
from worldsim import mcp_check, mcp_state

SALTS = tuple(range(9_000, 9_064))
"""The in-process desks' seeds, each its own per-call draws: 64 put the Monte Carlo error of
the fixed offset near 0.003 at version 9's sizes (its own standard error is reported)."""


@dataclass(frozen=True)
class Layout:
    """The days a run measures on: (C)'s worlds, and the reference's better and worse days."""

    condition_days: tuple[int, ...]
    better_days: tuple[int, ...]
    worse_days: tuple[int, ...]
    actions: tuple[str, ...]
    better: str
    worse: str
    agent_base: int

    @classmethod
    def of(cls, config: BenchConfig) -> Layout:
        """The days `collect.collect_condition` and `collect.collect_reference` use."""
        first, pairs = config.reference_first_seed, config.reference_pairs
        return cls(
            condition_days=tuple(
                range(config.first_world_seed, config.first_world_seed + config.worlds)
            ),
            better_days=tuple(range(first, first + 2 * pairs, 2)),
            worse_days=tuple(range(first + 1, first + 2 * pairs, 2)),
            actions=tuple(config.actions),
            better=config.better_action,
            worse=config.worse_action,
            agent_base=config.agent_seed,
        )

    def seed(self, day: int, action: str) -> int:
        """The agent seed the benchmark gives ``action`` on ``day`` (bench/groups.agent_seed)."""
        return agent_seed(self.agent_base, day, self.actions.index(action))


@dataclass(frozen=True)
class Expectations:
    """Per day, each action's reward averaged over independent per-call draws (in process)."""

    means: Mapping[tuple[int, str], float]
    variances: Mapping[tuple[int, str], float]  # of one salt's reward: the MC error's source
    salts: int

    def of(self, day: int, action: str) -> float:
        return self.means[(day, action)]

    def mean_stderr(self, cells: Sequence[tuple[int, str]]) -> float:
        """Monte Carlo standard error of the mean expectation over ``cells``."""
        total = sum(self.variances[cell] for cell in cells) / self.salts
        return math.sqrt(total) / len(cells)


def expectations(layout: Layout, salts: Sequence[int] = SALTS) -> Expectations:
    """Each (day, action) the layout measures, averaged over one desk per salt."""
    wanted = {(day, layout.better) for day in layout.better_days}
    wanted |= {(day, layout.worse) for day in layout.worse_days}
    wanted |= {
        (day, action) for day in layout.condition_days for action in (layout.better, layout.worse)
    }
    desks = [mcp_state.Desk(salt) for salt in salts]

    async def every() -> dict[tuple[int, str], list[float]]:
        rewards: dict[tuple[int, str], list[float]] = {}
        for day, action in sorted(wanted):
            for desk in desks:
                rollout = await mcp_check.rollout_on_day(
                    desk, f"e-{day}-{action}", day, action, layout.seed(day, action)
                )
                rewards.setdefault((day, action), []).append(rollout.reward)
        return rewards

    rewards = asyncio.run(every())
    means = {cell: float(np.mean(values)) for cell, values in rewards.items()}
    spread = len(desks) > 1
    variances = {
        cell: float(np.var(values, ddof=1)) if spread else math.nan
        for cell, values in rewards.items()
    }
    return Expectations(means, variances, len(desks))


def condition_expectation(layout: Layout, expected: Expectations) -> float:
    """The live contrast expected on (C)'s days (sharing reads leaves each day's mean alone)."""
    return float(
        np.mean(
            [
                expected.of(d, layout.better) - expected.of(d, layout.worse)
                for d in layout.condition_days
            ]
        )
    )


def reference_expectation(layout: Layout, expected: Expectations) -> float:
    """The independent reference contrast expected on the reference's days."""
    better = np.mean([expected.of(d, layout.better) for d in layout.better_days])
    worse = np.mean([expected.of(d, layout.worse) for d in layout.worse_days])
    return float(better - worse)


def fixed_offset(layout: Layout, expected: Expectations) -> Estimate:
    """What the choice of days adds to (C)'s bias in every run (zero only by luck of the days),
    with its Monte Carlo standard error."""
    value = condition_expectation(layout, expected) - reference_expectation(layout, expected)
    return Estimate(value, _expectation_stderr(layout, expected))


def _expectation_stderr(layout: Layout, expected: Expectations) -> float:
    condition = (
        expected.mean_stderr(
            [(d, a) for d in layout.condition_days for a in (layout.better, layout.worse)]
        )
        * 2
    )  # over days of a better-minus-worse: two cells per day, mean of their difference
    better = expected.mean_stderr([(d, layout.better) for d in layout.better_days])
    worse = expected.mean_stderr([(d, layout.worse) for d in layout.worse_days])
    return math.sqrt(condition**2 + better**2 + worse**2)


@dataclass(frozen=True)
class RunContrasts:
    """A run's per-day contrasts: (C)'s per world, the reference's better and worse rewards."""

    condition: Mapping[int, float]
    better: Mapping[int, float]
    worse: Mapping[int, float]


def raw_bias(run: RunContrasts) -> Estimate:
    """The bias as the run computes it (without a control variate: the desk has none)."""
    reference = difference(
        mean_estimate(list(run.better.values())), mean_estimate(list(run.worse.values()))
    )
    return difference(mean_estimate(list(run.condition.values())), reference)


def _adjusted_reference(
    run: RunContrasts, layout: Layout, expected: Expectations
) -> tuple[list[float], list[float]]:
    """The reference's better and worse rewards, each minus its day's expectation."""
    better = [value - expected.of(day, layout.better) for day, value in run.better.items()]
    worse = [value - expected.of(day, layout.worse) for day, value in run.worse.items()]
    return better, worse


def adjusted_bias(run: RunContrasts, layout: Layout, expected: Expectations) -> Estimate:
    """The bias with each day's expectation taken out of both sides: no offset, no day variance.

    (C)'s per-world contrast minus its day's expected live contrast, against the reference's
    rewards minus their days' expectations. A fixed function of the day applied to both sides,
    so the estimate stays unbiased whatever the in-process desk gets wrong; what it removes is
    the days' share of the variance and the offset their draw left in every run.
    """
    condition = [
        value - (expected.of(day, layout.better) - expected.of(day, layout.worse))
        for day, value in run.condition.items()
    ]
    better, worse = _adjusted_reference(run, layout, expected)
    reference = difference(mean_estimate(better), mean_estimate(worse))
    sampled = difference(mean_estimate(condition), reference)
    # It is the raw bias minus the estimated offset: the offset's Monte Carlo error is its own.
    return Estimate(
        sampled.value, math.hypot(sampled.stderr, _expectation_stderr(layout, expected))
    )


def reference_against_expectation(
    run: RunContrasts, layout: Layout, expected: Expectations
) -> Estimate:
    """The live reference minus the world's expectation on its own days: the proposed control.

    Zero unless the live reference is off (transport, sessions, load); its standard error is
    the per-call noise alone, since the days' own variance is removed.
    """
    better, worse = _adjusted_reference(run, layout, expected)
    sampled = difference(mean_estimate(better), mean_estimate(worse))
    monte_carlo = math.hypot(
        expected.mean_stderr([(d, layout.better) for d in run.better]),
        expected.mean_stderr([(d, layout.worse) for d in run.worse]),
    )
    return Estimate(sampled.value, math.hypot(sampled.stderr, monte_carlo))


def adjusted_pair_variance(run: RunContrasts, layout: Layout, expected: Expectations) -> float:
    """One reference pair's variance once its days' expectations are taken out (sizes the
    proposed control: `pairs_needed`)."""
    better, worse = _adjusted_reference(run, layout, expected)
    return float(np.var(better, ddof=1) + np.var(worse, ddof=1))


def simulated_runs(layout: Layout, salts: Sequence[int]) -> list[RunContrasts]:
    """Whole runs in process on the layout's days, one per salt: (C) with its reads shared
    (mcp_check.SharedReads), the reference with each rollout's own. Their spread is what a run
    varies by when only the per-call draws change."""

    async def one(salt: int) -> RunContrasts:
        desk = mcp_state.Desk(salt)
        condition = {}
        for day in layout.condition_days:
            shared = mcp_check.SharedReads()
            rewards = {}
            for action in layout.actions:
                rollout = await mcp_check.rollout_on_day(
                    desk, f"c-{day}-{action}", day, action, layout.seed(day, action), shared
                )
                rewards[action] = rollout.reward
            condition[day] = rewards[layout.better] - rewards[layout.worse]

        async def live(days: Sequence[int], action: str) -> dict[int, float]:
            out = {}
            for day in days:
                rollout = await mcp_check.rollout_on_day(
                    desk, f"r-{day}-{action}", day, action, layout.seed(day, action)
                )
                out[day] = rollout.reward
            return out

        better = await live(layout.better_days, layout.better)
        worse = await live(layout.worse_days, layout.worse)
        return RunContrasts(condition, better, worse)

    return [asyncio.run(one(salt)) for salt in salts]


@dataclass(frozen=True)
class ControlPlan:
    """A TOST control's margin and the standard error it needs to pass at zero bias."""

    margin: float
    stderr_needed: float
    pass_at_zero: float
    pass_at_discrepancy: float


def control_plan(
    discrepancy: float = 0.04, *, pass_power: float = 0.95, alpha: float = 0.05
) -> ControlPlan:
    """The widest margin that still fails a true ``discrepancy`` with probability 1 - alpha
    (the margin itself: TOST at its margin passes with probability alpha), and the standard
    error at which it passes at zero bias with ``pass_power``."""
    margin = discrepancy
    low, high = 1e-6, margin
    for _ in range(100):
        middle = (low + high) / 2
        if tost_power(middle, margin, alpha=alpha) >= pass_power:
            low = middle
        else:
            high = middle
    return ControlPlan(
        margin=margin,
        stderr_needed=low,
        pass_at_zero=tost_power(low, margin, alpha=alpha),
        pass_at_discrepancy=tost_power(low, margin, alpha=alpha, bias=discrepancy),
    )


def pairs_needed(per_pair_variance: float, stderr: float, salts: int = len(SALTS)) -> int:
    """Reference pairs whose day-adjusted mean has standard error ``stderr`` at this per-pair
    variance, the expectations' Monte Carlo error (about the pair's variance over ``salts``)
    included."""
    return math.ceil(per_pair_variance * (1 + 1 / salts) / stderr**2)
