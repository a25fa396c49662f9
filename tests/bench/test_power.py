"""bench.power against seeded simulations of the gates themselves, and the protocol's sizes."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from bench import claims, intervals, power, stats


@pytest.mark.parametrize(("stderr", "bias"), [(0.04, 0.0), (0.05, 0.0), (0.034, 0.03)])
def test_tost_power_agrees_with_a_simulation_of_the_equivalence_gate(
    stderr: float, bias: float
) -> None:
    rng = np.random.default_rng(7)
    trials = 4000
    passed = 0
    for value in rng.normal(bias, stderr, size=trials):
        passed += intervals.equivalence(stats.Estimate(float(value), stderr), 0.10)["equivalent"]
    assert passed / trials == pytest.approx(power.tost_power(stderr, 0.10, bias=bias), abs=0.025)


def test_share_power_agrees_with_a_simulation_of_the_bootstrap_gate() -> None:
    """The gate is a percentile bootstrap; the power is normal theory on log variances."""
    rng = np.random.default_rng(11)
    n_condition, n_reference, margin = 150, 300, 0.8
    trials = 160
    passed = 0
    for seed in range(trials):
        condition = rng.normal(0.0, 1.0, size=n_condition)
        reference = rng.normal(0.0, 1.0, size=n_reference)
        ratio = intervals.variance_ratio(condition, reference, paired=False, seed=seed)
        passed += ratio["low"] > margin
    expected = power.share_power(n_condition, n_reference, margin)
    assert 0.3 < expected < 0.7  # a size where agreement is informative
    assert passed / trials == pytest.approx(expected, abs=0.09)


def test_smallest_size_is_the_first_to_reach_the_target() -> None:
    def at(n: int) -> float:
        return power.tost_power(power.bias_stderr(0.15, n, 0.19, 2 * n), 0.10)

    n = power.smallest(at)
    assert n is not None and at(n) >= power.TARGET > at(n - 1)
    assert power.smallest(lambda n: 0.5) is None


def test_the_protocol_declares_the_sizes_the_power_calculation_gives() -> None:
    protocol = claims.load()
    results = json.loads(power.SIZING_RUN.read_text())
    plans = power.plan(results, protocol)
    claim_field = {
        "equivalence": "equivalence",
        "calibration": "calibration",
        "estimand_share": "estimand_share",
        "groundhog_minus_naive": "grpo",
    }
    for cell, plan in plans.items():
        declared = protocol["sizes"][cell]
        assert (declared["worlds"], declared["reference_pairs"]) == (
            plan["worlds"],
            plan["reference_pairs"],
        ), cell
        if "grpo_seeds" in plan:
            assert (declared["grpo_seeds"], declared["grpo_steps"]) == (
                plan["grpo_seeds"],
                plan["grpo_steps"],
            )
        for claim in (c for c in protocol["claim"] if c["cell"] == cell):
            field = claim_field.get(claim["metric"].partition(".")[2])
            if field is None:
                continue
            # Every powered claim is declared with its power, which reaches the target.
            assert field not in plan["infeasible"], claim["id"]
            assert declared["power"][claim["id"]] == pytest.approx(plan["power"][field], abs=1e-3)
            assert plan["power"][field] >= power.target_of(field) - 1e-3, claim["id"]


def test_controls_are_sized_for_more_power_than_claims() -> None:
    """Version 8: a calibration control at 80% fails one run in five at zero bias."""
    assert power.target_of("calibration") == power.CONTROL_TARGET >= 0.95
    assert power.target_of("equivalence") == power.target_of("estimand_share") == power.TARGET
    inputs = {"pair_variance": 0.17, "groundhog_variance": 0.015, "naive_calibrated_variance": 0.13}
    constants = claims.load()["constants"]
    required = power.needs(
        inputs, constants, pairs_per_world=3, claims=("equivalence", "calibration")
    )
    calibration = required["calibration"]
    assert calibration is not None
    at = power.claim_power("calibration", calibration, inputs, constants, pairs_per_world=3)
    below = power.claim_power("calibration", calibration - 1, inputs, constants, pairs_per_world=3)
    assert at >= power.CONTROL_TARGET > below


def test_more_reference_pairs_per_world_need_fewer_worlds_for_a_control() -> None:
    inputs = {"pair_variance": 0.38, "groundhog_variance": 0.27, "naive_calibrated_variance": 0.37}
    constants = claims.load()["constants"]
    two, five = (
        power.needs(inputs, constants, pairs_per_world=k, claims=("calibration",))["calibration"]
        for k in (2, 5)
    )
    assert two is not None and five is not None and five < two


def test_a_claim_the_protocol_does_not_declare_does_not_size_its_world() -> None:
    """The shop's share claims were removed as infeasible (version 2): undeclared, they size
    nothing; declared again, they would need more worlds than the run has."""
    results = json.loads(power.SIZING_RUN.read_text())
    protocol = claims.load()
    plans = power.plan(results, protocol)
    shop = ("shop/uncooperative", "shop/cooperative")
    for cell in shop:
        assert "estimand_share" not in plans[cell]["needs"]
        assert plans[cell]["infeasible"] == []
    revived = copy.deepcopy(protocol)
    revived["claim"] += [
        {"id": f"share-{cell}", "cell": cell, "metric": "groundhog.estimand_share"} for cell in shop
    ]
    sized = power.plan(results, revived)
    assert sized["shop/uncooperative"]["worlds"] > plans["shop/uncooperative"]["worlds"]
    assert "estimand_share" in sized["shop/uncooperative"]["needs"]


def test_declared_fields_follow_the_protocols_metrics() -> None:
    protocol = claims.load()
    assert power.declared_fields(protocol, "research/uncooperative") == (
        "equivalence",
        "calibration",
        "estimand_share",
    )
    assert power.declared_fields(protocol, "shop/uncooperative") == ("equivalence", "calibration")
    assert power.declared_fields(protocol, "no/such-cell") == ()
