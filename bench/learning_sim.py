"""The sample-efficiency claim's size, chosen by simulation in process before any proxy run.

A learning claim is only worth running where it can pass: issue 58 item 6 asks for a world,
a P(best) target and a size at which (C) against (A) has 80% power inside the time budget.
The research world's agent run in process (worldsim/simulate.py, the three conditions emulated
as the resolver serves them, about 2 ms a group) trains the same GRPO learner
(bench/policy_gradient.py) on many seeds per condition; the power of a design of ``seeds``
seeds is the share of seed subsets drawn from that pool on which the declared gates pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from bench import policy_gradient as pg
from worldsim.agent import Strategy, run_rollout
from worldsim.simulate import Condition, agent_seed_for, transport_for
from worldsim.world import World

STRATEGIES: tuple[str, ...] = tuple(str(strategy) for strategy in Strategy)
SIMULATED_FIRST_WORLD = 8_000_000  # far from every world the proxy run uses


def inprocess_sampler(condition: str) -> pg.Sampler:
    """Rewards of a group of ``strategies`` (indices, repeats allowed) on one world."""
    mode = Condition(condition)

    def sample(world_seed: int, chosen: Sequence[int]) -> list[float]:
        world = World(world_seed, sandbox_cap=len(chosen) + 2)
        rewards = []
        for index, action in enumerate(chosen):
            strategy = Strategy(STRATEGIES[action])
            transport = transport_for(world, mode, f"root/b{index}", world_seed)
            seed = agent_seed_for(world_seed, strategy, salt=index)
            rewards.append(run_rollout(transport, strategy, seed, open_session=False).reward)
        return rewards

    return sample


def simulate_runs(
    design: Mapping[str, Any], conditions: Sequence[str], pool: int
) -> dict[str, list[int]]:
    """Steps to the target under each condition for seeds 0..pool-1 (paired by seed)."""
    best = STRATEGIES.index(str(design["best"]))
    steps: dict[str, list[int]] = {}
    for condition in conditions:
        sample = inprocess_sampler(condition)
        steps[condition] = []
        for seed in range(pool):
            run = pg.train(
                sample,
                actions=len(STRATEGIES),
                group_size=int(design["group_size"]),
                steps=int(design["steps"]),
                learning_rate=float(design["learning_rate"]),
                seed=seed,
                first_world=SIMULATED_FIRST_WORLD,
            )
            steps[condition].append(
                pg.steps_to(run["probabilities"], best, float(design["threshold"]))
            )
    return steps


def gate_passes(treated: ArrayLike, baseline: ArrayLike, level: float) -> bool:
    """The declared gate: the t interval's upper bound of mean(treated - baseline) below 0."""
    differences = np.asarray(treated, dtype=float) - np.asarray(baseline, dtype=float)
    if np.all(differences == differences[0]):
        return bool(differences[0] < 0)
    return bool(pg.t_interval(differences, level)["high"] < 0)


def power(
    treated: Sequence[int],
    baseline: Sequence[int],
    seeds: int,
    *,
    level: float = 0.95,
    draws: int = 2000,
    rng_seed: int = 0,
) -> float:
    """Share of ``seeds``-seed samples (with replacement) from the simulated pool's paired
    seeds on which the gate passes."""
    rng = np.random.default_rng(rng_seed)
    a, b = np.asarray(treated), np.asarray(baseline)
    passes = 0
    for _ in range(draws):
        rows = rng.choice(a.size, size=seeds, replace=True)
        passes += gate_passes(a[rows], b[rows], level)
    return passes / draws


def plan(design: Mapping[str, Any], pool: int, seed_options: Sequence[int]) -> dict[str, Any]:
    """Each seed count's power for (C) < (A) and for the control (C) < (B)."""
    steps = simulate_runs(design, ("naive", "replay", "groundhog"), pool)
    claim = {s: power(steps["groundhog"], steps["naive"], s) for s in seed_options}
    control = {s: power(steps["groundhog"], steps["replay"], s) for s in seed_options}
    return {
        "design": dict(design),
        "pool": pool,
        "mean_steps": {name: float(np.mean(values)) for name, values in steps.items()},
        "reached": {
            name: float(np.mean(np.asarray(values) <= int(design["steps"])))
            for name, values in steps.items()
        },
        "steps": steps,
        "power_groundhog_faster_than_naive": claim,
        "power_groundhog_faster_than_replay": control,
    }


def snr_pool(
    states: Sequence[Sequence[float]], worlds: int, group_size: int
) -> list[dict[str, Any]]:
    """In-process groups at each state, laid out as the proxy run's SNR phase lays them out."""
    samplers = {c: inprocess_sampler(c) for c in ("naive", "replay", "groundhog")}
    rows = []
    for s, state in enumerate(states):
        policy = np.asarray(state, dtype=float) / np.sum(state)
        row: dict[str, Any] = {"state": list(state), "worlds": [], "actions": [], "rewards": {}}
        for w in range(worlds):
            chosen = pg.draw_actions(policy, np.random.default_rng([s, w]).random(group_size))
            row["worlds"].append(SIMULATED_FIRST_WORLD + w)
            row["actions"].append(chosen.tolist())
            for condition, sample in samplers.items():
                reward = sample(SIMULATED_FIRST_WORLD + w, chosen.tolist())
                row["rewards"].setdefault(condition, []).append(reward)
        rows.append(row)
    return rows


def snr_power(
    rows: Sequence[Mapping[str, Any]], worlds: int, best: int, *, draws: int = 200
) -> list[dict[str, Any]]:
    """Per state: the share of ``worlds``-world subsets passing LS1 and LS2 (t bound only)."""
    from bench.learning import gradients

    rng = np.random.default_rng(1)
    out = []
    for row in rows:
        g = {c: gradients(row, c) for c in ("naive", "replay", "groundhog")}
        ls1 = ls2 = 0
        for _ in range(draws):
            pick = rng.choice(len(row["worlds"]), size=worlds, replace=False)
            ratio = pg.snr(g["naive"][pick])["snr"] / pg.snr(g["groundhog"][pick])["snr"]
            ls1 += ratio < 1.0  # the point; the BCa bound is checked on the full pool below
            bias = g["replay"][pick, best] - g["groundhog"][pick, best]
            ls2 += pg.t_interval(bias)["high"] < 0
        full = pg.snr_ratio(g["naive"], g["groundhog"])
        out.append(
            {
                "snr": {c: pg.snr(v)["snr"] for c, v in g.items()},
                "ratio_naive_over_groundhog_pool": full,
                "share_ratio_below_one": ls1 / draws,
                "power_LS2": ls2 / draws,
            }
        )
    return out


def declared_plan(settings: Mapping[str, Any], pool: int) -> dict[str, Any]:
    """The declared design's simulated powers (efficiency and SNR), for bench/learning.toml."""
    world, declared = settings["world"], settings["efficiency"]
    design = {
        "best": world["best"],
        "group_size": world["group_size"],
        "steps": declared["steps"],
        "learning_rate": declared["learning_rate"],
        "threshold": declared["threshold"],
    }
    seeds = int(declared["seeds"])
    efficiency = plan(design, pool, sorted({seeds, 8, 12, 16}))
    rows = snr_pool(
        settings["snr"]["states"], 4 * int(settings["snr"]["worlds"]), world["group_size"]
    )
    best = list(world["strategies"]).index(world["best"])
    return {
        "efficiency": efficiency,
        "snr": snr_power(rows, int(settings["snr"]["worlds"]), best),
        "groups_through_proxy": {
            "snr": 3 * len(settings["snr"]["states"]) * int(settings["snr"]["worlds"]),
            "efficiency": 3 * seeds * int(declared["steps"]),
        },
    }
