"""Power of the protocol's equivalence and non-inferiority gates, and the sizes that reach it.

Version 1 of the protocol fixed no sizes; they were raised after two runs in which claims
failed (optional stopping), and its bias test passed a truly unbiased (C) a quarter of the
time. Here the sizes come from arithmetic on the version-1 run's variances (kept as
docs/benchmark/sizes-from-v1-run.json: a later run is the committed one now), printed beside
them in bench/protocol.toml (`python -m bench.power`), so a claim that cannot pass at its size
is visible before the run. Only the claims the protocol declares are sized (`declared_fields`):
a claim removed as infeasible sizes nothing. The MCP world, declared before its first run,
takes its variances from its in-process simulation, and SG1 its seeds from the shop agent in
process (bench/power_simulated.py; `python -m bench.power --simulated-mcp`, `--simulated-shop`).
The power functions are pure and checked against a seeded simulation of the gates themselves
(tests/bench/test_power.py).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats as scipy_stats

TARGET = 0.80  # a claim's power at its margin under zero true bias
# Protocol version 8: a control (a condition's calibration against the live reference) is
# what makes a run readable at all, so it is sized for 95%: at 80% one control in five fails at
# zero bias, and with five of them a run whose every control passes is a coin flip.
CONTROL_TARGET = 0.95
CONTROL_CLAIMS = frozenset({"calibration"})
# Reference pairs per group, per world. A pair is two live rollouts straight to the world; a
# group is a tape of four or five rollouts in each of three conditions through the proxy.
# Version 8 sets the shop's and the MCP world's ratios near the cost-optimal allocation
# (pairs / worlds = sqrt(pair variance / condition variance x world cost / pair cost)), with
# the costs read from version 7's committed run (its phase timings, not its verdicts): a shop
# world cost about 21 pairs, an MCP world about 8. The research world keeps 2: its controls
# have power 1.0 at the sizes its claims need.
PAIRS_PER_WORLD = {"research": 2, "shop": 5, "mcp": 3}


# The plan's field each powered claim's metric is sized as (bench/protocol.toml `metric`).
# A claim the protocol does not declare sizes nothing: the shop's share claims, removed as
# infeasible in version 2, would need about 900 worlds at version 8's five pairs per group.
SIZED_METRICS = {
    "groundhog.equivalence": "equivalence",
    "naive.calibration": "calibration",
    "groundhog.estimand_share": "estimand_share",
}


def declared_fields(protocol: Mapping[str, Any], cell_name: str) -> tuple[str, ...]:
    """The sizing fields of the claims the protocol declares for the cell, in `needs` order."""
    fields = {
        SIZED_METRICS[claim["metric"]]
        for claim in protocol["claim"]
        if claim["cell"] == cell_name and claim["metric"] in SIZED_METRICS
    }
    return tuple(field for field in SIZED_METRICS.values() if field in fields)


def pairs_per_world(cell_name: str) -> int:
    """Reference pairs per group of the cell's world (a cell is "world/mode")."""
    return PAIRS_PER_WORLD[cell_name.split("/")[0]]


def target_of(claim: str) -> float:
    """The power a claim (a field of a plan's needs) is sized for."""
    return CONTROL_TARGET if claim in CONTROL_CLAIMS else TARGET


# The run the declared sizes were computed from (version 1, 96 worlds), not whichever run is
# committed now: recomputing sizes from a later run would be choosing them after seeing it.
SIZING_RUN = Path(__file__).resolve().parents[1] / "docs" / "benchmark" / "sizes-from-v1-run.json"
MAX_WORLDS = 1000  # per cell: beyond this a claim is infeasible on the 2-core machine
# Steps of GRPO: on the committed reward tables the cached-table learner's (C) held P(best)
# >= 0.9 from step 28-142 in 20 of 20 seeds (research, shop); (A) often never within 400.
GRPO_STEPS = 200
MAX_GRPO_SEEDS = 40  # each seed is GRPO_STEPS fresh groups through the proxy per condition
# A GRPO claim infeasible at MAX_GRPO_SEEDS is removed and its cell's GRPO is run as a row with
# intervals, at a size the run's 45-minute budget affords (protocol version 4: 40 x 200 was
# 16,000 groups, about 40 minutes alone; version 6: 150 steps became 100).
ROW_GRPO_SEEDS = 8
ROW_GRPO_STEPS = 100


def tost_power(stderr: float, margin: float, *, alpha: float = 0.05, bias: float = 0.0) -> float:
    """P(the 1 - 2 alpha interval lies inside ±margin) for a normal estimate of true ``bias``."""
    z = scipy_stats.norm.ppf(1.0 - alpha)
    upper = scipy_stats.norm.cdf((margin - bias) / stderr - z)
    lower = scipy_stats.norm.cdf((-margin - bias) / stderr + z)
    return float(max(upper - lower, 0.0))


def noninferiority_power(
    stderr: float, margin: float, *, alpha: float = 0.025, effect: float = 0.0
) -> float:
    """P(the one-sided lower bound at ``alpha`` clears ``-margin``) for true ``effect``."""
    z = scipy_stats.norm.ppf(1.0 - alpha)
    return float(scipy_stats.norm.cdf((effect + margin) / stderr - z))


def log_variance_ratio_stderr(
    n_condition: int, n_reference: int, *, kurtosis: float = 0.0, kurtosis_reference: float = 0.0
) -> float:
    """Standard error of log(s1^2 / s2^2) for independent samples (excess kurtosis allowed)."""
    return math.sqrt(
        (2.0 + kurtosis) / (n_condition - 1) + (2.0 + kurtosis_reference) / (n_reference - 1)
    )


def share_power(
    n_condition: int,
    n_reference: int,
    margin: float,
    *,
    alpha: float = 0.025,
    true_share: float = 1.0,
    kurtosis: float = 0.0,
    kurtosis_reference: float = 0.0,
) -> float:
    """Power of `var(condition) / var(reference) > margin` at the interval's lower bound."""
    stderr = log_variance_ratio_stderr(
        n_condition, n_reference, kurtosis=kurtosis, kurtosis_reference=kurtosis_reference
    )
    return noninferiority_power(
        stderr, math.log(true_share) - math.log(margin), alpha=alpha, effect=0.0
    )


def bias_stderr(condition_variance: float, worlds: int, pair_variance: float, pairs: int) -> float:
    """Standard error of a condition's mean contrast minus the reference's (independent)."""
    return math.sqrt(condition_variance / worlds + pair_variance / pairs)


def smallest(power_at: Any, target: float = TARGET, limit: int = MAX_WORLDS) -> int | None:
    """The smallest n in [3, limit] with power_at(n) >= target (power rises with n), or None."""
    if power_at(limit) < target:
        return None
    low, high = 3, limit
    while low < high:
        middle = (low + high) // 2
        if power_at(middle) >= target:
            high = middle
        else:
            low = middle + 1
    return low


def _excess_kurtosis(values: Any) -> float:
    array = np.asarray(values, dtype=float)
    return float(max(scipy_stats.kurtosis(array, fisher=True, bias=False), 0.0))


def simulated_grpo_difference_sd(
    rewards: Mapping[str, Any],
    best: int,
    *,
    steps: int = GRPO_STEPS,
    group_size: int | None = None,
    seeds: int = 20,
) -> float:
    """SD over paired seeds of (C) - (A) final P(best), simulated on the run's reward tables.

    The committed run trained 4 steps, far from convergence, so its own finals say nothing
    about GRPO_STEPS; the cached-table learner (bench/grpo.py) on the same rewards does.
    """
    from bench import grpo

    config = grpo.GrpoConfig(
        steps=steps,
        learning_rate=1.0,
        seeds=tuple(range(seeds)),
        group_size=group_size or np.asarray(rewards["naive"]).shape[1],
    )
    finals = {
        name: np.array(
            [run.probabilities[-1][best] for run in grpo.train_seeds(rewards[name], config)]
        )
        for name in ("naive", "groundhog")
    }
    return float(np.std(finals["groundhog"] - finals["naive"], ddof=1))


def cell_inputs(results: Mapping[str, Any], cell_name: str) -> dict[str, float]:
    """The variances a cell's power rests on, from a committed run's results."""
    cell = results["cells"][cell_name]
    reference = cell["reference"]
    raw = cell["raw"]["contrasts"]
    world = cell_name.split("/")[0]
    coupled = results["cells"][f"{world}/cooperative"]["raw"]["coupled_live_contrasts"]
    gain = reference.get("control_variate_gain") or 1.0
    inputs = {
        "pair_variance": reference["contrast"]["stderr"] ** 2 * reference["pairs"],
        "groundhog_variance": float(np.var(raw["groundhog"], ddof=1)),
        # (A) is sharpened by the reference's control variate; the committed run kept no
        # per-rollout attention in its raw data, so the reference's own gain is assumed.
        "naive_calibrated_variance": float(np.var(raw["naive"], ddof=1)) / gain,
        "groundhog_kurtosis": _excess_kurtosis(raw["groundhog"]),
        "coupled_kurtosis": _excess_kurtosis(coupled),
    }
    rewards = cell["raw"].get("rewards") or {}
    if cell.get("grpo") and rewards.get("naive") and rewards.get("groundhog"):
        inputs["grpo_difference_sd"] = simulated_grpo_difference_sd(
            rewards, cell["actions"].index(reference["best_action"])
        )
    return inputs


def needs(
    inputs: Mapping[str, float],
    constants: Mapping[str, Any],
    *,
    pairs_per_world: int,
    claims: tuple[str, ...] = tuple(SIZED_METRICS.values()),
) -> dict[str, int | None]:
    """Worlds each claim needs for its target power (None: not within MAX_WORLDS)."""
    result: dict[str, int | None] = {
        name: smallest(
            lambda n, name=name: claim_power(
                name, n, inputs, constants, pairs_per_world=pairs_per_world
            ),
            target=target_of(name),
        )
        for name in claims
    }
    return result


def claim_power(
    name: str,
    worlds: int,
    inputs: Mapping[str, float],
    constants: Mapping[str, Any],
    *,
    pairs_per_world: int,
) -> float:
    """One claim's power at ``worlds`` groups and ``pairs_per_world`` reference pairs each."""
    pairs = pairs_per_world * worlds
    if name == "estimand_share":
        return share_power(
            worlds,
            pairs,
            float(constants["share_margin"]),
            kurtosis=inputs["groundhog_kurtosis"],
            kurtosis_reference=inputs["coupled_kurtosis"],
        )
    variance = inputs[
        "groundhog_variance" if name == "equivalence" else "naive_calibrated_variance"
    ]
    stderr = bias_stderr(variance, worlds, inputs["pair_variance"], pairs)
    return tost_power(stderr, float(constants["bias_margin"]))


def plan(results: Mapping[str, Any], protocol: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Every cell's sizes and powers from a committed run, for the claims `protocol` declares.

    Both modes of a world take the larger size (they share the protocol's reference design).
    A claim needing more than MAX_WORLDS is infeasible: the protocol must drop or redesign it.
    """
    from bench import ceiling_power
    from bench.power_simulated import SHOP_CELL, with_simulated_shop_grpo

    constants = protocol["constants"]
    inputs = {name: cell_inputs(results, name) for name in results["cells"]}
    required = {
        name: needs(
            values,
            constants,
            pairs_per_world=pairs_per_world(name),
            claims=declared_fields(protocol, name),
        )
        for name, values in inputs.items()
    }
    plans: dict[str, dict[str, Any]] = {}
    for name, values in inputs.items():
        world = name.split("/")[0]
        feasible = [
            n
            for other, claims_needs in required.items()
            if other.split("/")[0] == world
            for n in claims_needs.values()
            if n is not None
        ]
        worlds = max(feasible, default=MAX_WORLDS)
        ratio = pairs_per_world(name)
        power = {
            claim: round(claim_power(claim, worlds, values, constants, pairs_per_world=ratio), 3)
            for claim, n in required[name].items()
            if n is not None
        }
        plan_: dict[str, Any] = {
            "worlds": worlds,
            "reference_pairs": ratio * worlds,
            "needs": required[name],
            "infeasible": [claim for claim, n in required[name].items() if n is None],
        }
        if "grpo_difference_sd" in values:
            sd = values["grpo_difference_sd"]
            margin = float(constants["grpo_margin"])
            seeds = smallest(
                lambda n, sd=sd, margin=margin: noninferiority_power(sd / math.sqrt(n), margin),
                limit=MAX_GRPO_SEEDS,
            )
            plan_["grpo_steps"] = GRPO_STEPS
            if seeds is None:
                plan_["infeasible"].append("grpo")
                plan_["grpo_seeds"], plan_["grpo_steps"] = ROW_GRPO_SEEDS, ROW_GRPO_STEPS
            else:
                plan_["grpo_seeds"] = seeds
                power["grpo"] = round(noninferiority_power(sd / math.sqrt(seeds), margin), 3)
        plan_["power"] = power
        plans[name] = plan_
    if "grpo_seeds" in plans.get(SHOP_CELL, {}):
        plans[SHOP_CELL] = with_simulated_shop_grpo(plans[SHOP_CELL], constants)
    # Version 9: the ceiling gate (U6, C6) is sized by simulation on version 8's contrasts.
    ceiling_power.apply(plans, ceiling_power.committed()["chosen"])
    return plans


def main(argv: list[str] | None = None) -> int:
    from bench import claims
    from bench.power_simulated import (
        MCP_CELL,
        SHOP_CELL,
        simulated_mcp_plan,
        simulated_shop_grpo_plan,
    )

    arguments = sys.argv[1:] if argv is None else argv
    protocol = claims.load()
    if "--simulated-mcp" in arguments:
        plans = {MCP_CELL: simulated_mcp_plan(protocol)}
    elif "--simulated-shop" in arguments:
        plans = {SHOP_CELL: simulated_shop_grpo_plan(protocol["constants"])}
    else:
        plans = plan(json.loads(SIZING_RUN.read_text()), protocol)
    sys.stdout.write(json.dumps(plans, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
