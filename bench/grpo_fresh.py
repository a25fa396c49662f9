"""GRPO on fresh rollouts through the proxy: every step samples a group and runs it live.

A learner trained on a cached reward table reuses each world's draws and hides how noise
enters learning; here each step of each seed opens a new world (a new day), samples a group of
actions from the current policy, runs them as sibling branches through the proxy in the given
condition, and ascends the group-relative policy gradient. Per-seed curves are kept whole (a
mean of two outcomes hides which seeds learned what).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from bench.collect import groundhog_model, rules_for
from bench.config import BenchConfig
from bench.groups import RunContext, run_group
from bench.grpo import softmax

GRPO_FIRST_WORLD = 2_000_000
# The learning claim is (C) against the live world's (A) (bench/protocol.toml, version 2): (B)
# over-shares by construction and is no reference for learning, so it is not trained. It was a
# third of the run's largest cost, every step of every seed a group through the proxy.
GRPO_CONDITIONS = ("naive", "groundhog")


def train_one(
    context: RunContext, config: BenchConfig, condition: str, seed: int
) -> dict[str, Any]:
    """One seed's run: the policy after each step and the rewards it was trained on."""
    actions = config.learning_actions
    rng = np.random.default_rng(seed)
    logits = np.zeros(len(actions))
    history = [softmax(logits).tolist()]
    model = "closure" if condition == "naive" else groundhog_model(context, config)
    identity = np.eye(len(actions))
    for step in range(config.grpo_fresh_steps):
        policy = softmax(logits)
        chosen = rng.choice(len(actions), size=config.group_size, p=policy)
        world_seed = GRPO_FIRST_WORLD + seed * 10_000 + step
        group = run_group(
            context,
            tape=f"b{context.run_id}-grpo-{condition}-{seed}-{step}",
            branch_label=f"grpo-{condition}-{seed}-{step}",
            world_seed=world_seed,
            mode=condition,
            dependency_model=model,
            strategies=[actions[index] for index in chosen],
            seed_base=config.agent_seed + 1 + seed,
            probe=condition != "naive",
            rules=rules_for(context) if model == "rules" else (),
        )
        rewards = np.array([branch.outcome.reward for branch in group.branches])
        advantages = rewards - rewards.mean()
        gradient = (advantages[:, None] * (identity[chosen] - policy)).mean(axis=0)
        logits = logits + config.grpo_learning_rate * gradient
        history.append(softmax(logits).tolist())
    return {"seed": seed, "probabilities": history}


def collect(
    context: RunContext, config: BenchConfig, advance: Callable[[int], None]
) -> dict[str, list[dict[str, Any]]]:
    """(A)'s and (C)'s runs, every seed of both at once (protocol version 5).

    A seed's steps run in order, each a group whose probe and branches wait on three
    processes, so one seed keeps the machine idle most of the time: with three seeds at a
    time (version 4's layout) the research row's 2,400 groups took 849 s of a 45-minute run.
    Started together, the seeds' groups share the machine's two cores instead."""
    conditions = [name for name in config.conditions if name in GRPO_CONDITIONS]
    runs: dict[str, list[dict[str, Any]]] = {}
    with ThreadPoolExecutor(max_workers=max(1, len(conditions) * len(config.grpo_seeds))) as pool:
        futures = {
            condition: [
                pool.submit(train_one, context, config, condition, seed)
                for seed in config.grpo_seeds
            ]
            for condition in conditions
        }
        for condition in conditions:
            runs[condition] = [future.result() for future in futures[condition]]
    advance(1)
    return runs
