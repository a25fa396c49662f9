"""Draw the benchmark's figures (PNG, matplotlib's Agg backend) from a run's results.

The table gives end points; the figures show how they were reached: how fast each condition's
running estimate settles, how GRPO learns, how live calls grow with group size. They are drawn
only from the results dictionary the run wrote, so a figure cannot show what was not measured.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np

from bench.report import CONDITIONS, LABELS
from bench.stats import running_t_test

COLOURS = {"naive": "#d95f02", "replay": "#7570b3", "groundhog": "#1b9e77"}
logger = logging.getLogger(__name__)


def _present(mapping: Mapping[str, Any]) -> list[str]:
    return [name for name in CONDITIONS if name in mapping]


def variance_bars(results: Mapping[str, Any], path: Path) -> None:
    conditions = results["conditions"]
    names = _present(conditions)
    values = [conditions[name].get("contrast_variance") or np.nan for name in names]
    figure, axis = plt.subplots(figsize=(6, 4))
    axis.bar([LABELS[n] for n in names], values, color=[COLOURS[n] for n in names])
    axis.set_yscale("log")
    axis.set_ylabel("variance of the verify - deep contrast (log)")
    ceiling = results.get("reference", {}).get("estimand_variance")
    if ceiling:
        axis.axhline(ceiling["value"], color="black", linestyle="--", label="estimand variance")
        axis.legend()
    axis.set_title("Advantage-contrast variance across worlds\n(one group per world)")
    _save(figure, path)


def significance_curves(results: Mapping[str, Any], path: Path) -> None:
    raw = results["raw"]["contrasts"]
    figure, axis = plt.subplots(figsize=(7, 4))
    per_sample = results["meta"]["config"]["rollouts_per_contrast"]
    for name in _present(raw):
        values = np.asarray(raw[name], dtype=float)
        if values.size < 2:
            continue
        means, _ = running_t_test(values)
        counts = np.arange(1, values.size + 1)
        spread = np.array([values[:n].std(ddof=1) if n > 1 else np.nan for n in counts])
        half_width = 1.96 * spread / np.sqrt(counts)
        rollouts = counts * per_sample
        axis.plot(rollouts, means, color=COLOURS[name], label=LABELS[name])
        axis.fill_between(
            rollouts, means - half_width, means + half_width, color=COLOURS[name], alpha=0.15
        )
    truth = results.get("reference", {}).get("contrast")
    if truth:
        axis.axhline(truth["value"], color="black", linestyle="--", label="live reference")
    axis.axhline(0.0, color="grey", linewidth=0.8)
    axis.set_xlabel("rollouts")
    axis.set_ylabel("running verify - deep contrast (95% CI)")
    axis.legend()
    _save(figure, path)


def grpo_curves(results: Mapping[str, Any], path: Path) -> None:
    curves = results["raw"].get("grpo_best_probability", {})
    figure, axis = plt.subplots(figsize=(7, 4))
    for name in _present(curves):
        per_seed = np.asarray(curves[name]["per_seed"], dtype=float)
        rollouts = np.asarray(curves[name]["rollouts"], dtype=float)
        for row in per_seed:
            axis.plot(rollouts, row, color=COLOURS[name], alpha=0.25, linewidth=0.8)
        axis.plot(rollouts, per_seed.mean(axis=0), color=COLOURS[name], label=LABELS[name])
    threshold = results["meta"]["config"].get("grpo_threshold")
    if threshold:
        axis.axhline(threshold, color="black", linestyle=":", linewidth=0.8)
    axis.set_xlabel("rollouts")
    axis.set_ylabel("policy probability of the best action")
    axis.set_ylim(0, 1)
    axis.legend()
    axis.set_title("GRPO over cached per-world rewards collected through the proxy")
    _save(figure, path)


def live_calls_curve(results: Mapping[str, Any], path: Path) -> None:
    curve = results.get("group_size_curve")
    if not curve:
        return
    figure, axis = plt.subplots(figsize=(6, 4))
    for name in _present(curve["live_calls_per_group"]):
        axis.plot(
            curve["sizes"],
            curve["live_calls_per_group"][name],
            marker="o",
            color=COLOURS[name],
            label=LABELS[name],
        )
    axis.set_xscale("log", base=2)
    axis.set_xlabel("group size")
    axis.set_ylabel("live calls per group (counted at the world)")
    axis.legend()
    _save(figure, path)


def dependency_bars(results: Mapping[str, Any], path: Path) -> None:
    models = results.get("dependency_models")
    if not models:
        return
    names = list(models)
    positions = np.arange(len(names))
    figure, axis = plt.subplots(figsize=(6, 4))
    precision = [models[n].get("precision") or 0.0 for n in names]
    recall = [models[n].get("recall") or 0.0 for n in names]
    axis.bar(positions - 0.2, precision, width=0.4, label="precision")
    axis.bar(positions + 0.2, recall, width=0.4, label="recall")
    axis.set_xticks(positions, names)
    axis.set_ylim(0, 1.05)
    axis.set_ylabel("against the world's oracle")
    axis.legend()
    _save(figure, path)


def _save(figure: plt.Figure, path: Path) -> None:
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def draw_all(results: Mapping[str, Any], out_dir: Path) -> list[Path]:
    """Draw every figure the results support; returns the files written."""
    drawers = {
        "variance.png": variance_bars,
        "significance.png": significance_curves,
        "grpo.png": grpo_curves,
        "live_calls.png": live_calls_curve,
        "dependency_models.png": dependency_bars,
    }
    written = []
    for filename, drawer in drawers.items():
        path = out_dir / filename
        path.unlink(missing_ok=True)
        drawer(results, path)
        if path.exists():
            written.append(path)
    return written
