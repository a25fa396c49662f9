"""bench/policy_gradient.py: the estimator, the SNR and the seeds' interval on known answers."""

from __future__ import annotations

import numpy as np
import pytest

from bench import intervals
from bench import policy_gradient as pg
from bench.grpo import softmax

MEANS = np.array([0.0, 0.3, 0.5, 0.8])


def test_the_expected_gradient_is_the_exact_gradient_shrunk_by_the_group_size() -> None:
    """Finite differences of J(logits) = softmax(logits) . mu, times (G - 1) / G."""
    logits = np.array([0.3, -0.2, 0.1, 0.4])
    exact = np.empty(4)
    for k in range(4):
        step = np.zeros(4)
        step[k] = 1e-6
        exact[k] = (softmax(logits + step) @ MEANS - softmax(logits - step) @ MEANS) / 2e-6
    expected = pg.expected_gradient(MEANS, softmax(logits), group_size=4)
    np.testing.assert_allclose(expected, 0.75 * exact, rtol=1e-5, atol=1e-9)


def test_the_group_estimator_averages_to_the_analytic_gradient_on_a_known_bandit() -> None:
    rng = np.random.default_rng(3)
    policy = np.array([0.1, 0.2, 0.3, 0.4])
    estimates = []
    for _ in range(20_000):
        chosen = pg.draw_actions(policy, rng.random(4))
        rewards = MEANS[chosen] + rng.normal(scale=0.5, size=4)
        estimates.append(pg.group_gradient(rewards, chosen, policy))
    matrix = np.array(estimates)
    stderr = matrix.std(axis=0, ddof=1) / np.sqrt(len(matrix))
    analytic = pg.expected_gradient(MEANS, policy, group_size=4)
    assert np.all(np.abs(matrix.mean(axis=0) - analytic) < 4 * stderr)
    # and not the unshrunk gradient: the group-mean baseline costs (G - 1) / G
    assert np.abs(matrix.mean(axis=0) - analytic / 0.75).max() > 4 * stderr.max()


def test_actions_are_drawn_by_inverse_cdf_with_the_policys_frequencies() -> None:
    policy = np.array([0.1, 0.2, 0.3, 0.4])
    actions = pg.draw_actions(policy, np.random.default_rng(0).random(40_000))
    np.testing.assert_allclose(np.bincount(actions, minlength=4) / 40_000, policy, atol=0.01)
    assert pg.draw_actions(policy, [0.05, 0.15, 0.95]).tolist() == [0, 1, 3]


def test_snr_recovers_a_known_ratio_and_its_signal_is_unbiased() -> None:
    mu = np.array([0.2, -0.1, 0.0, -0.1])
    sd = np.array([0.5, 0.5, 0.3, 0.3])
    truth = float(mu @ mu / (sd**2).sum())
    rng = np.random.default_rng(5)
    big = pg.snr(mu + sd * rng.normal(size=(100_000, 4)))
    assert big["snr"] == pytest.approx(truth, rel=0.03)
    # 16 worlds at a time: |mean|^2 alone overstates |mu|^2 by tr / n; the estimator does not
    small = [pg.snr(mu + sd * rng.normal(size=(16, 4))) for _ in range(4000)]
    signal = np.mean([s["signal"] for s in small])
    assert signal == pytest.approx(float(mu @ mu), abs=0.004)
    naive = np.mean([s["signal"] + s["noise"] / 16 for s in small])
    assert naive - float(mu @ mu) > 0.02


def test_the_snr_ratio_interval_sees_a_tenfold_noise_difference_on_the_same_worlds() -> None:
    rng = np.random.default_rng(8)
    mu = np.array([-0.1, 0.02, 0.03, 0.05])
    shared = rng.normal(size=(96, 4))
    noisy = mu + 1.0 * shared
    quiet = mu + np.sqrt(0.1) * shared + 0.05 * rng.normal(size=(96, 4))
    ratio = pg.snr_ratio(noisy, quiet)
    assert ratio["high"] < 1.0 and ratio["low"] < ratio["value"] < ratio["high"]
    same = pg.snr_ratio(quiet, quiet + 0.01 * rng.normal(size=(96, 4)))
    assert same["low"] < 1.0 < same["high"]


def test_the_t_interval_covers_at_eight_seeds_where_the_percentile_bootstrap_does_not() -> None:
    rng = np.random.default_rng(11)
    samples = rng.normal(loc=2.0, size=(600, 8))
    t_cover = np.mean([(lambda i: i["low"] < 2.0 < i["high"])(pg.t_interval(s)) for s in samples])
    boot = [intervals.mean(s, seed=index) for index, s in enumerate(samples)]
    boot_cover = np.mean([b["low"] < 2.0 < b["high"] for b in boot])  # type: ignore[operator]
    assert 0.92 < t_cover < 0.98
    assert boot_cover < t_cover - 0.03  # why the seeds' intervals are t intervals
    skewed = rng.exponential(size=(600, 8))  # steps-like: a long right tail
    skew_cover = np.mean([(lambda i: i["low"] < 1.0 < i["high"])(pg.t_interval(s)) for s in skewed])
    assert skew_cover > 0.85


def test_steps_to_counts_a_run_that_never_holds_the_threshold_one_past_its_horizon() -> None:
    curve = [[0.25, 0.75], [0.05, 0.95], [0.2, 0.8], [0.05, 0.95], [0.04, 0.96]]
    assert pg.steps_to(curve, 1, 0.9) == 3
    assert pg.steps_to(curve, 0, 0.9) == 5
    assert pg.steps_to([[0.5, 0.5], [0.05, 0.95]], 1, 0.9) == 1


def test_the_learner_finds_the_best_arm_of_a_known_bandit_and_pairs_actions_by_seed() -> None:
    worlds: list[int] = []

    def sample(world: int, chosen: list[int]) -> list[float]:
        worlds.append(world)
        noise = np.random.default_rng(world).normal(scale=0.1, size=len(chosen))
        return list(MEANS[chosen] + noise)

    run = pg.train(
        sample, actions=4, group_size=4, steps=60, learning_rate=4.0, seed=2, first_world=100
    )
    assert np.argmax(run["probabilities"][-1]) == 3 and run["probabilities"][-1][3] > 0.9
    assert worlds == [100 + 2 * 10_000 + step for step in range(60)]
    again = pg.train(
        sample, actions=4, group_size=4, steps=60, learning_rate=4.0, seed=2, first_world=100
    )
    assert again["probabilities"] == run["probabilities"]
