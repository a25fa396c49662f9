"""bench/grpo_fresh.py: the learning row trains (A) and (C) only, every seed of each."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from bench import claims, grpo_fresh
from bench.config import quick_config


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
