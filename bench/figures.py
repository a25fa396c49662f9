"""Draw the benchmark's figures (PNG, matplotlib's Agg backend) from a run's results.

The table gives end points with intervals; the figures show the same intervals and how they
were reached: variance reduction per cell with its bootstrap interval and the ceiling, the
running contrast with its confidence band, each GRPO seed's own curve, live calls against
group size, and each dependency model's precision (marked where undefined) and recall. They are
drawn only from the results dictionary the run wrote, so a figure cannot show what was not
measured.
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
HEADLINE = "research/uncooperative"
logger = logging.getLogger(__name__)


def _headline(results: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    cells = results["cells"]
    name = HEADLINE if HEADLINE in cells else next(iter(cells))
    return name, cells[name]


def variance_bars(results: Mapping[str, Any], path: Path) -> None:
    """Reduction vs (A) with 95% bootstrap intervals, per cell, and the ceiling's interval."""
    cells = results["cells"]
    figure, axis = plt.subplots(figsize=(7, 4))
    width = 0.35
    for offset, cell in enumerate(cells.values()):
        for index, name in enumerate(("replay", "groundhog")):
            row = cell["conditions"].get(name, {}).get("reduction")
            if not row or row.get("low") is None:
                continue
            x = offset + (index - 0.5) * width
            error = [[row["value"] - row["low"]], [row["high"] - row["value"]]]
            axis.bar(x, row["value"], width=width, color=COLOURS[name], alpha=0.85)
            axis.errorbar(x, row["value"], yerr=error, color="black", capsize=4)
        ceiling = cell.get("reference", {}).get("ceiling_interval")
        if ceiling and ceiling.get("low") is not None:
            axis.axhspan(ceiling["low"], ceiling["high"], color="grey", alpha=0.15)
            axis.axhline(ceiling["value"], color="black", linestyle="--", linewidth=0.8)
    axis.set_xticks(range(len(cells)), [name.replace("research/", "") for name in cells])
    axis.set_yscale("log")
    axis.set_ylabel("variance reduction vs (A), 95% CI (log)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=COLOURS[n]) for n in ("replay", "groundhog")]
    axis.legend(handles, [LABELS["replay"], LABELS["groundhog"]])
    axis.set_title("Advantage-contrast variance reduction (dashed: endogenous ceiling)")
    _save(figure, path)


def significance_curves(results: Mapping[str, Any], path: Path) -> None:
    cell_name, cell = _headline(results)
    raw = cell["raw"]["contrasts"]
    figure, axis = plt.subplots(figsize=(7, 4))
    per_sample = results["meta"]["config"]["rollouts_per_contrast"]
    for name in [n for n in CONDITIONS if n in raw]:
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
    truth = cell.get("reference", {}).get("contrast")
    if truth:
        axis.axhline(truth["value"], color="black", linestyle="--", label="live reference")
    axis.axhline(0.0, color="grey", linewidth=0.8)
    axis.set_xlabel("rollouts (one ordering; the table gives medians over reshuffles)")
    axis.set_ylabel("running verify - deep contrast (95% CI)")
    axis.set_title(cell_name)
    axis.legend()
    _save(figure, path)


def grpo_curves(results: Mapping[str, Any], path: Path) -> None:
    """Every seed's own curve (fresh rollouts through the proxy), one panel per condition."""
    cell_name, cell = _headline(results)
    runs = (cell.get("raw") or {}).get("grpo_runs")
    if not runs:
        return
    names = [n for n in CONDITIONS if n in runs]
    # The cell's own actions: the shop's are not the research world's (meta's config).
    actions = (
        cell.get("grpo_actions") or cell.get("actions") or results["meta"]["config"]["actions"]
    )
    best = list(actions).index(cell["reference"]["best_action"])
    figure, axes = plt.subplots(1, len(names), figsize=(4 * len(names), 3.5), sharey=True)
    for axis, name in zip(np.atleast_1d(axes), names, strict=True):
        for run in runs[name]:
            curve = np.asarray(run["probabilities"], dtype=float)[:, best]
            axis.plot(np.arange(curve.size), curve, color=COLOURS[name], alpha=0.7, marker=".")
        axis.set_title(LABELS[name])
        axis.set_xlabel("GRPO step (one fresh group)")
        axis.set_ylim(0, 1)
    np.atleast_1d(axes)[0].set_ylabel(f"P(best action), per seed ({cell_name})")
    _save(figure, path)


def live_calls_curve(results: Mapping[str, Any], path: Path) -> None:
    figure, axis = plt.subplots(figsize=(6, 4))
    drawn = False
    for cell_name, cell in results["cells"].items():
        curve = cell.get("group_size_curve")
        if not curve or not curve.get("sizes"):
            continue
        style = "-" if "uncooperative" in cell_name else ":"
        for name in [n for n in CONDITIONS if n in curve["live_calls_per_group"]]:
            means = [point["value"] for point in curve["live_calls_per_group"][name]]
            axis.plot(
                curve["sizes"],
                means,
                marker="o",
                linestyle=style,
                color=COLOURS[name],
                label=f"{LABELS[name]} {cell_name.split('/')[-1]}",
            )
            drawn = True
    if not drawn:
        plt.close(figure)
        return
    axis.set_xscale("log", base=2)
    axis.set_xlabel("group size")
    axis.set_ylabel("live calls per group (counted at the world)")
    axis.legend(fontsize=7)
    _save(figure, path)


def dependency_bars(results: Mapping[str, Any], path: Path) -> None:
    cell_name, cell = _headline(results)
    models = cell.get("dependency_models")
    if not models:
        return
    names = list(models)
    positions = np.arange(len(names))
    figure, axis = plt.subplots(figsize=(6, 4))
    precision = [models[n].get("precision") for n in names]
    recall = [models[n].get("recall") or 0.0 for n in names]
    axis.bar(positions - 0.2, [p or 0.0 for p in precision], width=0.4, label="precision")
    axis.bar(positions + 0.2, recall, width=0.4, label="recall")
    for position, value in zip(positions, precision, strict=True):
        if value is None:
            axis.text(position - 0.2, 0.02, "undefined", rotation=90, ha="center", fontsize=8)
    axis.set_xticks(positions, names)
    axis.set_ylim(0, 1.05)
    axis.set_ylabel(f"against the world's oracle ({cell_name})")
    axis.legend()
    _save(figure, path)


def noise_curve(results: Mapping[str, Any], path: Path) -> None:
    """Measured reduction (95% CI) beside the predicted one, over the per-call noise weight."""
    points = results.get("noise_curve")
    if not points:
        return
    weights = [row["call_weight"] for row in points]
    measured = [row["measured"] for row in points]
    values = np.array([row["value"] for row in measured], dtype=float)
    low = np.array([row["low"] if row["low"] is not None else np.nan for row in measured])
    high = np.array([row["high"] if row["high"] is not None else np.nan for row in measured])
    figure, axis = plt.subplots(figsize=(6, 4))
    axis.errorbar(
        weights,
        values,
        yerr=[values - low, high - values],
        color=COLOURS["groundhog"],
        marker="o",
        capsize=4,
        label="measured var(A)/var(C), 95% CI",
    )
    axis.plot(
        weights,
        [row["predicted"] for row in points],
        color="black",
        linestyle="--",
        label="predicted 1 + 2 sigma_exo^2 / var(C)",
    )
    axis.axhline(1.0, color="grey", linewidth=0.8)
    axis.set_yscale("log")
    axis.set_xlabel("per-call attention weight (declared world: 0.6)")
    axis.set_ylabel("variance reduction (log)")
    axis.legend(fontsize=8)
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
        "noise_curve.png": noise_curve,
    }
    written = []
    for filename, drawer in drawers.items():
        path = out_dir / filename
        path.unlink(missing_ok=True)
        try:
            drawer(results, path)
        except (KeyError, ValueError, TypeError):  # a figure must not lose the run's results
            logger.exception("figure %s could not be drawn", filename)
        if path.exists():
            written.append(path)
    return written
