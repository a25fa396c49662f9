"""Turn a run's raw measurements into the benchmark's rows and claims.

This is the only place a number in the table is computed. It takes the raw measurements and
returns plain dictionaries; it calls no server, so every row can be recomputed from the raw
data in benchmark.json and tested on constructed measurements.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from bench import grpo, stats
from bench.config import BenchConfig
from bench.measurements import ConditionData, EquivalenceCheck, ReferenceData


def _estimate(value: stats.Estimate | None) -> dict[str, float] | None:
    return None if value is None else {"value": value.value, "stderr": value.stderr}


def coupled_contrasts(reference: ReferenceData) -> np.ndarray:
    """Per world, both actions in one live world: the contrast no coupling may remove."""
    better = np.array([rollout.reward for rollout in reference.better])
    worse = np.array([rollout.reward for rollout in reference.worse_coupled])
    return better[: worse.size] - worse


def analyze_reference(reference: ReferenceData, config: BenchConfig) -> dict[str, Any]:
    """The live world's contrast (with the attention control variate) and its per-world spread."""
    better = np.array([rollout.reward for rollout in reference.better])
    worse = np.array([rollout.reward for rollout in reference.worse_independent])
    independent = better - worse
    attention = np.array(
        [
            (b.attention or 0.0) - (w.attention or 0.0)
            for b, w in zip(reference.better, reference.worse_independent, strict=True)
        ]
    )
    plain = stats.mean_estimate(independent)
    sharpened = stats.control_variate_estimate(
        independent, attention, coefficient=reference.attention_coefficient
    )
    coupled = coupled_contrasts(reference)
    estimand_variance = stats.sample_variance(coupled)
    means = {action: float(np.mean(values)) for action, values in reference.per_action.items()}
    ranking_best = max(means, key=means.__getitem__) if means else None
    return {
        "coupled_contrasts": coupled.tolist(),
        "pairs": int(independent.size),
        "contrast": _estimate(sharpened),
        "contrast_without_control_variate": _estimate(plain),
        "control_variate_gain": (plain.stderr / sharpened.stderr) ** 2
        if sharpened.stderr > 0
        else None,
        "attention_coefficient": reference.attention_coefficient,
        "coupled_worlds": int(coupled.size),
        "estimand_variance": {
            "value": estimand_variance,
            "stderr": estimand_variance * math.sqrt(2.0 / max(coupled.size - 1, 1)),
        },
        "mean_reward_by_action": means,
        "ranking_best_action": ranking_best,
        "best_action": live_best_action(sharpened, config),
    }


def live_best_action(contrast: stats.Estimate, config: BenchConfig) -> str:
    """The action learning is judged on: the winner of the live reference's paired contrast.

    The ranking worlds are few (they run every action, so they are expensive) and their argmax
    is noise when two actions are close: in the shop it named `compare` although the live
    reference put deal - compare at +0.25 +/- 0.04. The contrast's two actions are the world's
    declared top pair, and the reference pairs are the run's largest live sample.
    """
    return config.better_action if contrast.value >= 0 else config.worse_action


def analyze_condition(
    data: ConditionData, config: BenchConfig, truth_sign: int
) -> tuple[dict[str, Any], np.ndarray]:
    """One condition's variance, sample-efficiency, bias and accounting rows."""
    rewards = data.matrix("reward")
    better = config.actions.index(config.better_action)
    worse = config.actions.index(config.worse_action)
    contrast = stats.contrasts(rewards, better, worse)
    per_sample = config.rollouts_per_contrast
    first = stats.first_significant(contrast, alpha=config.alpha, min_samples=config.min_samples)
    stable = stats.samples_to_stable_significance(
        contrast, truth_sign=truth_sign, alpha=config.alpha, min_samples=config.min_samples
    )
    verify_rollouts = [r for r in data.rollouts if r.saw_own_write is not None]
    blind = (
        sum(1 for r in verify_rollouts if not r.saw_own_write) / len(verify_rollouts)
        if verify_rollouts
        else None
    )
    totals = data.totals
    groups = max(data.groups, 1)
    row: dict[str, Any] = {
        "worlds": int(rewards.shape[0]),
        "contrast_variance": stats.sample_variance(contrast),
        "group_advantage_variance": stats.group_advantage_variance(rewards),
        "estimated_contrast": _estimate(stats.mean_estimate(contrast)),
        "stable_rollouts": None if stable is None else stable * per_sample,
        "first_significant": None
        if first is None
        else {
            "rollouts": first.samples * per_sample,
            "sign": first.sign,
            "correct": first.sign == truth_sign,
        },
        "blind_to_own_write": blind,
        "lie_rate": totals.lies / totals.reads if totals.reads else None,
        "reads_shared": totals.reads_shared / totals.reads if totals.reads else None,
        "live_calls_per_group": data.world_calls / groups,
        "resolver_live_calls_per_group": totals.live_calls / groups,
        "recording_calls_per_group": totals.decisions.get("recorded", 0) / groups
        if data.name != "naive"
        else 0.0,
        "decisions": dict(totals.decisions),
        "wall_seconds": data.wall_seconds,
    }
    return row, contrast


def analyze_equivalence(checks: Sequence[EquivalenceCheck]) -> dict[str, Any] | None:
    if not checks:
        return None
    differences = [check.difference for check in checks]
    return {
        "identical": sum(
            1 for check in checks if check.difference == 0.0 and check.identical_observation
        ),
        "total": len(checks),
        "max_abs_diff": max(differences),
    }


def analyze_grpo(
    rewards: Mapping[str, np.ndarray], config: BenchConfig, best_action: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """GRPO summaries per condition, and their thinned learning curves for the figure."""
    grpo_config = grpo.GrpoConfig(
        steps=config.grpo_steps,
        learning_rate=config.grpo_learning_rate,
        seeds=config.grpo_seeds,
        threshold=config.grpo_threshold,
    )
    summaries: dict[str, Any] = {}
    curves: dict[str, Any] = {}
    stride = max(1, config.grpo_steps // 200)
    for name, table in rewards.items():
        runs = grpo.train_seeds(table, grpo_config)
        summaries[name] = grpo.summarize(runs, best_action, grpo_config)
        steps = np.arange(0, config.grpo_steps + 1, stride)
        curves[name] = {
            "rollouts": (steps * grpo_config.group_size).tolist(),
            "per_seed": [run.probabilities[steps, best_action].tolist() for run in runs],
        }
    return summaries, curves


def add_comparisons(
    rows: dict[str, dict[str, Any]],
    contrasts: Mapping[str, np.ndarray],
    reference: Mapping[str, Any],
) -> None:
    """Reduction, Levene and bias against the naive baseline and the live reference."""
    baseline = rows.get("naive", {}).get("contrast_variance")
    truth = reference.get("contrast")
    for name, row in rows.items():
        if baseline is not None:
            row["reduction_vs_naive"] = stats.reduction_ratio(baseline, row["contrast_variance"])
        if name != "naive" and "naive" in contrasts:
            statistic, pvalue = stats.levene(contrasts[name], contrasts["naive"])
            row["levene_vs_naive"] = {"statistic": statistic, "p": pvalue}
        if truth and row.get("estimated_contrast"):
            estimate = stats.Estimate(**row["estimated_contrast"])
            bias = stats.difference(estimate, stats.Estimate(**truth))
            row["bias"] = _estimate(bias)
            row["verdict"] = stats.bias_verdict(bias)
