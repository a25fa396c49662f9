"""The statistics behind every benchmark row, as pure functions over arrays.

The benchmark's claims (variance reduction, unbiasedness, sample efficiency) are only as good
as the arithmetic that turns rewards into those numbers. Keeping that arithmetic here, free of
HTTP and processes, lets it be tested on constructed data whose answers are known; without it
the table would rest on code nobody had checked.

Conventions: a *group* is one world with one branch per action; ``rewards[w, j]`` is the reward
of action ``j`` in world ``w``. A *contrast* is the difference of two actions' advantages in one
group, which equals the difference of their rewards because the group mean cancels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as scipy_stats

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its standard error."""

    value: float
    stderr: float

    def interval(self, z: float = 1.96) -> tuple[float, float]:
        return (self.value - z * self.stderr, self.value + z * self.stderr)


@dataclass(frozen=True)
class FirstSignificant:
    """The first sample size at which the running test rejected zero, and the sign it claimed."""

    samples: int
    sign: int


def _as_float_array(values: ArrayLike) -> FloatArray:
    return np.asarray(values, dtype=np.float64)


def group_advantages(rewards: ArrayLike) -> FloatArray:
    """Group-relative advantages ``a_i = r_i - mean(r)`` for each row (group) of ``rewards``."""
    matrix = _as_float_array(rewards)
    if matrix.ndim != 2:
        raise ValueError(
            f"rewards must be a 2-D array [groups, branches], got shape {matrix.shape}"
        )
    return matrix - matrix.mean(axis=1, keepdims=True)


def contrasts(rewards: ArrayLike, better: int, worse: int) -> FloatArray:
    """Per-group advantage contrast of action column ``better`` minus column ``worse``."""
    advantages = group_advantages(rewards)
    return advantages[:, better] - advantages[:, worse]


def sample_variance(values: ArrayLike) -> float:
    """Unbiased sample variance (ddof=1); NaN with fewer than two values."""
    array = _as_float_array(values)
    if array.size < 2:
        return math.nan
    return float(np.var(array, ddof=1))


def reduction_ratio(baseline_variance: float, condition_variance: float) -> float:
    """How many times smaller a condition's variance is than the baseline's (inf at zero)."""
    if condition_variance == 0.0:
        return math.inf if baseline_variance > 0 else math.nan
    return baseline_variance / condition_variance


def group_advantage_variance(rewards: ArrayLike) -> float:
    """Variance across groups of each action's advantage, averaged over actions.

    This is the noise an advantage estimator carries: an action's advantage should be the
    same in every world if nothing but the action mattered.
    """
    advantages = group_advantages(rewards)
    if advantages.shape[0] < 2:
        return math.nan
    return float(np.mean(np.var(advantages, axis=0, ddof=1)))


def levene(first: ArrayLike, second: ArrayLike) -> tuple[float, float]:
    """Levene's test (median-centred, Brown-Forsythe) for equal variances: (statistic, p)."""
    result = scipy_stats.levene(_as_float_array(first), _as_float_array(second), center="median")
    return float(result.statistic), float(result.pvalue)


def between_group_variance(replicates: ArrayLike) -> Estimate:
    """Variance of the per-group true mean, from ``replicates[g, k]`` (random-effects ANOVA).

    Each row holds independent replicates of one group's quantity; the spread of row means
    overstates the spread of true means by the within-row noise divided by the number of
    replicates, which is subtracted (method of moments, clipped at zero). The standard error
    comes from the variance of a sample variance under normality.
    """
    matrix = _as_float_array(replicates)
    if matrix.ndim != 2 or matrix.shape[0] < 2 or matrix.shape[1] < 2:
        raise ValueError("replicates must be [groups >= 2, replicates >= 2]")
    groups, per_group = matrix.shape
    row_means = matrix.mean(axis=1)
    variance_of_means = float(np.var(row_means, ddof=1))
    within = float(np.mean(np.var(matrix, axis=1, ddof=1)))
    estimate = max(variance_of_means - within / per_group, 0.0)
    stderr = variance_of_means * math.sqrt(2.0 / (groups - 1))
    return Estimate(estimate, stderr)


def endogenous_ceiling(baseline_variance: float, estimand_variance: float) -> float:
    """The largest variance reduction any coupling can honestly reach.

    Sharing exogenous noise can remove only the noise; the part of the contrast that truly
    differs between worlds remains. A reduction above this ceiling means the condition removed
    variation in the estimand itself: it is sharing what it should not.
    """
    return reduction_ratio(baseline_variance, estimand_variance)


def running_t_test(values: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Two-sided one-sample t-test of mean zero on every prefix ``values[:n]``.

    Returns ``(means, pvalues)`` indexed by ``n - 1``; p is NaN where n < 2 or the prefix has
    zero spread and zero mean, and 0 where it has zero spread and a non-zero mean.
    """
    array = _as_float_array(values)
    counts = np.arange(1, array.size + 1, dtype=np.float64)
    sums = np.cumsum(array)
    means = sums / counts
    squares = np.cumsum(array * array)
    with np.errstate(invalid="ignore", divide="ignore"):
        variances = (squares - counts * means * means) / (counts - 1)
        variances = np.where(variances < 0, 0.0, variances)
        stderr = np.sqrt(variances / counts)
        t_values = means / stderr
        pvalues = 2.0 * scipy_stats.t.sf(np.abs(t_values), df=counts - 1)
    degenerate = stderr == 0
    pvalues = np.where(degenerate & (means != 0), 0.0, pvalues)
    pvalues = np.where(degenerate & (means == 0), np.nan, pvalues)
    pvalues[counts < 2] = np.nan
    return means, pvalues


def first_significant(
    values: ArrayLike, *, alpha: float = 0.05, min_samples: int = 5
) -> FirstSignificant | None:
    """The first prefix size at which the running test is significant, with its claimed sign.

    This is what an early-stopping experimenter would report; it can have the wrong sign.
    """
    means, pvalues = running_t_test(values)
    for index in range(max(min_samples, 2) - 1, means.size):
        if pvalues[index] < alpha:
            return FirstSignificant(samples=index + 1, sign=int(np.sign(means[index])))
    return None


def samples_to_stable_significance(
    values: ArrayLike, *, truth_sign: int, alpha: float = 0.05, min_samples: int = 5
) -> int | None:
    """The smallest n after which every prefix is significant with the correct sign.

    None when the last prefix is not significant with the correct sign (never stable within
    the data at hand).
    """
    means, pvalues = running_t_test(values)
    good = (pvalues < alpha) & (np.sign(means) == truth_sign)
    good[: max(min_samples, 2) - 1] = False
    if good.size == 0 or not good[-1]:
        return None
    bad_indices = np.flatnonzero(~good)
    first_stable_index = 0 if bad_indices.size == 0 else int(bad_indices[-1]) + 1
    return first_stable_index + 1


def mean_estimate(values: ArrayLike) -> Estimate:
    """Sample mean with its standard error."""
    array = _as_float_array(values)
    if array.size < 2:
        raise ValueError("need at least two values for a standard error")
    return Estimate(float(array.mean()), float(array.std(ddof=1) / math.sqrt(array.size)))


def control_variate_estimate(
    values: ArrayLike,
    covariate: ArrayLike,
    *,
    covariate_mean: float = 0.0,
    coefficient: float | None = None,
) -> Estimate:
    """Mean of ``values`` sharpened by a covariate whose true mean is known.

    ``values - c * (covariate - covariate_mean)`` keeps the mean of ``values`` and, with ``c``
    the regression slope (estimated here unless given), removes the part of its variance the
    covariate explains. The benchmark uses the observed attention draw: known mean zero, so
    a noisy live reference becomes a sharp one.
    """
    y = _as_float_array(values)
    x = _as_float_array(covariate) - covariate_mean
    if y.shape != x.shape or y.size < 3:
        raise ValueError("values and covariate must have the same shape and at least 3 entries")
    if coefficient is None:
        spread = float(np.var(x, ddof=1))
        coefficient = float(np.cov(x, y, ddof=1)[0, 1] / spread) if spread > 0 else 0.0
    adjusted = y - coefficient * x
    return mean_estimate(adjusted)


def difference(estimate: Estimate, reference: Estimate) -> Estimate:
    """``estimate - reference`` for independent estimates (bias against a reference)."""
    return Estimate(estimate.value - reference.value, math.hypot(estimate.stderr, reference.stderr))


def bias_verdict(bias: Estimate, *, z: float = 2.576) -> str:
    """'unbiased' when the bias is consistent with zero at the given z, else 'biased'."""
    if bias.stderr == 0:
        return "unbiased" if bias.value == 0 else "biased"
    return "unbiased" if abs(bias.value) <= z * bias.stderr else "biased"


def sustained_attainment(curve: ArrayLike, threshold: float) -> int | None:
    """First index from which ``curve`` stays at or above ``threshold`` to its end, else None."""
    array = _as_float_array(curve)
    below = np.flatnonzero(array < threshold)
    if array.size == 0 or (below.size and below[-1] == array.size - 1):
        return None
    return 0 if below.size == 0 else int(below[-1]) + 1


def precision_recall(predicted: ArrayLike, actual: ArrayLike) -> tuple[float, float]:
    """Precision and recall of boolean predictions (NaN where undefined)."""
    guess = np.asarray(predicted, dtype=bool)
    truth = np.asarray(actual, dtype=bool)
    true_positive = int(np.sum(guess & truth))
    predicted_positive = int(np.sum(guess))
    actual_positive = int(np.sum(truth))
    precision = true_positive / predicted_positive if predicted_positive else math.nan
    recall = true_positive / actual_positive if actual_positive else math.nan
    return precision, recall
