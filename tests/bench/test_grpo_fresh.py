"""bench/grpo_fresh.py: the learning row trains (A) and (C) only, every seed of each."""

from __future__ import annotations

import threading
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from bench import claims, grpo_fresh
from bench.config import for_world, quick_config


def test_only_the_live_world_and_groundhog_are_trained_every_seed_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    trained: list[tuple[str, int]] = []

    def train_one(context: Any, config: Any, condition: str, seed: int) -> dict[str, Any]:
        trained.append((condition, seed))
        return {"seed": seed, "probabilities": [[0.25] * 4]}

    monkeypatch.setattr(grpo_fresh, "train_one", train_one)
    advanced: list[int] = []
    config = quick_config()
    runs = grpo_fresh.collect(None, config, advanced.append)  # type: ignore[arg-type]
    assert set(runs) == {"naive", "groundhog"}  # (B) is no reference for learning
    expected = {(c, s) for c in ("naive", "groundhog") for s in config.grpo_seeds}
    assert sorted(trained) == sorted(expected)
    assert [run["seed"] for run in runs["groundhog"]] == list(config.grpo_seeds)
    assert advanced == [1]


def test_every_seed_of_both_conditions_trains_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A seed's steps are sequential and latency-bound: the seeds must not queue behind a
    pool of a few workers (the wait below breaks, failing the test, if any of them does)."""
    config = quick_config()
    everyone = threading.Barrier(2 * len(config.grpo_seeds), timeout=300)

    def train_one(context: Any, config: Any, condition: str, seed: int) -> dict[str, Any]:
        everyone.wait()  # returns only once every (condition, seed) has started
        return {"seed": seed, "probabilities": [[0.25] * 4]}

    monkeypatch.setattr(grpo_fresh, "train_one", train_one)
    runs = grpo_fresh.collect(None, config, lambda _: None)  # type: ignore[arg-type]
    assert {c: len(r) for c, r in runs.items()} == {"naive": 2, "groundhog": 2}
    assert claims.load()["run"]["grpo_seeds_at_once"] == "all"  # what the protocol declares


def test_a_shop_step_samples_four_branches_from_the_three_declared_strategies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Protocol version 6: the shop's groups have four branches (`coupon` added), while SG1's
    policy stays over the three strategies it was declared on."""
    groups: list[list[str]] = []

    def run_group(context: Any, **arguments: Any) -> Any:
        strategies = list(arguments["strategies"])
        groups.append(strategies)
        rewards = [1.0 if name == "deal" else 0.0 for name in strategies]
        branches = [SimpleNamespace(outcome=SimpleNamespace(reward=r)) for r in rewards]
        return SimpleNamespace(branches=branches)

    monkeypatch.setattr(grpo_fresh, "run_group", run_group)
    config = replace(for_world(quick_config(), "shop"), grpo_fresh_steps=30)
    run = grpo_fresh.train_one(SimpleNamespace(run_id="t"), config, "naive", seed=3)
    assert config.group_size == 4 and len(groups) == 30
    assert all(len(group) == 4 for group in groups)
    assert {name for group in groups for name in group} <= {"impulse", "compare", "deal"}
    final = run["probabilities"][-1]
    assert len(final) == 3 and final[2] == max(final)  # it learns `deal` on these rewards
