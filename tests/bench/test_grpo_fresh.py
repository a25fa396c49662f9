"""bench/grpo_fresh.py: the learning row trains (A) and (C) only, every seed of each."""

from __future__ import annotations

from typing import Any

import pytest

from bench import grpo_fresh
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
