"""The sizes declared before a world had a run to size them on: simulated in process.

bench/power.py sizes a cell from a committed run's variances. Two sizes could not come from
there: the MCP world's (protocol version 3), declared before its first run, from its agent
against the desk in process (worldsim/mcp_check.py); and SG1's GRPO seeds (version 6), because
the version-1 tables have three strategies and named the ranking worlds' argmax best, so it is
sized on the shop agent in process (worldsim/shop_check.py). Kept apart from the arithmetic so
that power.py stays the pure functions and the run-based plan; `python -m bench.power
--simulated-mcp` and `--simulated-shop` print these.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from bench.power import (
    MAX_GRPO_SEEDS,
    MAX_WORLDS,
    ROW_GRPO_SEEDS,
    ROW_GRPO_STEPS,
    claim_power,
    declared_fields,
    needs,
    noninferiority_power,
    pairs_per_world,
    simulated_grpo_difference_sd,
    smallest,
)

SHOP_CELL = "shop/uncooperative"
MCP_CELL = "mcp/uncooperative"


def with_simulated_shop_grpo(plan_: dict[str, Any], constants: Mapping[str, Any]) -> dict[str, Any]:
    """The shop's plan with SG1 sized on the in-process tables (version 6), not version 1's."""
    shop = simulated_shop_grpo_plan(constants)
    three = shop["policies"]["three strategies"]
    infeasible = [claim for claim in plan_["infeasible"] if claim != "grpo"]
    if three["seeds_needed"] is None:
        infeasible.append("grpo")
    return {
        **plan_,
        "grpo_seeds": shop["grpo_seeds"],
        "grpo_steps": shop["grpo_steps"],
        "infeasible": infeasible,
        "power": {**plan_["power"], "grpo": three["power"]},
    }


SIMULATED_DAYS = 600  # days of the MCP world's in-process simulation (seeded, about 3 s)
SIMULATED_FIRST_DAY = 7_000_000  # far from every day a benchmark phase runs on


def simulated_mcp_inputs(days: int = SIMULATED_DAYS) -> dict[str, float]:
    """The MCP cell's variances predicted in process (worldsim/mcp_check.py), before any run.

    The MCP world had no run to read variances from when its sizes were declared; its agent
    against the desk in process gives them: (C)'s contrast with the group's reads shared, (A)'s
    with each rollout's own, and the reference's across the two worlds of a pair.
    """
    from worldsim import mcp_check

    span = range(SIMULATED_FIRST_DAY, SIMULATED_FIRST_DAY + days)
    shared = mcp_check.group_contrasts(span, shared=True)
    independent = mcp_check.group_contrasts(span, shared=False)
    rewards = mcp_check.in_process_rewards(range(span.stop, span.stop + 2 * days))
    pairs = [
        better - worse
        for better, worse in zip(rewards["upgrade"][::2], rewards["compare"][1::2], strict=True)
    ]
    return {
        "pair_variance": float(np.var(pairs, ddof=1)),
        "groundhog_variance": float(np.var(shared, ddof=1)),
        "naive_calibrated_variance": float(np.var(independent, ddof=1)),
    }


def simulated_mcp_plan(protocol: Mapping[str, Any], days: int = SIMULATED_DAYS) -> dict[str, Any]:
    """The MCP cell's sizes and powers, for the claims `protocol` declares (its equivalence and
    calibration), from the simulated variances."""
    constants = protocol["constants"]
    inputs = simulated_mcp_inputs(days)
    ratio = pairs_per_world(MCP_CELL)
    required = needs(
        inputs, constants, pairs_per_world=ratio, claims=declared_fields(protocol, MCP_CELL)
    )
    worlds = max((n for n in required.values() if n is not None), default=MAX_WORLDS)
    return {
        "worlds": worlds,
        "reference_pairs": ratio * worlds,
        "needs": required,
        "inputs": {name: round(value, 5) for name, value in inputs.items()},
        "power": {
            name: round(claim_power(name, worlds, inputs, constants, pairs_per_world=ratio), 3)
            for name, n in required.items()
            if n is not None
        },
    }


# Protocol version 6: the shop's four-branch groups and SG1's size. The version-1 tables have
# three strategies and named `compare` best (the ranking worlds' argmax), so SG1 is sized on
# the shop agent in process (worldsim/shop_check.py), `deal` best, at this floor: a claim rests
# on at least as many seeds as the research row.
SHOP_GRPO_SEEDS = ROW_GRPO_SEEDS
SHOP_GRPO_STEPS = ROW_GRPO_STEPS


def simulated_shop_grpo_plan(
    constants: Mapping[str, Any], days: int = SIMULATED_DAYS, *, seeds: int = 40
) -> dict[str, Any]:
    """SG1's seeds, steps and power from the shop's in-process reward tables (version 6).

    GRPO samples groups of the shop's size (one per strategy) from a policy over the
    strategies SG1 was declared on, both read from the shop's BenchConfig as the run reads
    them; the policy over every strategy is shown beside it (infeasible: `coupon` is close to
    `deal`).
    """
    from bench.config import for_world, quick_config
    from worldsim import shop_agent, shop_check

    shop_config = for_world(quick_config(), "shop")  # the actions the run's shop cells take

    span = range(SIMULATED_FIRST_DAY, SIMULATED_FIRST_DAY + days)
    margin = float(constants["grpo_margin"])
    every = shop_check.reward_tables(span)
    strategies = list(shop_config.actions)
    declared = list(shop_config.learning_actions)
    if strategies != [str(strategy) for strategy in shop_agent.Strategy]:
        raise ValueError(
            "the shop config lists its strategies out of the tables' (shop_agent.Strategy) order"
        )
    columns = [strategies.index(name) for name in declared]
    learning = {name: [[row[c] for c in columns] for row in rows] for name, rows in every.items()}
    group_size = shop_config.group_size
    better = shop_config.better_action
    plans: dict[str, Any] = {}
    policies = (("three strategies", learning, declared), ("four strategies", every, strategies))
    for label, tables, names in policies:
        sd = simulated_grpo_difference_sd(
            tables, names.index(better), steps=SHOP_GRPO_STEPS, group_size=group_size, seeds=seeds
        )
        needed = smallest(
            lambda n, sd=sd: noninferiority_power(sd / math.sqrt(n), margin),
            limit=MAX_GRPO_SEEDS,
        )
        plans[label] = {
            "difference_sd": round(sd, 4),
            "seeds_needed": needed,
            "power": round(noninferiority_power(sd / math.sqrt(SHOP_GRPO_SEEDS), margin), 3),
        }
    return {
        "grpo_seeds": SHOP_GRPO_SEEDS,
        "grpo_steps": SHOP_GRPO_STEPS,
        "group_size": group_size,
        "mean_reward": {
            name: [round(float(v), 3) for v in np.mean(np.asarray(rows), axis=0)]
            for name, rows in every.items()
        },
        "strategies": strategies,
        "policies": plans,
    }
