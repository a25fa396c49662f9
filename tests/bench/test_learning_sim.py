"""bench/learning_sim.py: the in-process groups and the power of the declared gate."""

from __future__ import annotations

import numpy as np

from bench import learning_sim


def test_an_inprocess_group_takes_repeated_strategies_and_c_shares_the_worlds_draw() -> None:
    spread = {}
    for condition in ("naive", "groundhog"):
        sample = learning_sim.inprocess_sampler(condition)
        groups = [sample(8_100_000 + world, [3, 3, 3, 3]) for world in range(6)]
        assert all(len(rewards) == 4 for rewards in groups)
        assert sample(8_100_000, [3, 3, 3, 3]) == groups[0]  # reproducible per world
        spread[condition] = float(np.mean([np.var(rewards) for rewards in groups]))
    # four verify branches on one day: (A) draws each branch's per-call noise, (C) shares it
    assert spread["groundhog"] < spread["naive"] / 5


def test_the_gates_power_is_high_for_a_real_gap_and_near_alpha_without_one() -> None:
    rng = np.random.default_rng(0)
    faster = rng.integers(3, 8, size=64)
    slower = rng.integers(8, 13, size=64)
    assert learning_sim.power(faster, slower, 8, draws=400) == 1.0
    same = rng.integers(3, 13, size=(2, 64))
    null_power = learning_sim.power(same[0], same[1], 12, draws=1000)
    assert null_power < 0.06  # one-sided at 2.5% in principle
    assert learning_sim.gate_passes([4, 4, 4], [6, 6, 6], 0.95)  # a constant gap has no spread
    assert not learning_sim.gate_passes([6, 6, 6], [6, 6, 6], 0.95)
