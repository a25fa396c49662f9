"""bench.figures on a run whose cells are not the research world's (the shop alone)."""

from __future__ import annotations

from pathlib import Path

from bench import figures


def _shop_only_results() -> dict:
    runs = [{"seed": seed, "probabilities": [[1 / 3] * 3, [0.1, 0.2, 0.7]]} for seed in range(2)]
    cell = {
        "actions": ["impulse", "compare", "deal"],
        "reference": {"best_action": "deal"},
        "raw": {"grpo_runs": {"naive": runs, "groundhog": runs}},
    }
    # meta's config carries the research world's actions, which have no `deal`.
    return {
        "meta": {"config": {"actions": ["guess", "skim", "deep", "verify"]}},
        "cells": {"shop/uncooperative": cell},
    }


def test_grpo_curves_look_the_best_action_up_in_the_cells_own_actions(tmp_path: Path) -> None:
    path = tmp_path / "grpo.png"
    figures.grpo_curves(_shop_only_results(), path)
    assert path.stat().st_size > 0
