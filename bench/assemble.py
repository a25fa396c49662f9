"""Assemble a run's raw measurements into benchmark.json's structure, with its claims.

The analysis computes rows; this module puts them together with the run's configuration,
seeds, timings and raw data, and checks each headline claim against the rows (printing
"not supported" where the data do not back it). Separate from collection so it can be run on
constructed measurements in tests.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from bench import analysis, stats
from bench.config import BenchConfig
from bench.harness import Services

GRPO_NOTE = (
    "GRPO curves run on cached per-world, per-action rewards collected through the proxy "
    "(one group per world); a group's repeated actions reuse the world's cached reward."
)


def _dependency_rows(raw: Mapping[str, Any]) -> dict[str, Any]:
    rows = {}
    for model, data in raw.items():
        pairs = data["pairs"]
        predicted = [p for p, _ in pairs]
        actual = [a for _, a in pairs]
        precision, recall = stats.precision_recall(predicted, actual) if pairs else (None, None)
        rows[model] = {
            "precision": precision,
            "recall": recall,
            "reads_scored": len(pairs),
            "oracle_changed": int(sum(actual)),
            "live_calls_per_group": data["live_calls_per_group"],
        }
    return rows


def _bias_text(bias: Mapping[str, float] | None) -> str:
    if not bias:
        return "no data"
    z = bias["value"] / bias["stderr"] if bias["stderr"] else math.inf
    return f"bias {bias['value']:+.3f} ± {bias['stderr']:.3f} (z = {z:+.1f})"


def _claims(results: Mapping[str, Any], config: BenchConfig) -> list[dict[str, Any]]:
    conditions = results["conditions"]
    naive, replay, groundhog = (conditions.get(name, {}) for name in config.conditions)
    reference = results["reference"]
    claims = []

    def claim(text: str, supported: bool, evidence: str) -> None:
        claims.append({"claim": text, "supported": bool(supported), "evidence": evidence})

    levene = groundhog.get("levene_vs_naive") or {}
    reduction = groundhog.get("reduction_vs_naive")
    claim(
        "(C) has lower advantage-contrast variance than (A) (Levene p < 0.01)",
        bool(levene) and levene["p"] < 0.01 and (reduction or 0) > 1,
        f"reduction {reduction:.1f}x, Levene p = {levene.get('p', math.nan):.2g}"
        if reduction
        else "no data",
    )
    ceiling = reference.get("ceiling")
    below = groundhog.get("levene_vs_estimand")
    if ceiling and reduction and below:
        claim(
            "(C) removes no variation of the estimand itself (reduction within the ceiling)",
            reduction <= ceiling or below["p"] >= 0.01,
            f"reduction {reduction:.1f}x vs ceiling {ceiling:.1f}x; Levene against the "
            f"coupled live contrasts p = {below['p']:.2g}",
        )
    for name, row, expected in (("(A)", naive, "unbiased"), ("(C)", groundhog, "unbiased")):
        claim(
            f"{name} is unbiased against the live reference",
            row.get("verdict") == expected,
            _bias_text(row.get("bias")),
        )
    bias_b = replay.get("bias")
    claim(
        "(B) is biased negative against the live reference",
        bool(bias_b) and replay.get("verdict") == "biased" and bias_b["value"] < 0,
        _bias_text(bias_b),
    )
    equivalence = groundhog.get("exact_equivalence")
    claim(
        "(C) reproduces a live rollout bit for bit",
        bool(equivalence) and equivalence["identical"] == equivalence["total"],
        f"{equivalence['identical']}/{equivalence['total']} identical, max |diff| "
        f"{equivalence['max_abs_diff']:.3g}"
        if equivalence
        else "no data",
    )
    claim(
        "(C) never serves a stale read (lie rate 0%)",
        groundhog.get("lie_rate") == 0.0,
        f"lie rate {groundhog.get('lie_rate')}",
    )
    repro = results.get("reproducibility")
    claim(
        "Recording the same world twice gives identical digests",
        bool(repro) and repro["identical"] == repro["total"] and repro["total"] > 0,
        f"{repro['identical']}/{repro['total']} identical" if repro else "no data",
    )
    stable_c = groundhog.get("stable_rollouts")
    claim(
        "(C) reaches a stable correct answer within the run's horizon",
        stable_c is not None,
        f"{stable_c} rollouts" if stable_c else f"not within {config.rollouts_horizon} rollouts",
    )
    return claims


def assemble(
    config: BenchConfig, raw: Mapping[str, Any], *, run_id: str, services: Services
) -> dict[str, Any]:
    """The full results dictionary written to benchmark.json."""
    reference = analysis.analyze_reference(raw["reference"], config)
    truth = reference["contrast"]
    truth_sign = int(np.sign(truth["value"])) if truth else 1
    rows: dict[str, dict[str, Any]] = {}
    contrasts: dict[str, np.ndarray] = {}
    rewards: dict[str, np.ndarray] = {}
    for name, data in raw["conditions"].items():
        rows[name], contrasts[name] = analysis.analyze_condition(data, config, truth_sign)
        rewards[name] = data.matrix("reward")
    analysis.add_comparisons(rows, contrasts, reference)
    naive_variance = rows.get("naive", {}).get("contrast_variance")
    estimand = reference["estimand_variance"]["value"]
    reference["ceiling"] = (
        stats.endogenous_ceiling(naive_variance, estimand) if naive_variance else None
    )
    coupled = reference.pop("coupled_contrasts")
    for name, values in contrasts.items():
        if name != "naive" and len(coupled) > 1:
            statistic, pvalue = stats.levene(values, coupled)
            rows[name]["levene_vs_estimand"] = {"statistic": statistic, "p": pvalue}
    best = config.actions.index(reference["best_action"])
    summaries, curves = analysis.analyze_grpo(rewards, config, best)
    for name, summary in summaries.items():
        rows[name]["grpo"] = summary
    for name, checks in raw.get("equivalence", {}).items():
        rows[name]["exact_equivalence"] = analysis.analyze_equivalence(checks)
    if "naive" in rows:
        # Every naive read goes live with the branch's own noise: it is the live world.
        rows["naive"]["exact_equivalence"] = {"is_live_world": True}
    repro_pairs = raw.get("reproducibility") or []
    results: dict[str, Any] = {
        "meta": {
            "version": 1,
            "run_id": run_id,
            "quick": config.quick,
            "config": config.to_json(),
            "services": {
                "world_url": services.world_url,
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
            "timings_seconds": raw.get("timings", {}),
            "notes": [
                GRPO_NOTE,
                "Rollouts to significance count the two rollouts (better and worse action) of "
                "each world's contrast; significance is a two-sided one-sample t-test at "
                f"alpha = {config.alpha}.",
                "The live reference runs worldsim's agent straight against the world (no proxy);"
                " its contrast uses a control variate on the observed attention draw "
                + (
                    "with the agent's published coefficient."
                    if reference["attention_coefficient"] is not None
                    else "with the coefficient estimated by regression (the agent publishes none)."
                ),
                "The endogenous ceiling is (A)'s contrast variance over the variance of the "
                "coupled live contrast (both actions in the same live world): what remains when "
                "every exogenous draw is shared.",
                "Every statistic is a deterministic function of the configuration: world, agent "
                "and GRPO seeds are fixed and branch names carry no run id. Tape digests also "
                "depend on the world's address (host and port are part of request keys).",
                "(B) and (C) groups start with a prefix probe: a read-only pass of the deepest "
                "strategy's reads on a sibling branch, recording the base world once.",
            ],
        },
        "reference": reference,
        "conditions": rows,
        "group_size_curve": raw.get("curve"),
        "dependency_models": _dependency_rows(raw.get("dependency_models") or {}),
        "reproducibility": {
            "identical": sum(1 for first, second in repro_pairs if first == second),
            "total": len(repro_pairs),
            "digests": [list(pair) for pair in repro_pairs],
        },
        "speed": raw.get("speed"),
        "faults": raw.get("faults"),
        "raw": {
            "contrasts": {name: values.tolist() for name, values in contrasts.items()},
            "coupled_live_contrasts": coupled,
            "rewards": {name: table.tolist() for name, table in rewards.items()},
            "grpo_best_probability": curves,
        },
    }
    results["claims"] = _claims(results, config)
    return results
