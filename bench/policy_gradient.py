"""The GRPO policy gradient as a measured quantity: per-group estimates, their SNR, a learner.

Issue 58 item 6 asks for learning measured where variance reduction should matter: the
gradient's signal-to-noise ratio under (A), (B) and (C) on the same states and worlds, and
steps to a declared P(best). Both rest on the estimator bench/grpo.py ascends (group-relative
advantage times the softmax score, no standard-deviation scaling); keeping it here as pure
functions over arrays lets the estimator be checked against the analytic gradient of a known
bandit and the SNR against synthetic data with a known answer, before either meets a proxy.

The learner takes a `sample` function (world seed, strategies -> rewards) so the one loop
trains in process (bench/learning_sim.py) and through the proxy (bench/learning.py).
Actions are drawn by inverse CDF from uniforms fixed per (seed, step): two conditions trained
on one seed draw the same actions while their policies agree (common random numbers), so their
paired difference carries less of the sampling noise neither condition is about.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats as scipy_stats

from bench.grpo import softmax
from bench.stats import sustained_attainment

FloatArray = NDArray[np.float64]
Sampler = Callable[[int, Sequence[int]], Sequence[float]]
BOOTSTRAP_RESAMPLES = 2000


def group_gradient(rewards: ArrayLike, chosen: ArrayLike, policy: ArrayLike) -> FloatArray:
    """One group's estimate of the gradient wrt the logits: mean_i (r_i - mean r)(e_{c_i} - pi)."""
    reward = np.asarray(rewards, dtype=np.float64)
    actions = np.asarray(chosen, dtype=np.int64)
    probabilities = np.asarray(policy, dtype=np.float64)
    advantages = reward - reward.mean()
    score = np.eye(probabilities.size)[actions] - probabilities
    return np.asarray((advantages[:, None] * score).mean(axis=0), dtype=np.float64)


def expected_gradient(means: ArrayLike, policy: ArrayLike, group_size: int) -> FloatArray:
    """The estimator's expectation when action k's reward has mean ``means[k]``.

    With the group mean as baseline the estimator is the exact gradient of J = sum pi_k mu_k
    (pi_k (mu_k - J)) shrunk by (G - 1) / G: a branch's own reward is in its baseline.
    """
    mu = np.asarray(means, dtype=np.float64)
    pi = np.asarray(policy, dtype=np.float64)
    return np.asarray((group_size - 1) / group_size * pi * (mu - pi @ mu), dtype=np.float64)


def draw_actions(policy: ArrayLike, uniforms: ArrayLike) -> NDArray[np.int64]:
    """Actions by inverse CDF of ``policy`` at ``uniforms``: the same uniforms give the same
    actions under close policies."""
    cumulative = np.cumsum(np.asarray(policy, dtype=np.float64))
    cumulative[-1] = 1.0
    return np.searchsorted(cumulative, np.asarray(uniforms), side="right").astype(np.int64)


def snr(gradients: ArrayLike) -> dict[str, float]:
    """|E g|^2 / tr Cov(g) of one group's estimate, from per-world estimates ``[worlds, K]``.

    |mean|^2 overstates |E g|^2 by tr(Cov) / n; that is subtracted, so the ratio is not
    inflated for the noisier condition (whose mean is the noisier).
    """
    matrix = np.asarray(gradients, dtype=np.float64)
    n = matrix.shape[0]
    mean = matrix.mean(axis=0)
    trace = float(np.var(matrix, axis=0, ddof=1).sum())
    signal = float(mean @ mean) - trace / n
    return {"signal": signal, "noise": trace, "snr": signal / trace if trace > 0 else np.inf}


def _snr_rows(matrix: FloatArray, rows: NDArray[np.int64]) -> FloatArray:
    """`snr(matrix[r])["snr"]` for every row ``r`` of index array ``rows`` ([..., n]), at once."""
    picked = matrix[rows]  # [..., n, K]
    n = rows.shape[-1]
    trace = picked.var(axis=-2, ddof=1).sum(axis=-1)
    signal = (picked.mean(axis=-2) ** 2).sum(axis=-1) - trace / n
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(signal / trace, dtype=np.float64)


def _bootstrap(
    statistic: Callable[[NDArray[np.int64]], FloatArray], n: int, level: float, seed: int
) -> Any:
    return scipy_stats.bootstrap(
        (np.arange(n),),
        lambda index, axis=-1: statistic(np.asarray(index).astype(np.int64)),
        vectorized=True,
        n_resamples=BOOTSTRAP_RESAMPLES,
        confidence_level=level,
        method="BCa",
        random_state=np.random.default_rng(seed),
    )


def _bca(
    statistic: Callable[[NDArray[np.int64]], FloatArray], n: int, level: float, seed: int
) -> dict[str, Any]:
    """A BCa bootstrap interval of ``statistic(index rows)`` over ``n`` paired worlds."""
    with warnings.catch_warnings():  # a degenerate statistic: reported as no bound, below
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", scipy_stats.DegenerateDataWarning)
        result = _bootstrap(statistic, n, level, seed)
    low, high = (float(bound) for bound in result.confidence_interval)
    # A statistic constant over resamples has no BCa interval: no bound, so no gate passes.
    low_, high_ = (None if np.isnan(bound) else bound for bound in (low, high))
    return {"low": low_, "high": high_, "level": level, "method": "BCa, worlds"}


def snr_interval(gradients: ArrayLike, level: float = 0.95, seed: int = 0) -> dict[str, Any]:
    """One condition's SNR with a BCa interval over worlds."""
    matrix = np.asarray(gradients, dtype=np.float64)
    value = snr(matrix)["snr"]
    return {"value": value, **_bca(lambda rows: _snr_rows(matrix, rows), len(matrix), level, seed)}


def snr_ratio(
    numerator: ArrayLike, denominator: ArrayLike, level: float = 0.95, seed: int = 0
) -> dict[str, Any]:
    """SNR(numerator) / SNR(denominator), BCa over worlds resampled together (same worlds)."""
    top = np.asarray(numerator, dtype=np.float64)
    bottom = np.asarray(denominator, dtype=np.float64)
    if top.shape != bottom.shape:
        raise ValueError("paired conditions need one estimate per world each")

    def statistic(rows: NDArray[np.int64]) -> FloatArray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return _snr_rows(top, rows) / _snr_rows(bottom, rows)

    value = snr(top)["snr"] / snr(bottom)["snr"]
    return {"value": value, **_bca(statistic, top.shape[0], level, seed)}


def cosine(first: ArrayLike, second: ArrayLike) -> float:
    a, b = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    return float(a @ b / np.sqrt((a @ a) * (b @ b)))


def t_interval(values: ArrayLike, level: float = 0.95) -> dict[str, Any]:
    """Mean with a Student t interval: for a handful of seeds, where a percentile bootstrap
    is too narrow (it ignores the t quantile and the sqrt((n-1)/n) shrinkage of the plug-in
    sd); exact for normal data, and its coverage on skewed data is a test."""
    array = np.asarray(values, dtype=np.float64)
    n = array.size
    mean = float(array.mean())
    half = float(scipy_stats.t.ppf(0.5 + level / 2, n - 1) * array.std(ddof=1) / np.sqrt(n))
    return {"value": mean, "low": mean - half, "high": mean + half, "level": level, "n": n}


def steps_to(curve: ArrayLike, best: int, threshold: float) -> int:
    """Steps until P(best) reaches and keeps ``threshold``; a curve that never holds it counts
    as one step past its horizon (censored low: it favours whoever never got there)."""
    probabilities = np.asarray(curve, dtype=np.float64)
    step = sustained_attainment(probabilities[:, best], threshold)
    return probabilities.shape[0] if step is None else step


def train(
    sample: Sampler,
    *,
    actions: int,
    group_size: int,
    steps: int,
    learning_rate: float,
    seed: int,
    first_world: int,
) -> dict[str, Any]:
    """One seed's GRPO run from uniform; step t runs on world ``first_world + seed*10000 + t``."""
    logits = np.zeros(actions)
    history = [softmax(logits).tolist()]
    rewards_seen: list[list[float]] = []
    for step in range(steps):
        policy = softmax(logits)
        uniforms = np.random.default_rng([seed, step]).random(group_size)
        chosen = draw_actions(policy, uniforms)
        rewards = list(sample(first_world + seed * 10_000 + step, chosen.tolist()))
        logits = logits + learning_rate * group_gradient(rewards, chosen, policy)
        history.append(softmax(logits).tolist())
        rewards_seen.append(rewards)
    return {"seed": seed, "probabilities": history, "rewards": rewards_seen}
