"""bench.ceiling_power: the ceiling gate of protocol version 9 catches (B) by effect."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bench import ceiling_power, claims

INPUTS = json.loads(ceiling_power.INPUTS.read_text())


def test_the_protocol_declares_the_committed_plans_gate_and_size() -> None:
    chosen = ceiling_power.committed()["chosen"]
    protocol = claims.load()
    for claim_id, cell in (("U6", "research/uncooperative"), ("C6", "research/cooperative")):
        claim = next(c for c in protocol["claim"] if c["id"] == claim_id)
        assert claim["gate"] == {"bound": "value", "op": ">", "value": chosen["threshold"]}
        assert claim["control"] == "replay"
        assert protocol["sizes"][cell]["worlds"] == ceiling_power.WORLDS
        power = chosen["power"][cell]
        assert power["replay_fails"] >= ceiling_power.B_FAILS
        assert power["groundhog_passes"] >= ceiling_power.C_PASSES
        assert protocol["sizes"][cell]["power"][claim_id] == pytest.approx(
            power["groundhog_passes"], abs=1e-3
        )
    assert protocol["sizes"]["research/cooperative"]["reference_pairs"] == chosen["pairs"]


def test_fresh_simulated_runs_at_the_declared_size_meet_both_powers() -> None:
    """Another seed than the plan's: the powers are not that seed's luck (within its noise)."""
    chosen = ceiling_power.committed()["chosen"]
    effects = ceiling_power.effect_sizes(INPUTS)
    shares = {
        cell: {"groundhog": 1.0, "replay": effect["replay_over_groundhog"]}
        for cell, effect in effects.items()
    }
    estimates = ceiling_power.simulate_shares(
        INPUTS, worlds=ceiling_power.WORLDS, pairs=chosen["pairs"], shares=shares, runs=1000, seed=7
    )
    for arms in estimates.values():
        # 1000 runs: a power's s.e. is about 0.007 at 0.95 and 0.013 at 0.80.
        assert np.mean(arms["replay"] <= chosen["threshold"]) >= ceiling_power.B_FAILS - 0.02
        assert np.mean(arms["groundhog"] > chosen["threshold"]) >= ceiling_power.C_PASSES - 0.04


def test_version_8s_gate_let_b_through_by_width() -> None:
    """The audit's point 4: at version 8's sizes (B) passes its gate about a third of the time."""
    rate = ceiling_power.old_gate_pass_rate(INPUTS, "research/uncooperative", pairs=1220, runs=1000)
    assert 0.2 < rate < 0.45


def test_the_sizing_fails_when_b_is_as_close_to_c_as_0_95() -> None:
    """The sizing can fail: with (B) as close to (C) as 0.95, no pair count separates them."""
    inputs = json.loads(json.dumps(INPUTS))
    for arms in inputs["contrasts"].values():
        scale = np.sqrt(0.95 * np.var(arms["groundhog"], ddof=1) / np.var(arms["replay"], ddof=1))
        arms["replay"] = (np.asarray(arms["replay"]) * scale).tolist()
    assert ceiling_power.plan(inputs, runs=300)["chosen"] is None


def test_the_inputs_are_version_8s_committed_contrasts() -> None:
    committed = json.loads((ceiling_power.ROOT / "docs/benchmark/benchmark.json").read_text())
    if committed["meta"]["protocol_version"] != 8:
        pytest.skip("docs/benchmark holds a later run; the inputs stay version 8's")
    assert ceiling_power.extract_inputs(committed) == INPUTS
