"""GRPO on constructed reward tables: it learns the best action and is reproducible."""

from __future__ import annotations

import numpy as np
import pytest

from bench import grpo


def _table(noise: float, shared: bool, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    quality = np.array([0.0, 0.3, 0.6, 1.0])
    shape = (300, 1) if shared else (300, 4)
    return quality + rng.normal(scale=noise, size=shape)


def test_policy_learns_the_best_action_with_shared_noise() -> None:
    config = grpo.GrpoConfig(steps=400, learning_rate=0.5, seeds=(0, 1))
    runs = grpo.train_seeds(_table(noise=3.0, shared=True), config)
    assert [run.final_action for run in runs] == [3, 3]
    assert all(run.probabilities[-1, 3] > 0.9 for run in runs)
    summary = grpo.summarize(runs, best_action=3, config=config)
    assert summary["seeds_attained"] == 2
    for run, rollouts in zip(runs, summary["rollouts_to_threshold"], strict=True):
        step = rollouts // config.group_size
        assert run.probabilities[step:, 3].min() >= 0.9
        assert run.probabilities[step - 1, 3] < 0.9


def test_probabilities_are_distributions_and_start_uniform() -> None:
    run = grpo.train(_table(1.0, shared=False), grpo.GrpoConfig(steps=50), seed=3)
    assert run.probabilities.shape == (51, 4)
    np.testing.assert_allclose(run.probabilities[0], 0.25)
    np.testing.assert_allclose(run.probabilities.sum(axis=1), 1.0)


def test_same_seed_same_curve_and_other_seed_differs() -> None:
    table = _table(2.0, shared=False)
    config = grpo.GrpoConfig(steps=100)
    first = grpo.train(table, config, seed=5).probabilities
    np.testing.assert_array_equal(first, grpo.train(table, config, seed=5).probabilities)
    assert not np.array_equal(first, grpo.train(table, config, seed=6).probabilities)


def test_equal_rewards_give_no_gradient() -> None:
    run = grpo.train(np.ones((10, 4)), grpo.GrpoConfig(steps=30), seed=0)
    np.testing.assert_allclose(run.probabilities[-1], 0.25)


def test_rewards_must_be_a_table() -> None:
    with pytest.raises(ValueError, match="worlds, actions"):
        grpo.train(np.ones(4), grpo.GrpoConfig(steps=1), seed=0)
