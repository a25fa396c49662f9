"""The world's calibration, in process over many worlds with the real agent and renderers.

These hold the world's declared design inputs (bench/protocol.toml): the true ranking and the
attention shock about nine times the verify-deep gap, plus two mechanisms (replay's blindness,
Groundhog's exact equality with a live rollout). No result of the benchmark is pinned here: the
variance ratio is measured by each run, with its interval, and judged by the protocol's gates.
"""

from __future__ import annotations

import statistics

import pytest

from worldsim.agent import Strategy
from worldsim.simulate import Condition, agent_seed_for, live_rollout, run_group

PAIR = (Strategy.DEEP, Strategy.VERIFY)


@pytest.fixture(scope="module")
def groundhog_pairs():
    return [run_group(seed, Condition.GROUNDHOG, PAIR) for seed in range(3000)]


def test_shock_is_about_nine_times_the_verify_deep_gap(groundhog_pairs) -> None:
    gap = statistics.fmean(group.contrast() for group in groundhog_pairs)
    shock_sd = statistics.pstdev(
        group.rollouts[Strategy.DEEP].attention for group in groundhog_pairs
    )
    assert 0.12 < gap < 0.2
    assert 1.3 < shock_sd < 1.6
    assert 7.5 < shock_sd / gap < 10.5


def test_true_ranking_is_verify_deep_skim_guess() -> None:
    groups = [run_group(seed, Condition.GROUNDHOG) for seed in range(5000, 5600)]
    means = {
        strategy: statistics.fmean(group.rollouts[strategy].reward for group in groups)
        for strategy in Strategy
    }
    assert (
        means[Strategy.VERIFY] > means[Strategy.DEEP] > means[Strategy.SKIM] > means[Strategy.GUESS]
    )


def test_replay_is_quiet_and_biased_because_verify_is_blind() -> None:
    groups = [run_group(seed, Condition.REPLAY, PAIR) for seed in range(600)]
    assert all(group.rollouts[Strategy.VERIFY].review_exists is False for group in groups)
    assert statistics.fmean(group.contrast() for group in groups) < 0


def test_groundhog_condition_equals_a_live_rollout_bit_for_bit() -> None:
    for world_seed in range(25):
        group = run_group(world_seed, Condition.GROUNDHOG)
        for strategy, rollout in group.rollouts.items():
            live = live_rollout(world_seed, strategy, agent_seed_for(world_seed, strategy))
            assert live == rollout
            assert live.reward.hex() == rollout.reward.hex()
