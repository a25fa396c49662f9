"""Intervals for the benchmark's rows: bootstrap ratios, equivalence tests, rates, reshuffles.

A point estimate from one run cannot fail a claim honestly: the protocol's gates are stated
on intervals. Pure functions over arrays with a fixed generator seed, so a run's intervals are
reproducible and testable on constructed data.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as scipy_stats

from bench import stats

RESAMPLES = 2000
Interval = dict[str, float | None]


def _interval(point: float, samples: np.ndarray, level: float) -> Interval:
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return {"value": point, "low": None, "high": None, "level": level}
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(finite, [tail, 1.0 - tail])
    return {"value": point, "low": float(low), "high": float(high), "level": level}


def variance_ratio(
    baseline: ArrayLike, condition: ArrayLike, *, paired: bool, level: float = 0.95, seed: int = 0
) -> Interval:
    """var(baseline) / var(condition) with a percentile bootstrap interval.

    ``paired`` resamples the same world indices for both (they ran on the same world seeds).
    """
    a = np.asarray(baseline, dtype=float)
    c = np.asarray(condition, dtype=float)
    point = stats.reduction_ratio(stats.sample_variance(a), stats.sample_variance(c))
    rng = np.random.default_rng(seed)
    index_a = rng.integers(0, a.size, size=(RESAMPLES, a.size))
    index_c = (
        index_a if paired and a.size == c.size else rng.integers(0, c.size, (RESAMPLES, c.size))
    )
    var_a = np.var(a[index_a], axis=1, ddof=1)
    var_c = np.var(c[index_c], axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        samples = var_a / var_c
    return _interval(point, samples, level)


def equivalence(bias: stats.Estimate, margin: float, *, alpha: float = 0.05) -> dict[str, object]:
    """Two one-sided tests: equivalent when the (1 - 2 alpha) interval lies inside ±margin."""
    z = scipy_stats.norm.ppf(1.0 - alpha)
    low, high = bias.value - z * bias.stderr, bias.value + z * bias.stderr
    return {
        "bias": bias.value,
        "stderr": bias.stderr,
        "interval": [low, high],
        "level": 1.0 - 2.0 * alpha,
        "margin": margin,
        "equivalent": bool(-margin < low and high < margin),
    }


def normal_interval(estimate: stats.Estimate, level: float = 0.95) -> Interval:
    z = scipy_stats.norm.ppf(0.5 + level / 2.0)
    return {
        "value": estimate.value,
        "low": estimate.value - z * estimate.stderr,
        "high": estimate.value + z * estimate.stderr,
        "level": level,
    }


def rate(successes: int, trials: int, level: float = 0.95) -> Interval:
    """A proportion with its Clopper-Pearson (exact) interval."""
    if trials == 0:
        return {"value": None, "low": None, "high": None, "level": level, "n": 0}
    tail = (1.0 - level) / 2.0
    low = 0.0 if successes == 0 else scipy_stats.beta.ppf(tail, successes, trials - successes + 1)
    high = (
        1.0
        if successes == trials
        else scipy_stats.beta.ppf(1 - tail, successes + 1, trials - successes)
    )
    return {
        "value": successes / trials,
        "low": float(low),
        "high": float(high),
        "level": level,
        "n": trials,
        "k": successes,
    }


def mean_difference(
    first: ArrayLike, second: ArrayLike, level: float = 0.95, seed: int = 0
) -> Interval:
    """mean(first) - mean(second), independent samples, percentile bootstrap."""
    a, b = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    rng = np.random.default_rng(seed)
    samples = a[rng.integers(0, a.size, (RESAMPLES, a.size))].mean(axis=1) - b[
        rng.integers(0, b.size, (RESAMPLES, b.size))
    ].mean(axis=1)
    return _interval(float(a.mean() - b.mean()), samples, level)


def mean(values: ArrayLike, level: float = 0.95, seed: int = 0) -> Interval:
    """The mean of ``values`` with a percentile bootstrap interval (paired differences, say)."""
    array = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    samples = array[rng.integers(0, array.size, (RESAMPLES, array.size))].mean(axis=1)
    return _interval(float(array.mean()), samples, level)


def t_mean(values: ArrayLike, level: float = 0.95) -> Interval:
    """The mean of ``values`` with a Student t interval: for a handful of worlds, where a
    percentile bootstrap over four values would print an interval narrower than the data
    supports. One value has no interval; values that do not vary have a zero-width one."""
    array = np.asarray(values, dtype=float)
    if array.size < 2:
        return {"value": float(array.mean()), "low": None, "high": None, "level": level}
    estimate = stats.mean_estimate(array)
    half = float(scipy_stats.t.ppf(0.5 + level / 2.0, array.size - 1)) * estimate.stderr
    low, high = estimate.value - half, estimate.value + half
    return {"value": estimate.value, "low": low, "high": high, "level": level}


def reshuffled_sequential(
    values: ArrayLike,
    *,
    truth_sign: int,
    per_sample: int,
    alpha: float,
    min_samples: int,
    reshuffles: int = 200,
    seed: int = 0,
) -> dict[str, object]:
    """Rollouts to a stable correct answer and the first significant answer, over orderings.

    One ordering of the worlds is one draw of an early-stopping experiment; the median and IQR
    over ``reshuffles`` orderings say what the row is, not what one order happened to give.
    Orderings that never become stable count as beyond the horizon (reported as a fraction).
    """
    array = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    stable: list[float] = []
    wrong_first = 0
    first: list[float] = []
    for _ in range(reshuffles):
        order = array[rng.permutation(array.size)]
        found = stats.samples_to_stable_significance(
            order, truth_sign=truth_sign, alpha=alpha, min_samples=min_samples
        )
        stable.append(math.inf if found is None else found * per_sample)
        early = stats.first_significant(order, alpha=alpha, min_samples=min_samples)
        if early is not None:
            first.append(early.samples * per_sample)
            wrong_first += int(early.sign != truth_sign)
    finite = np.array(stable)
    # No interpolation: orderings that never settle are infinite, and inf - inf is undefined.
    quartiles = np.quantile(finite, [0.25, 0.5, 0.75], method="inverted_cdf").tolist()
    return {
        "stable_median": quartiles[1],
        "stable_iqr": [quartiles[0], quartiles[2]],
        "stable_reached": float(np.mean(np.isfinite(finite))),
        "first_significant_median": float(np.median(first)) if first else None,
        "first_significant_wrong_sign": wrong_first / reshuffles,
        "reshuffles": reshuffles,
        "horizon": int(array.size * per_sample),
    }
