"""bench.analysis and bench.assemble on constructed measurements with known structure."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from bench import analysis, claims, stats
from bench.assemble import assemble
from bench.harness import Services
from bench.measurements import ConditionData, EquivalenceCheck, Rollout

SERVICES = Services("http://w", "http://r", "http://p")


def test_condition_rows_follow_from_the_rewards(small_config, constructed_raw) -> None:
    data: ConditionData = constructed_raw["conditions"]["naive"]
    row, contrast = analysis.analyze_condition(data, small_config, truth_sign=1)
    by_world: dict[int, dict[str, float]] = {}
    for rollout in data.rollouts:
        by_world.setdefault(rollout.world_seed, {})[rollout.action] = rollout.reward
    expected = [world["verify"] - world["deep"] for world in by_world.values()]
    np.testing.assert_allclose(contrast, expected)
    assert row["contrast_variance"] == pytest.approx(np.var(expected, ddof=1))
    assert row["estimated_contrast"]["value"] == pytest.approx(np.mean(expected))
    assert row["live_calls_per_group"] == pytest.approx(10.0)
    assert row["recording_calls_per_group"] == 0.0
    assert row["blind_to_own_write"] == 0.0
    assert row["lie_rate"] == 0.0
    assert row["reads_shared"] == 0.0


def test_replay_rows_count_lies_and_blindness(small_config, constructed_raw) -> None:
    row, _ = analysis.analyze_condition(constructed_raw["conditions"]["replay"], small_config, 1)
    assert row["lie_rate"] == pytest.approx(5 / 100)
    assert row["reads_shared"] == pytest.approx(0.7)
    assert row["blind_to_own_write"] == 1.0


def test_first_significant_is_reported_in_rollouts(small_config) -> None:
    data = ConditionData(name="groundhog", actions=small_config.actions, groups=10)
    for world in range(10):
        for action in small_config.actions:
            reward = 1.0 + 0.01 * world if action == "verify" else 0.0
            data.rollouts.append(Rollout(world, "b", action, reward))
    row, _ = analysis.analyze_condition(data, small_config, truth_sign=-1)
    # Every prefix of a positive sequence with spread is significant from n = 5 (min_samples).
    assert row["first_significant"] == {"rollouts": 10, "sign": 1, "correct": False}
    assert row["stable_rollouts"] is None


def test_reference_uses_the_attention_control_variate(small_config, constructed_raw) -> None:
    reference = constructed_raw["reference"]
    result = analysis.analyze_reference(reference, small_config)
    adjusted = [
        (b.reward - b.attention) - (w.reward - w.attention)
        for b, w in zip(reference.better, reference.worse_independent, strict=True)
    ]
    assert result["contrast"]["value"] == pytest.approx(np.mean(adjusted))
    assert result["contrast"]["stderr"] == pytest.approx(
        np.std(adjusted, ddof=1) / math.sqrt(len(adjusted))
    )
    assert result["control_variate_gain"] > 10
    assert result["best_action"] == "verify"
    coupled = [
        b.reward - w.reward for b, w in zip(reference.better, reference.worse_coupled, strict=True)
    ]
    assert result["estimand_variance"]["value"] == pytest.approx(np.var(coupled, ddof=1))


def test_equivalence_counts_only_identical_rewards_and_observations() -> None:
    checks = [
        EquivalenceCheck(1, "deep", 1.0, 1.0, True),
        EquivalenceCheck(1, "verify", 1.0, 1.25, False),
        EquivalenceCheck(2, "deep", 2.0, 2.0, False),
    ]
    assert analysis.analyze_equivalence(checks) == {
        "identical": 1,
        "total": 3,
        "max_abs_diff": 0.25,
    }
    assert analysis.analyze_equivalence([]) is None


def test_assembled_results_carry_the_known_directions(
    small_config, constructed_raws, published
) -> None:
    results = assemble(
        small_config, constructed_raws, run_id="t", services=SERVICES, protocol=published
    )
    cooperative = results["cells"]["research/cooperative"]
    rows = cooperative["conditions"]
    naive_variance = rows["naive"]["contrast_variance"]
    assert rows["groundhog"]["reduction"]["value"] == pytest.approx(
        naive_variance / rows["groundhog"]["contrast_variance"]
    )
    assert rows["groundhog"]["reduction"]["low"] > 100
    assert rows["groundhog"]["levene_vs_naive"]["p"] < 0.01
    assert rows["replay"]["bias"]["value"] == pytest.approx(-0.2, abs=0.05)
    assert rows["replay"]["bias_interval"]["high"] < 0
    assert rows["replay"]["lies"]["k"] == 5 and rows["groundhog"]["lies"]["k"] == 0
    assert rows["replay"]["blind"]["value"] == 1.0
    assert rows["groundhog"]["exact_equivalence"]["identical"] == 4
    assert rows["replay"]["exact_equivalence"]["identical"] == 3
    assert cooperative["reproducibility"]["identical"] == 2
    models = cooperative["dependency_models"]
    assert (models["closure"]["precision"], models["closure"]["recall"]) == (
        pytest.approx(1 / 3),
        1.0,
    )
    assert models["path"]["recall"] == 0.0 and math.isnan(models["path"]["precision"])
    assert models["path"]["precision_note"].startswith("undefined")
    assert models["path"]["lies"]["k"] == 3
    uncooperative = results["cells"]["research/uncooperative"]
    assert uncooperative["grpo"]["groundhog_minus_naive"]["low"] > 0  # 0.8 against 0.5
    assert set(uncooperative["grpo"]) >= {"naive", "groundhog"}
    assert "replay" not in uncooperative["grpo"]
    # Each mode's ceiling: its own (A) over the fully coupled (cooperative) live variance.
    coupled = analysis.coupled_contrasts(constructed_raws["research/cooperative"]["reference"])
    naive = uncooperative["raw"]["contrasts"]["naive"]
    assert uncooperative["reference"]["ceiling"] == pytest.approx(
        np.var(naive, ddof=1) / np.var(coupled, ddof=1)
    )
    share = uncooperative["conditions"]["groundhog"]["estimand_share"]
    assert share["value"] == pytest.approx(
        np.var(uncooperative["raw"]["contrasts"]["groundhog"], ddof=1) / np.var(coupled, ddof=1)
    )
    assert uncooperative["conditions"]["naive"]["calibration"]["equivalent"]
    assert results["meta"]["config"]["worlds"] == small_config.worlds


def test_claims_fail_when_the_data_do_not_back_them(
    small_config, constructed_raws, published
) -> None:
    verdicts = {
        c["id"]: c["verdict"]
        for c in assemble(
            small_config, constructed_raws, run_id="t", services=SERVICES, protocol=published
        )["claims"]
    }
    assert verdicts["C4"] == verdicts["C5"] == verdicts["U3"] == "supported"
    assert verdicts["U4"] == verdicts["U5"] == verdicts["UA"] == verdicts["UB"] == "supported"
    assert verdicts["U2"] == verdicts["C2"] == "supported"  # and (B) fails both: a gate
    cooperative = constructed_raws["research/cooperative"]
    cooperative["equivalence"]["groundhog"] = [EquivalenceCheck(1, "verify", 1.5, 1.4, True)]
    cooperative["reproducibility"] = [("a", "b")]
    cooperative["conditions"]["groundhog"].oracle.stale = 1
    cooperative["conditions"]["groundhog"].oracle.groups_stale = 1
    bad = {
        c["id"]: c["verdict"]
        for c in assemble(
            small_config, constructed_raws, run_id="t", services=SERVICES, protocol=published
        )["claims"]
    }
    assert bad["C3"] == bad["C4"] == bad["C5"] == "NOT supported"


def test_best_action_comes_from_the_live_reference_not_the_ranking_worlds(
    small_config, constructed_raw
) -> None:
    reference = constructed_raw["reference"]
    # The few ranking worlds happen to favour deep; the reference pairs favour verify.
    reference.per_action["deep"] = [value + 1.0 for value in reference.per_action["deep"]]
    result = analysis.analyze_reference(reference, small_config)
    assert result["ranking_best_action"] == "deep"
    assert result["best_action"] == "verify"
    worse_wins = analysis.live_best_action(stats.Estimate(-0.2, 0.05), small_config)
    assert worse_wins == small_config.worse_action


def test_a_run_at_other_sizes_is_not_published(small_config, constructed_raws, published) -> None:
    published["sizes"]["research/cooperative"]["worlds"] = 610
    results = assemble(
        small_config, constructed_raws, run_id="t", services=SERVICES, protocol=published
    )
    cooperative = results["cells"]["research/cooperative"]
    assert not cooperative["published"]
    assert cooperative["size_mismatches"] == {"worlds": [610, 80]}
    verdicts = {c["id"]: c for c in results["claims"]}
    assert verdicts["C5"]["verdict"] == claims.UNPUBLISHED and not verdicts["C5"]["supported"]
    assert verdicts["C5"]["direction"] == claims.SUPPORTED
    assert verdicts["U3"]["verdict"] == claims.SUPPORTED  # the other cell ran at its sizes


def test_a_quick_run_is_a_smoke_test_whose_verdicts_are_not_claims(
    small_config, constructed_raws, published
) -> None:
    quick = replace(small_config, quick=True)
    results = assemble(quick, constructed_raws, run_id="t", services=SERVICES, protocol=published)
    ran = [c for c in results["claims"] if c["cell"].startswith("research/")]
    assert {c["verdict"] for c in ran} == {claims.SMOKE}
    assert not any(c["supported"] for c in results["claims"])


def _curve(final: float, reach_at: int | None, steps: int = 10) -> list[list[float]]:
    """A synthetic 4-action GRPO curve: P(verify) crosses 0.9 at ``reach_at`` (or never)."""
    values = []
    for step in range(steps + 1):
        if reach_at is not None and step >= reach_at:
            best = max(final, 0.9)
        else:
            best = min(0.25 + step * 0.05, 0.85)
        rest = (1 - best) / 3
        values.append([rest, rest, rest, best])
    values[-1][3] = final
    return values


def test_grpo_compares_groundhog_with_naive_on_paired_seeds() -> None:
    from bench.assemble import _grpo

    runs = {
        "naive": [
            {"seed": 0, "probabilities": _curve(0.50, None)},
            {"seed": 1, "probabilities": _curve(0.95, 8)},
            {"seed": 2, "probabilities": _curve(0.60, None)},
        ],
        "groundhog": [
            {"seed": 2, "probabilities": _curve(0.97, 3)},
            {"seed": 0, "probabilities": _curve(0.95, 4)},
            {"seed": 1, "probabilities": _curve(0.96, 5)},
        ],
    }
    summary = _grpo(runs, best=3, threshold=0.9)
    assert summary["naive"]["steps_to_threshold"] == [11, 8, 11]  # censored at steps + 1
    assert summary["groundhog"]["steps_to_threshold"] == [3, 4, 5]
    assert summary["naive"]["reached_threshold"]["k"] == 1
    paired = summary["groundhog_minus_naive"]
    # Paired by seed, not by position: seed 0 is 0.95 - 0.50, seed 2 is 0.97 - 0.60.
    assert paired["differences"] == pytest.approx([0.45, 0.01, 0.37])
    assert paired["low"] > 0 and paired["seeds"] == 3
    steps = summary["steps_groundhog_minus_naive"]
    assert steps["differences"] == [-7.0, -3.0, -8.0] and steps["high"] < 0
