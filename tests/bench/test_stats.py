"""Unit tests of bench.stats on constructed data whose answers are computed here independently."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from bench import stats


def test_group_advantages_subtract_each_rows_mean() -> None:
    rewards = [[1.0, 2.0, 3.0, 6.0], [0.0, 0.0, 4.0, 0.0]]
    expected = [[-2.0, -1.0, 0.0, 3.0], [-1.0, -1.0, 3.0, -1.0]]
    np.testing.assert_allclose(stats.group_advantages(rewards), expected)


def test_group_advantages_reject_a_flat_vector() -> None:
    with pytest.raises(ValueError, match="2-D"):
        stats.group_advantages([1.0, 2.0])


def test_contrast_is_the_reward_difference_because_the_mean_cancels() -> None:
    rng = np.random.default_rng(1)
    rewards = rng.normal(size=(50, 4))
    np.testing.assert_allclose(stats.contrasts(rewards, 3, 2), rewards[:, 3] - rewards[:, 2])


def test_shared_noise_leaves_no_group_advantage_variance() -> None:
    rng = np.random.default_rng(2)
    quality = np.array([0.0, 0.2, 0.5, 0.6])
    rewards = quality + rng.normal(scale=3.0, size=(200, 1))
    assert stats.group_advantage_variance(rewards) == pytest.approx(0.0, abs=1e-20)


def test_group_advantage_variance_matches_a_loop_over_actions() -> None:
    rng = np.random.default_rng(3)
    rewards = rng.normal(scale=2.0, size=(40, 4))
    per_action = []
    for action in range(4):
        column = [row[action] - sum(row) / 4 for row in rewards]
        mean = sum(column) / len(column)
        per_action.append(sum((v - mean) ** 2 for v in column) / (len(column) - 1))
    assert stats.group_advantage_variance(rewards) == pytest.approx(sum(per_action) / 4)


def test_independent_noise_advantage_variance_is_three_quarters_of_sigma_squared() -> None:
    rng = np.random.default_rng(4)
    rewards = rng.normal(scale=2.0, size=(20000, 4))
    assert stats.group_advantage_variance(rewards) == pytest.approx(0.75 * 4.0, rel=0.03)


def test_sample_variance_and_reduction_ratio() -> None:
    assert stats.sample_variance([1.0, 3.0]) == pytest.approx(2.0)
    assert math.isnan(stats.sample_variance([1.0]))
    assert stats.reduction_ratio(6.0, 2.0) == 3.0
    assert stats.reduction_ratio(1.0, 0.0) == math.inf
    assert math.isnan(stats.reduction_ratio(0.0, 0.0))


def test_levene_is_the_anova_of_absolute_deviations_from_the_median() -> None:
    rng = np.random.default_rng(5)
    wide = rng.normal(scale=3.0, size=60)
    narrow = rng.normal(scale=1.0, size=60)
    deviations = [np.abs(wide - np.median(wide)), np.abs(narrow - np.median(narrow))]
    expected = scipy_stats.f_oneway(*deviations)
    statistic, pvalue = stats.levene(wide, narrow)
    assert statistic == pytest.approx(expected.statistic)
    assert pvalue == pytest.approx(expected.pvalue)
    assert pvalue < 0.01


def test_between_group_variance_recovers_the_spread_of_true_means() -> None:
    rng = np.random.default_rng(6)
    true_means = rng.normal(scale=2.0, size=(3000, 1))
    replicates = true_means + rng.normal(scale=3.0, size=(3000, 10))
    estimate = stats.between_group_variance(replicates)
    assert estimate.value == pytest.approx(4.0, rel=0.1)
    assert 0 < estimate.stderr < 1.0


def test_between_group_variance_is_zero_without_true_spread() -> None:
    rng = np.random.default_rng(7)
    estimate = stats.between_group_variance(rng.normal(size=(500, 8)))
    assert estimate.value < 4 * estimate.stderr


def test_endogenous_ceiling_is_baseline_over_estimand_variance() -> None:
    assert stats.endogenous_ceiling(4.0, 0.08) == pytest.approx(50.0)


def test_running_t_test_matches_scipy_on_each_prefix() -> None:
    rng = np.random.default_rng(8)
    values = rng.normal(loc=0.3, size=30)
    means, pvalues = stats.running_t_test(values)
    assert math.isnan(pvalues[0])
    for n in (2, 5, 17, 30):
        expected = scipy_stats.ttest_1samp(values[:n], 0.0)
        assert means[n - 1] == pytest.approx(np.mean(values[:n]))
        assert pvalues[n - 1] == pytest.approx(expected.pvalue, rel=1e-6)


def _brute_first_significant(values, alpha, min_samples):
    for n in range(min_samples, len(values) + 1):
        if scipy_stats.ttest_1samp(values[:n], 0.0).pvalue < alpha:
            return n, int(np.sign(np.mean(values[:n])))
    return None


def _brute_stable(values, truth_sign, alpha, min_samples):
    ok = []
    for n in range(1, len(values) + 1):
        if n < min_samples:
            ok.append(False)
            continue
        result = scipy_stats.ttest_1samp(values[:n], 0.0)
        ok.append(result.pvalue < alpha and np.sign(np.mean(values[:n])) == truth_sign)
    if not ok[-1]:
        return None
    n = len(ok)
    while n > 1 and ok[n - 2]:
        n -= 1
    return n


def test_first_significant_can_claim_the_wrong_sign() -> None:
    values = [-1.0, -1.2, -0.9, -1.1, -1.0, -0.8] + [3.0] * 40
    found = stats.first_significant(values, alpha=0.05, min_samples=3)
    assert found is not None
    assert (found.samples, found.sign) == _brute_first_significant(values, 0.05, 3)
    assert found.sign == -1


def test_stable_significance_ignores_an_early_wrong_crossing() -> None:
    values = [-1.0, -1.2, -0.9, -1.1, -1.0, -0.8] + [3.0, 2.5, 3.5] * 15
    stable = stats.samples_to_stable_significance(values, truth_sign=1, min_samples=3)
    assert stable == _brute_stable(values, 1, 0.05, 3)
    assert stable is not None and stable > 6


@pytest.mark.parametrize("seed", [10, 11, 12])
def test_stable_significance_matches_brute_force_on_noisy_data(seed: int) -> None:
    values = np.random.default_rng(seed).normal(loc=0.4, size=80)
    expected = _brute_stable(values, 1, 0.05, 5)
    assert stats.samples_to_stable_significance(values, truth_sign=1) == expected
    assert stats.first_significant(values) == (
        None
        if _brute_first_significant(values, 0.05, 5) is None
        else stats.FirstSignificant(*_brute_first_significant(values, 0.05, 5))
    )


def test_never_stable_when_the_end_is_not_significant() -> None:
    values = np.random.default_rng(13).normal(size=60) * 0 + np.tile([1.0, -1.0], 30)
    assert stats.samples_to_stable_significance(values, truth_sign=1) is None


def test_control_variate_keeps_the_mean_and_shrinks_the_error() -> None:
    rng = np.random.default_rng(14)
    covariate = rng.normal(size=2000)
    values = 0.5 + 2.0 * covariate + rng.normal(scale=0.2, size=2000)
    plain = stats.mean_estimate(values)
    sharpened = stats.control_variate_estimate(values, covariate)
    assert sharpened.value == pytest.approx(0.5, abs=4 * sharpened.stderr)
    assert sharpened.stderr < plain.stderr / 5
    known = stats.control_variate_estimate(values, covariate, coefficient=2.0)
    residual = values - 2.0 * covariate
    assert known.value == pytest.approx(residual.mean())
    assert known.stderr == pytest.approx(residual.std(ddof=1) / math.sqrt(2000))


def test_control_variate_uses_the_known_covariate_mean() -> None:
    covariate = np.array([1.0, 2.0, 3.0, 4.0])
    values = 3.0 * covariate
    estimate = stats.control_variate_estimate(values, covariate, covariate_mean=2.5)
    assert estimate.value == pytest.approx(7.5)


def test_bias_against_a_reference_and_its_verdict() -> None:
    bias = stats.difference(stats.Estimate(1.0, 0.3), stats.Estimate(0.8, 0.4))
    assert bias.value == pytest.approx(0.2)
    assert bias.stderr == pytest.approx(0.5)
    assert stats.bias_verdict(bias) == "unbiased"
    assert stats.bias_verdict(stats.Estimate(-0.2, 0.02)) == "biased"
    assert stats.bias_verdict(stats.Estimate(0.0, 0.0)) == "unbiased"


def test_sustained_attainment() -> None:
    assert stats.sustained_attainment([0.1, 0.95, 0.5, 0.92, 0.97], 0.9) == 3
    assert stats.sustained_attainment([0.95, 0.96], 0.9) == 0
    assert stats.sustained_attainment([0.95, 0.5], 0.9) is None
    assert stats.sustained_attainment([], 0.9) is None


def test_precision_recall() -> None:
    predicted = [True, True, True, False, False]
    actual = [True, False, True, True, False]
    precision, recall = stats.precision_recall(predicted, actual)
    assert precision == pytest.approx(2 / 3)
    assert recall == pytest.approx(2 / 3)
    assert all(math.isnan(v) for v in stats.precision_recall([False], [False]))
