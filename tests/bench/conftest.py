"""Constructed measurements for the bench analysis tests: three conditions with known structure.

(A) draws independent noise per branch, (B) and (C) share one draw per world; (B) hides the
verify bonus (a lying replay), (C) keeps it. The live reference draws independent worlds with
an observed attention shock entering the reward with coefficient one.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from bench import claims, rawfiles
from bench.config import ACTIONS, BenchConfig, quick_config
from bench.measurements import (
    ConditionData,
    EquivalenceCheck,
    OracleCounts,
    ReferenceData,
    Rollout,
)

QUALITY = {"guess": 0.0, "skim": 0.2, "deep": 0.4, "verify": 0.6}
VERIFY_BONUS = 0.2


def _condition(name: str, worlds: int, rng: np.random.Generator) -> ConditionData:
    data = ConditionData(name=name, actions=ACTIONS, groups=worlds, world_calls=10 * worlds)
    for world in range(worlds):
        shared = rng.normal(scale=1.4)
        for action in ACTIONS:
            attention = rng.normal(scale=1.4) if name == "naive" else shared
            bonus = VERIFY_BONUS if action == "verify" and name != "replay" else 0.0
            base = QUALITY[action] - (VERIFY_BONUS if action == "verify" else 0.0)
            reward = base + bonus + attention + rng.normal(scale=0.05)
            saw = None if action != "verify" else name != "replay"
            data.rollouts.append(Rollout(world, f"b{world}", action, reward, attention, saw))
    data.totals.add({"reads": 100, "reads_shared": 70 if name != "naive" else 0, "lies": 0})
    data.oracle = OracleCounts(
        reads=100,
        rollouts_reading_after_write=worlds,
        groups=worlds,
        groups_reading_after_write=worlds,
    )
    if name == "replay":
        data.totals.add({"reads": 0, "lies": 5})
        data.oracle.stale = 5
        data.oracle.groups_stale = 5
        data.oracle.rollouts_blind = worlds
        data.oracle.groups_blind = worlds
    return data


def _reference(pairs: int, rng: np.random.Generator) -> ReferenceData:
    reference = ReferenceData(attention_coefficient=1.0)
    for pair in range(pairs):
        attention_a, attention_b = rng.normal(scale=1.4, size=2)
        verify = QUALITY["verify"] + attention_a + rng.normal(scale=0.05)
        deep_b = QUALITY["deep"] + attention_b + rng.normal(scale=0.05)
        deep_a = QUALITY["deep"] + attention_a + rng.normal(scale=0.05)
        reference.better.append(Rollout(2 * pair, "live", "verify", verify, attention_a))
        reference.worse_independent.append(
            Rollout(2 * pair + 1, "live", "deep", deep_b, attention_b)
        )
        reference.worse_coupled.append(Rollout(2 * pair, "live", "deep", deep_a, attention_a))
        for action in ACTIONS:
            reward = QUALITY[action] + attention_a
            reference.per_action.setdefault(action, []).append(reward)
    return reference


@pytest.fixture
def small_config() -> BenchConfig:
    """A full (not quick) run at small sizes: `published` declares the constructed data's."""
    return replace(quick_config(), quick=False, worlds=80, grpo_steps=60, grpo_seeds=(0, 1))


@pytest.fixture
def published(small_config) -> dict:
    """The protocol with its sizes set to small_config's, so the constructed run is published."""
    protocol = claims.load()
    # What the constructed cells hold: 80 groups, 300 reference pairs, 4 GRPO seeds of 1 step.
    sizes = {"worlds": 80, "reference_pairs": 300}
    protocol["sizes"] = {cell: dict(sizes) for cell in protocol["sizes"]}
    protocol["sizes"]["research/uncooperative"].update(grpo_seeds=4, grpo_steps=1)
    return protocol


@pytest.fixture
def constructed_raw() -> dict:
    rng = np.random.default_rng(2024)
    conditions = {name: _condition(name, 80, rng) for name in ("naive", "replay", "groundhog")}
    equivalence = {
        "groundhog": [EquivalenceCheck(1, "verify", 1.5, 1.5, True)] * 4,
        "replay": [EquivalenceCheck(1, "verify", 1.3, 1.5, False)]
        + [EquivalenceCheck(1, "deep", 1.0, 1.0, True)] * 3,
    }
    return {
        "reference": _reference(300, rng),
        "conditions": conditions,
        "equivalence": equivalence,
        "curve": {
            "sizes": [1, 2, 4],
            "per_world": {
                "naive": [[3, 3], [8, 8], [24, 22]],
                "replay": [[8, 8], [9, 9], [11, 11]],
                "groundhog": [[8, 8], [9, 10], [13, 13]],
            },
        },
        "dependency_models": {
            "closure": {
                "pairs": [(True, True), (True, False), (True, False)],
                "live_calls_per_group": 20,
                "oracle_reads": 30,
                "oracle_stale": 0,
            },
            "path": {
                "pairs": [(False, True), (False, False), (False, False)],
                "live_calls_per_group": 12,
                "oracle_reads": 30,
                "oracle_stale": 3,
            },
        },
        "reproducibility": [("a", "a"), ("b", "b")],
        "speed": {"resolver": "not measured (test)", "proxy": [{"name": "p50", "ms": 1.5}]},
        "timings": {"total": 1.0},
    }


def _grpo_runs(final_best: float, seeds: int = 4) -> list[dict]:
    rest = (1.0 - final_best) / 3
    last = [rest, rest, rest, final_best]
    return [{"seed": seed, "probabilities": [[0.25] * 4, last]} for seed in range(seeds)]


@pytest.fixture
def constructed_raws(constructed_raw) -> dict:
    """Both modes: the uncooperative cell has no equivalence or reproducibility, and GRPO."""
    uncooperative = {
        **constructed_raw,
        "equivalence": {},
        "reproducibility": [],
        "grpo": {
            "naive": _grpo_runs(0.5),
            "groundhog": _grpo_runs(0.8),
        },
    }
    return {"research/uncooperative": uncooperative, "research/cooperative": constructed_raw}


@pytest.fixture
def raw_run(small_config, constructed_raws) -> rawfiles.RawRun:
    """The constructed run as `python -m bench` hands it to bench.run.write_outputs."""
    config, raws = small_config, constructed_raws
    return rawfiles.RawRun(
        config=config,
        protocol_text=claims.PROTOCOL.read_text(),
        cells={name: {k: v for k, v in raw.items() if k != "speed"} for name, raw in raws.items()},
        recorded={
            "run_id": "abc123",
            "services": {"world_url": "w", "resolver_url": "r", "proxy_url": "p"},
            "total_seconds": 12.5,
            "provenance": {"commit": "0" * 40, "dirty": False},
        },
        faults={
            "groups": 2,
            "group_size": 4,
            "fault_rate": 0.4,
            "shared": {
                "mode": "groundhog",
                "groups": [{"rewards": [1, 1, 0.5, 0.5], "injected": 2}] * 2,
            },
            "independent": {
                "mode": "naive",
                "groups": [
                    {"rewards": [1, 0.75, 0.5, 0.25], "injected": 3},
                    {"rewards": [0.5, 1, 0.25, 0.5], "injected": 4},
                ],
            },
        },
        speed={"resolver": "not measured (test)"},
    )
