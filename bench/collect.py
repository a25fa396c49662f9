"""Collect every measurement of a run: conditions, live reference, equivalence, curve, models.

Each function here makes live calls (through the proxy, or straight to the world for the
reference) and returns raw measurements; none computes a statistic. Groups of different
worlds run concurrently on a small thread pool, because most of a rollout's time is spent
waiting on three processes, while the branches of one group run in order.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench import agent_adapter
from bench.config import BenchConfig
from bench.groups import GroupResult, RunContext, agent_seed, run_group, run_live
from bench.mcp_groups import MCP_RULES
from bench.measurements import (
    ConditionData,
    EquivalenceCheck,
    ReferenceData,
    ReportTotals,
    Rollout,
)

Advance = Callable[[int], None]

RULES: list[dict[str, Any]] = [
    {"method": "POST", "path": "/sessions", "reads": [], "writes": ["sessions"]},
    {"method": "GET", "path": "/search", "reads": ["index:{query.q}"], "writes": []},
    {"method": "GET", "path": "/docs/{id}", "reads": ["doc:{id}"], "writes": []},
    {"method": "GET", "path": "/review", "reads": ["review:{query.doc}"], "writes": []},
    {"method": "GET", "path": "/context", "reads": [], "writes": []},
    {"method": "GET", "path": "/trends", "reads": [], "writes": []},
    {
        "method": "POST",
        "path": "/docs",
        "reads": [],
        "writes": ["doc:{body.id}", "review:{body.id}", "index:{body.topic}"],
    },
]
"""Route rules for the research world, written from its API as a user would (not its oracle)."""

SHOP_RULES: list[dict[str, Any]] = [
    {"method": "POST", "path": "/sessions", "reads": [], "writes": ["sessions"]},
    {"method": "GET", "path": "/catalog", "reads": [], "writes": []},
    {"method": "GET", "path": "/items/{id}", "reads": [], "writes": []},
    {"method": "GET", "path": "/cart", "reads": ["cart"], "writes": []},
    {"method": "POST", "path": "/cart", "reads": [], "writes": ["cart"]},
    {"method": "POST", "path": "/checkout", "reads": [], "writes": ["cart", "orders"]},
]
"""Route rules for the shop, from its public routes: quotes read no state; the cart is state."""


def rules_for(context: RunContext) -> list[dict[str, Any]]:
    if context.world_kind == "mcp":
        return MCP_RULES
    return SHOP_RULES if context.world_kind == "shop" else RULES


def _pool_map[T, R](function: Callable[[T], R], items: Iterable[T], workers: int) -> list[R]:
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(function, items))


def groundhog_model(context: RunContext, config: BenchConfig) -> str:
    """(C)'s dependency model: `hints` only where the world announces them (the ceiling)."""
    if context.cooperative:
        return config.cooperative_model
    return config.uncooperative_model


def world_seeds(config: BenchConfig, count: int, offset: int = 0) -> list[int]:
    return [config.first_world_seed + offset + index for index in range(count)]


def collect_condition(
    context: RunContext, config: BenchConfig, mode: str, advance: Advance
) -> tuple[ConditionData, list[GroupResult]]:
    """One group per world, one branch per action, for one condition."""
    data = ConditionData(name=mode, actions=config.actions)
    model = "closure" if mode == "naive" else groundhog_model(context, config)

    def one(world_seed: int) -> GroupResult:
        group = run_group(
            context,
            tape=f"b{context.run_id}-{mode}-{world_seed}",
            branch_label=f"{mode}-{world_seed}",
            world_seed=world_seed,
            mode=mode,
            dependency_model=model,
            strategies=config.actions,
            seed_base=config.agent_seed,
            probe=mode != "naive",
            rules=rules_for(context) if model == "rules" else (),
        )
        advance(1)
        return group

    before = context.world.total_calls()
    started = time.perf_counter()
    groups = _pool_map(one, world_seeds(config, config.worlds), config.workers)
    data.wall_seconds = time.perf_counter() - started
    data.world_calls = context.world.total_calls() - before
    data.groups = len(groups)
    for group in groups:
        data.totals.add(group.report.get("totals", {}))
        data.oracle.add_group([branch.grades for branch in group.branches])
        for branch in group.branches:
            data.rollouts.append(
                Rollout(
                    world_seed=group.world_seed,
                    branch=branch.branch,
                    action=branch.strategy,
                    reward=branch.outcome.reward,
                    attention=branch.outcome.attention,
                    saw_own_write=branch.outcome.saw_own_write,
                )
            )
    return data, groups


def collect_reference(context: RunContext, config: BenchConfig, advance: Advance) -> ReferenceData:
    """Live rollouts straight against the world (no proxy), in 2 x pairs worlds.

    Worlds come in pairs; the independent contrast takes the better action from the first world
    of a pair and the worse action from the second (the live world's own noise), while each
    world's own better-minus-worse is the coupled contrast no coupling can remove. The first
    ``reference_ranking_worlds`` worlds also run every other action, to rank all of them.
    """
    seeds = [config.reference_first_seed + index for index in range(2 * config.reference_pairs)]
    ranking = set(seeds[: config.reference_ranking_worlds])

    def one(world_seed: int) -> dict[str, agent_adapter.AgentOutcome]:
        outcomes = {}
        for index, strategy in enumerate(config.actions):
            wanted = (config.better_action, config.worse_action)
            if world_seed not in ranking and strategy not in wanted:
                continue
            outcomes[strategy] = run_live(
                context,
                world_seed=world_seed,
                client_key=f"live-{world_seed}-{index}",
                strategy=strategy,
                seed=agent_seed(config.agent_seed, world_seed, index),
            )
        advance(1)
        return outcomes

    per_world = _pool_map(one, seeds, config.reference_workers)
    reference = ReferenceData(attention_coefficient=agent_adapter.attention_coefficient())

    def rollout(seed: int, action: str, result: agent_adapter.AgentOutcome) -> Rollout:
        return Rollout(seed, "live", action, result.reward, result.attention, result.saw_own_write)

    better, worse = config.better_action, config.worse_action
    for seed, outcomes in zip(seeds, per_world, strict=True):
        if seed in ranking:
            for action, result in outcomes.items():
                reference.per_action.setdefault(action, []).append(result.reward)
    for first in range(0, len(seeds), 2):
        a_seed, b_seed = seeds[first], seeds[first + 1]
        reference.better.append(rollout(a_seed, better, per_world[first][better]))
        reference.worse_independent.append(rollout(b_seed, worse, per_world[first + 1][worse]))
        reference.worse_coupled.append(rollout(a_seed, worse, per_world[first][worse]))
    return reference


def check_equivalence(
    context: RunContext,
    config: BenchConfig,
    groups: Sequence[GroupResult],
    advance: Advance,
) -> list[EquivalenceCheck]:
    """Re-run each branch of the first groups live, same world and agent seed; compare."""

    def one(group: GroupResult) -> list[EquivalenceCheck]:
        checks = []
        for branch in group.branches:
            live = run_live(
                context,
                world_seed=group.world_seed,
                client_key=f"eq-{branch.branch.replace('/', '-')}",
                strategy=branch.strategy,
                seed=branch.agent_seed,
            )
            checks.append(
                EquivalenceCheck(
                    world_seed=group.world_seed,
                    action=branch.strategy,
                    condition_reward=branch.outcome.reward,
                    live_reward=live.reward,
                    identical_observation=live.observation_digest
                    == branch.outcome.observation_digest,
                )
            )
        advance(1)
        return checks

    chosen = list(groups[: config.equivalence_worlds])
    return [check for checks in _pool_map(one, chosen, config.workers) for check in checks]


def collect_group_size_curve(
    context: RunContext, config: BenchConfig, advance: Advance
) -> dict[str, Any]:
    """Live calls per group, counted at the world, for each condition, group size and world.

    The groups of this phase run one after another, so the world's call counter read around
    each group is that group's own count (``per_world``); the mean over worlds and its interval
    are the analysis's (bench/assemble.py)."""
    per_world: dict[str, list[list[int]]] = {mode: [] for mode in config.conditions}
    offset = 10 * config.worlds
    for mode in config.conditions:
        model = "closure" if mode == "naive" else groundhog_model(context, config)
        for size in config.group_sizes:
            strategies = [config.actions[index % len(config.actions)] for index in range(size)]
            counts: list[int] = []
            for world_seed in world_seeds(config, config.curve_worlds, offset):
                before = context.world.total_calls()
                run_group(
                    context,
                    tape=f"b{context.run_id}-curve-{mode}-{size}-{world_seed}",
                    branch_label=f"curve-{mode}-{size}-{world_seed}",
                    world_seed=world_seed,
                    mode=mode,
                    dependency_model=model,
                    strategies=strategies,
                    seed_base=config.agent_seed,
                    probe=mode != "naive",
                    rules=rules_for(context) if model == "rules" else (),
                )
                counts.append(context.world.total_calls() - before)
                advance(1)
            per_world[mode].append(counts)
    return {"sizes": list(config.group_sizes), "per_world": per_world}


def collect_dependency_models(
    context: RunContext, config: BenchConfig, advance: Advance
) -> dict[str, Any]:
    """Each model's fingerprints on reads after a write, against the world's oracle."""
    results: dict[str, Any] = {}
    offset = 20 * config.worlds
    models = [m for m in config.dependency_models if context.cooperative or m != "hints"]
    for model in models:
        pairs: list[tuple[bool, bool]] = []
        stale = reads = 0
        before = context.world.total_calls()
        for world_seed in world_seeds(config, config.dependency_worlds, offset):
            group = run_group(
                context,
                tape=f"b{context.run_id}-dep-{model}-{world_seed}",
                branch_label=f"dep-{model}-{world_seed}",
                world_seed=world_seed,
                mode="groundhog",
                dependency_model=model,
                strategies=config.actions,
                seed_base=config.agent_seed,
                probe=True,
                reread=True,
                rules=rules_for(context) if model == "rules" else (),
            )
            pairs.extend(group.judged)
            reads += sum(branch.grades.reads for branch in group.branches)
            stale += sum(branch.grades.stale for branch in group.branches)
            advance(1)
        spent = context.world.total_calls() - before
        results[model] = {
            "pairs": pairs,
            "live_calls_per_group": spent / config.dependency_worlds,
            "oracle_reads": reads,
            "oracle_stale": stale,
        }
    return results


def collect_reproducibility(
    context: RunContext, config: BenchConfig, advance: Advance
) -> list[tuple[str, str]]:
    """Record the same world twice (same seed, same workflow); return both digests."""
    digests = []
    for run in range(config.reproducibility_runs):
        world_seed = config.first_world_seed + 30 * config.worlds + run
        pair = []
        for attempt in ("x", "y"):
            tape = f"b{context.run_id}-repro-{world_seed}-{attempt}"
            run_group(
                context,
                tape=tape,
                world_seed=world_seed,
                mode="groundhog",
                dependency_model=groundhog_model(context, config),
                strategies=config.actions,
                seed_base=config.agent_seed,
                probe=True,
                branch_label=f"repro-{world_seed}",
                rules=rules_for(context) if groundhog_model(context, config) == "rules" else (),
                concurrent=False,
            )
            pair.append(context.admin.digest(tape).digest)
        digests.append((pair[0], pair[1]))
        advance(1)
    return digests


def summed_totals(groups: Sequence[GroupResult]) -> ReportTotals:
    totals = ReportTotals()
    for group in groups:
        totals.add(group.report.get("totals", {}))
    return totals
