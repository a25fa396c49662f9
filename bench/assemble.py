"""Assemble a run's raw measurements into benchmark.json: cells, intervals and claim verdicts.

A run measures *cells* — a world in one mode (cooperative: the ceiling; uncooperative: the
headline). For each cell the analysis computes the rows; this module adds the intervals the
protocol's gates need (bootstrap ratios, equivalence tests, exact rates, reshuffled sequential
rows), applies the predeclared claims (bench/protocol.toml) and puts everything together with
the configuration, seeds, timings and raw data. Separate from collection so it can be run on
constructed measurements in tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from bench import analysis, claims, intervals, stats
from bench.config import BenchConfig, for_cell, for_world
from bench.harness import Services

NOTES = [
    "Staleness is graded by the world's oracle on every read a rollout was served: the read is "
    "re-rendered with the exogenous draw it was served with against the asker's own sandbox; "
    "different bytes are a lie. The resolver's own `stale` decisions are reported separately.",
    "Siblings of a group run concurrently against one live world on one day (the slow state a "
    "live service shares across simultaneous calls); per-call noise is not shared in (A).",
    "Uncooperative: no X-Groundhog-* header reaches the world, it draws noise per call, "
    "announces no dependency, and names each rollout's sandbox by a session token the rollout "
    "obtains (POST /sessions, then Authorization: Bearer). (C) uses `rules` written from the "
    "world's public routes. Cooperative: the proxy sends the world seed and occurrence, the "
    "world announces hints and (C) uses `hints` — the ceiling.",
    "Intervals are 95% (percentile bootstrap over worlds for variance ratios, 2000 resamples; "
    "Clopper-Pearson for rates; normal for means). `±` in the table is one standard error.",
    "Sequential rows are the median and IQR over reshuffled orderings of the same worlds.",
    "What was tuned: the research world's constants (attention sd about nine times the "
    "verify-deep gap, slow/per-call split) are declared design inputs, chosen to make the "
    "effect visible as in the prototype, and declared in bench/protocol.toml before this "
    "protocol's first run; nothing was tuned on this run's results.",
    "Each mode's ceiling is its own (A)'s contrast variance over the fully coupled live "
    "variance (the cooperative world's, both actions in one world with every draw shared: per-"
    "call noise couples no live contrast in the uncooperative world). Over-sharing is tested "
    "directly: var(condition) / var(fully coupled live), non-inferior at the protocol's margin.",
    "The shop world (worldsim/shop.py) differs in structure: much of its exogenous noise is drawn "
    "by writes (the checkout's quote and shipping fee), which are always live, so no proxy can "
    "share it; its write-read dependency is the cart's offer. Its constants and claims were "
    "declared in bench/protocol.toml before its first benchmark run.",
    "The MCP world (worldsim/mcp_world.py) serves its tools over MCP streamable HTTP; each "
    "rollout is the official MCP client through the proxy, one MCP session (its sandbox) per "
    "branch. It is uncooperative only (no ceiling cell): its read-only tools carry per-call "
    "fare noise the booking charges, its `my_trip` shows a voucher only after the branch's own "
    "`hold`. (C) uses the tape's `mcp_tools` and `rules` with `{session}`. Its constants, sizes "
    "and claims were declared in protocol version 3 before its first run.",
]


def _estimate(value: stats.Estimate | None) -> dict[str, float] | None:
    return None if value is None else {"value": value.value, "stderr": value.stderr}


def _dependency_rows(raw: Mapping[str, Any]) -> dict[str, Any]:
    rows = {}
    for model, data in raw.items():
        pairs = data["pairs"]
        predicted = [p for p, _ in pairs]
        actual = [a for _, a in pairs]
        precision, recall = stats.precision_recall(predicted, actual) if pairs else (None, None)
        rows[model] = {
            "precision": precision,
            "precision_note": None
            if sum(predicted)
            else "undefined: the model flagged no read after a write as changed",
            "recall": recall,
            "reads_scored": len(pairs),
            "oracle_changed": int(sum(actual)),
            "lies": intervals.rate(data["oracle_stale"], data["oracle_reads"]),
            "live_calls_per_group": data["live_calls_per_group"],
        }
    return rows


def _group_size_curve(raw: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Live calls per group against group size: per condition and size, the mean over worlds
    with its 95% t interval (``per_world`` kept for the reader)."""
    if not raw or not raw.get("sizes"):
        return None
    per_world = raw["per_world"]
    return {
        "sizes": raw["sizes"],
        "per_world": per_world,
        "live_calls_per_group": {
            mode: [intervals.t_mean(counts) for counts in by_size]
            for mode, by_size in per_world.items()
        },
    }


def _steps_to(probabilities: list[list[float]], best: int, threshold: float) -> int:
    """Steps until P(best) reaches and keeps ``threshold``; censored at the horizon + 1."""
    curve = np.asarray(probabilities, dtype=float)[:, best]
    step = stats.sustained_attainment(curve, threshold)
    return curve.size if step is None else step


def _paired(
    runs: Mapping[str, list[dict[str, Any]]], first: str, second: str, value: Any
) -> dict[str, Any] | None:
    """Per seed, ``value(first's run) - value(second's run)``, with a bootstrap interval."""
    by_seed = {name: {run["seed"]: run for run in runs.get(name, [])} for name in (first, second)}
    seeds = sorted(set(by_seed[first]) & set(by_seed[second]))
    if len(seeds) < 2:
        return None
    differences = [value(by_seed[first][s]) - value(by_seed[second][s]) for s in seeds]
    return {**intervals.mean(differences), "seeds": len(seeds), "differences": differences}


def _grpo(runs: Mapping[str, list[dict[str, Any]]], best: int, threshold: float) -> dict[str, Any]:
    """Final P(best) and steps to ``threshold`` per condition, and (C) vs (A) paired by seed.

    ``best`` is the live reference's best action; the paired rows are the learning claim.
    """
    summary: dict[str, Any] = {}
    for condition, seeds in runs.items():
        finals = [run["probabilities"][-1][best] for run in seeds]
        steps = [_steps_to(run["probabilities"], best, threshold) for run in seeds]
        horizon = len(seeds[0]["probabilities"]) - 1 if seeds else 0
        summary[condition] = {
            "final_best_probability": finals,
            "mean_final_best": intervals.mean(finals) if len(finals) > 1 else None,
            "reached_threshold": intervals.rate(sum(s <= horizon for s in steps), len(steps)),
            "steps_to_threshold": steps,
            "mean_steps_to_threshold": intervals.mean(steps) if len(steps) > 1 else None,
            "steps": horizon,
        }

    def final(run: Mapping[str, Any]) -> float:
        return float(run["probabilities"][-1][best])

    def steps_to(run: Mapping[str, Any]) -> float:
        return float(_steps_to(run["probabilities"], best, threshold))

    summary["groundhog_minus_naive"] = _paired(runs, "groundhog", "naive", final)
    summary["steps_groundhog_minus_naive"] = _paired(runs, "groundhog", "naive", steps_to)
    return summary


def _calibration(
    data: Any,
    contrast: np.ndarray,
    config: BenchConfig,
    reference: Any,
    truth: Mapping[str, float],
    margin: float,
) -> dict[str, object] | None:
    """(A) against the live reference: both are the live world, so they must be equivalent.

    (A)'s contrast is sharpened by the same attention control variate as the reference's (its
    known mean is zero), without which (A)'s variance would need thousands of worlds to test.
    """
    attention = data.matrix("attention")
    better = config.actions.index(config.better_action)
    worse = config.actions.index(config.worse_action)
    # A world without an attention draw (the shop) has none to sharpen by, as in the reference.
    covariate = np.nan_to_num(attention[:, better] - attention[:, worse], nan=0.0)
    if covariate.size < 3:
        return None
    sharpened = stats.control_variate_estimate(
        contrast, covariate, coefficient=reference.attention_coefficient
    )
    bias = stats.difference(sharpened, stats.Estimate(**truth))
    return intervals.equivalence(bias, margin, alpha=config.alpha)


def assemble_cell(
    config: BenchConfig,
    raw: Mapping[str, Any],
    *,
    cooperative: bool,
    margin: float,
    coupled_live: np.ndarray | None = None,
) -> dict[str, Any]:
    """One cell's rows, intervals and gate metrics.

    ``coupled_live`` is the fully coupled live contrast (the cooperative world's, where every
    draw of both actions is shared); without it the cell's own coupled contrasts are used,
    which only the cooperative world couples fully.
    """
    reference = analysis.analyze_reference(raw["reference"], config)
    truth = reference["contrast"]
    truth_sign = int(np.sign(truth["value"])) if truth and truth["value"] else 1
    rows: dict[str, dict[str, Any]] = {}
    contrasts: dict[str, np.ndarray] = {}
    rewards: dict[str, np.ndarray] = {}
    for name, data in raw["conditions"].items():
        rows[name], contrasts[name] = analysis.analyze_condition(data, config, truth_sign)
        rewards[name] = data.matrix("reward")
        oracle = data.oracle
        # Groups are the trials: a group's stale reads share one cause (see OracleCounts).
        rows[name]["lies"] = {
            **intervals.rate(oracle.groups_stale, oracle.groups),
            "unit": "groups",
        }
        rows[name]["stale_reads"] = intervals.rate(oracle.stale, oracle.reads)
        rows[name]["lie_rate"] = rows[name]["lies"]["value"]
        rows[name]["ungraded_reads"] = oracle.ungraded
        blind = {
            **intervals.rate(oracle.groups_blind, oracle.groups_reading_after_write),
            "unit": "groups",
        }
        rows[name]["blind"] = blind
        rows[name]["blind_to_own_write"] = blind["value"]
        rows[name]["resolver_stale_decisions"] = data.totals.lies
        rows[name]["sequential"] = intervals.reshuffled_sequential(
            contrasts[name],
            truth_sign=truth_sign,
            per_sample=config.rollouts_per_contrast,
            alpha=config.alpha,
            min_samples=config.min_samples,
        )
    analysis.add_comparisons(rows, contrasts, reference)
    coupled = reference.pop("coupled_contrasts")
    estimand = coupled if coupled_live is None and cooperative else coupled_live
    if "naive" in contrasts:
        for name, values in contrasts.items():
            rows[name]["reduction"] = intervals.variance_ratio(
                contrasts["naive"], values, paired=True
            )
        if estimand is not None and len(estimand) > 1:
            # This mode's own (A) over the fully coupled live variance: the mode's ceiling.
            reference["ceiling_interval"] = intervals.variance_ratio(
                contrasts["naive"], estimand, paired=False
            )
            reference["ceiling"] = reference["ceiling_interval"]["value"]
    if estimand is not None and len(estimand) > 1:
        for name, values in contrasts.items():
            # var(condition) / var(fully coupled live): below 1 means it removed part of the
            # estimand itself (over-sharing); the non-inferiority gate reads the lower bound.
            rows[name]["estimand_share"] = intervals.variance_ratio(values, estimand, paired=False)
    if "naive" in contrasts and truth:
        rows["naive"]["calibration"] = _calibration(
            raw["conditions"]["naive"], contrasts["naive"], config, raw["reference"], truth, margin
        )
    for row in rows.values():
        if row.get("bias"):
            bias = stats.Estimate(**row["bias"])
            row["bias_interval"] = intervals.normal_interval(bias)
            row["equivalence"] = intervals.equivalence(bias, margin, alpha=config.alpha)
    for name, checks in raw.get("equivalence", {}).items():
        summary = analysis.analyze_equivalence(checks)
        rows[name]["exact_equivalence"] = summary
        if summary:
            rows[name]["exact"] = intervals.rate(summary["identical"], summary["total"])
    repro_pairs = raw.get("reproducibility") or []
    best = config.learning_actions.index(reference["best_action"])
    cell: dict[str, Any] = {
        "cooperative": cooperative,
        "reference": reference,
        "conditions": rows,
        "group_size_curve": _group_size_curve(raw.get("curve")),
        "dependency_models": _dependency_rows(raw.get("dependency_models") or {}),
        "reproducibility": {
            "identical": sum(1 for first, second in repro_pairs if first == second),
            "total": len(repro_pairs),
            "digests": [list(pair) for pair in repro_pairs],
        },
        "grpo": _grpo(raw["grpo"], best, config.grpo_threshold) if raw.get("grpo") else None,
        "timings_seconds": raw.get("timings", {}),
        "raw": {
            "contrasts": {name: values.tolist() for name, values in contrasts.items()},
            "coupled_live_contrasts": coupled,
            "rewards": {name: table.tolist() for name, table in rewards.items()},
            "grpo_runs": raw.get("grpo"),
        },
    }
    return cell


def measured_sizes(raw: Mapping[str, Any]) -> dict[str, int]:
    """What a cell actually ran, read from its data (not from the config that asked for it)."""
    groups = [data.groups for data in raw["conditions"].values()]
    runs = raw.get("grpo") or {}
    seeds = [len(condition_runs) for condition_runs in runs.values()]
    steps = [
        len(run["probabilities"]) - 1 for condition_runs in runs.values() for run in condition_runs
    ]
    sizes = {
        "worlds": min(groups, default=0),
        "reference_pairs": len(raw["reference"].better),
    }
    if runs:
        sizes["grpo_seeds"] = min(seeds, default=0)
        sizes["grpo_steps"] = min(steps, default=0)
    return sizes


def gate_metrics(cell: Mapping[str, Any]) -> dict[str, Any]:
    """The named metrics the protocol's gates read, for one cell."""
    rows = cell["conditions"]
    metrics: dict[str, Any] = {}
    for name, row in rows.items():
        metrics[f"{name}.reduction"] = row.get("reduction")
        metrics[f"{name}.estimand_share"] = row.get("estimand_share")
        metrics[f"{name}.calibration"] = row.get("calibration")
        metrics[f"{name}.equivalence"] = row.get("equivalence")
        metrics[f"{name}.lies"] = row.get("lies")
        metrics[f"{name}.bias"] = row.get("bias_interval")
        metrics[f"{name}.exact"] = row.get("exact")
    for model, row in cell["dependency_models"].items():
        metrics[f"models.{model}.lies"] = row["lies"]
    metrics["ceiling"] = cell["reference"].get("ceiling_interval")
    repro = cell["reproducibility"]
    if repro["total"]:
        metrics["reproducibility"] = intervals.rate(repro["identical"], repro["total"])
    if cell.get("grpo"):
        metrics["grpo.groundhog_minus_naive"] = cell["grpo"].get("groundhog_minus_naive")
        metrics["grpo.steps_groundhog_minus_naive"] = cell["grpo"].get(
            "steps_groundhog_minus_naive"
        )
    return metrics


def assemble(
    config: BenchConfig,
    raws: Mapping[str, Mapping[str, Any]],
    *,
    run_id: str,
    services: Services,
    speed: Any = None,
    faults: Any = None,
    protocol: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The full results dictionary written to benchmark.json (``protocol``: the file's)."""
    protocol = claims.load() if protocol is None else protocol
    margin = float(protocol["constants"]["bias_margin"])
    cells = {}
    withheld: dict[str, str] = {}
    for name, raw in raws.items():
        kind, mode = name.split("/")
        cooperative_raw = raws.get(f"{kind}/cooperative")
        cell_config = for_cell(config, kind, mode, protocol.get("sizes", {}))
        mismatches = claims.size_mismatches(protocol, name, measured_sizes(raw))
        if config.quick:
            withheld[name] = claims.SMOKE
        elif mismatches:
            withheld[name] = claims.UNPUBLISHED
        cells[name] = assemble_cell(
            cell_config,
            raw,
            cooperative=mode == "cooperative",
            margin=margin,
            coupled_live=None
            if cooperative_raw is None
            else analysis.coupled_contrasts(cooperative_raw["reference"]),
        )
        cells[name]["world"] = kind
        cells[name]["sizes"] = measured_sizes(raw)
        cells[name]["published"] = name not in withheld
        cells[name]["size_mismatches"] = {k: list(v) for k, v in mismatches.items()}
        cells[name]["actions"] = list(for_world(config, kind).actions)
        cells[name]["grpo_actions"] = list(for_world(config, kind).learning_actions)
        cells[name]["contrast"] = [
            for_world(config, kind).better_action,
            for_world(config, kind).worse_action,
        ]
    metrics = {name: gate_metrics(cell) for name, cell in cells.items()}
    return {
        "meta": {
            "version": 3,
            "run_id": run_id,
            "quick": config.quick,
            "config": config.to_json(),
            "protocol_version": protocol.get("version"),
            "services": {
                "world_url": services.world_url,
                "uncooperative_world_url": services.uncooperative_world_url,
                "shop_world_url": services.shop_world_url,
                "shop_uncooperative_world_url": services.shop_uncooperative_world_url,
                "mcp_world_url": services.mcp_world_url,
                "resolver_url": services.resolver_url,
                "proxy_url": services.proxy_url,
            },
            "seeds": {
                "condition_worlds": [
                    config.first_world_seed,
                    config.first_world_seed + config.worlds - 1,
                ],
                "reference_worlds": [
                    config.reference_first_seed,
                    config.reference_first_seed + 2 * config.reference_pairs - 1,
                ],
                "agent_seed": "agent_seed * 1000003 + world_seed * 64 + branch index",
                "agent_seed_base": config.agent_seed,
                "grpo_seeds": list(config.grpo_seeds),
            },
            "timings_seconds": {
                name: cell["timings_seconds"].get("total") for name, cell in cells.items()
            },
            "notes": NOTES,
        },
        "cells": cells,
        "speed": speed,
        "faults": faults,
        "claims": claims.withhold(claims.evaluate_all(protocol, metrics), withheld),
    }
