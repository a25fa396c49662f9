"""Unit tests of bench/collect.py: how groups and live runs become raw measurements.

`run_group` and `run_live` (bench/groups.py, tested on their own) are replaced by doubles that
answer from their arguments, so each collector's bookkeeping is checked exactly and fast.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

import pytest

from bench import collect
from bench.agent_adapter import AgentOutcome
from bench.config import BenchConfig, quick_config
from bench.groups import BranchResult, Grades, GroupResult, RunContext
from groundhog.models import TapeDigest


def _outcome(reward: float, digest: str = "d", saw: bool | None = None) -> AgentOutcome:
    return AgentOutcome(reward, reward / 10, saw, digest, ())


class World:
    """Counts calls the way the world's /_stats would: every group adds ten per branch."""

    def __init__(self) -> None:
        self.calls = 0
        self.lock = threading.Lock()

    def total_calls(self) -> int:
        return self.calls

    def spend(self, count: int) -> None:
        with self.lock:
            self.calls += count


class Admin:
    def __init__(self) -> None:
        self.digested: list[str] = []

    def digest(self, tape: str) -> TapeDigest:
        self.digested.append(tape)
        return TapeDigest(tape, "digest-of-" + tape.rsplit("-", 2)[1], 1)


@pytest.fixture
def context() -> RunContext:
    return RunContext(Admin(), World(), "http://w", "http://p", "run9")  # type: ignore[arg-type]


@pytest.fixture
def config() -> BenchConfig:
    return replace(
        quick_config(),
        worlds=3,
        reference_pairs=2,
        reference_ranking_worlds=1,
        equivalence_worlds=2,
        reproducibility_runs=2,
        group_sizes=(1, 3),
        curve_worlds=2,
        dependency_worlds=2,
        dependency_models=("closure", "rules"),
        workers=2,
    )


@pytest.fixture
def groups_run(monkeypatch: pytest.MonkeyPatch, context: RunContext) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []

    def fake_run_group(run_context: RunContext, **kwargs: Any) -> GroupResult:
        assert run_context.world is context.world
        calls.append(kwargs)
        strategies = kwargs["strategies"]
        run_context.world.spend(10 * len(strategies))  # type: ignore[attr-defined]
        result = GroupResult(tape=kwargs["tape"], world_seed=kwargs["world_seed"])
        for index, strategy in enumerate(strategies):
            reward = kwargs["world_seed"] + index / 10
            grades = Grades(reads=5, stale=int(strategy == "verify"))
            if index == 0 and kwargs.get("reread"):
                grades.pairs = [(True, kwargs["dependency_model"] == "rules")]
            result.branches.append(
                BranchResult(f"root/{strategy}", strategy, 100 + index, _outcome(reward), grades)
            )
        result.report = {"totals": {"reads": 4, "reads_shared": 3, "decisions": {"shared": 3}}}
        return result

    monkeypatch.setattr(collect, "run_group", fake_run_group)
    return calls


@pytest.fixture
def live_runs(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    lock = threading.Lock()

    def fake_run_live(run_context: RunContext, **kwargs: Any) -> AgentOutcome:
        with lock:
            calls.append(kwargs)
        digest = "same" if kwargs["strategy"] != "deep" else "other"
        return _outcome(kwargs["world_seed"] + kwargs["seed"] % 7, digest, True)

    monkeypatch.setattr(collect, "run_live", fake_run_live)
    return calls


def test_world_seeds(config: BenchConfig) -> None:
    assert collect.world_seeds(config, 3) == [1000, 1001, 1002]
    assert collect.world_seeds(config, 2, offset=30) == [1030, 1031]


def test_collect_condition_gathers_every_branch_and_the_world_calls(
    context: RunContext, config: BenchConfig, groups_run: list[dict[str, Any]]
) -> None:
    advanced: list[int] = []
    data, groups = collect.collect_condition(context, config, "replay", advanced.append)
    assert advanced == [1, 1, 1] and data.groups == 3 and len(groups) == 3
    assert sorted(call["world_seed"] for call in groups_run) == [1000, 1001, 1002]
    first = next(call for call in groups_run if call["world_seed"] == 1000)
    assert first["tape"] == "brun9-replay-1000" and first["branch_label"] == "replay-1000"
    assert first["probe"] is True and first["dependency_model"] == "hints"
    assert first["rules"] == ()
    assert data.oracle.reads == 3 * 5 * len(config.actions) and data.oracle.stale == 3
    assert data.world_calls == 3 * 10 * len(config.actions)
    assert len(data.rollouts) == 3 * len(config.actions)
    assert data.totals.reads == 12 and data.totals.decisions == {"shared": 9}
    verify = next(r for r in data.rollouts if r.world_seed == 1001 and r.action == "verify")
    assert verify.reward == pytest.approx(1001.3) and verify.branch == "root/verify"


def test_naive_uses_closure_and_no_probe(
    context: RunContext, config: BenchConfig, groups_run: list[dict[str, Any]]
) -> None:
    collect.collect_condition(context, config, "naive", lambda _: None)
    assert {(call["dependency_model"], call["probe"]) for call in groups_run} == {
        ("closure", False)
    }


def test_an_uncooperative_cell_runs_groundhog_with_rules(
    context: RunContext, config: BenchConfig, groups_run: list[dict[str, Any]]
) -> None:
    uncooperative = replace(context, cooperative=False)
    collect.collect_condition(uncooperative, config, "groundhog", lambda _: None)
    assert {call["dependency_model"] for call in groups_run} == {"rules"}
    assert all(call["rules"] == collect.RULES for call in groups_run)


def test_collect_reference_pairs_worlds(
    context: RunContext, config: BenchConfig, live_runs: list[dict[str, Any]]
) -> None:
    advanced: list[int] = []
    reference = collect.collect_reference(context, config, advanced.append)
    seeds = [500_000, 500_001, 500_002, 500_003]
    assert advanced == [1] * 4
    # Only the first world ranks every action; the others run just the contrast's two.
    ranked = [call for call in live_runs if call["world_seed"] == seeds[0]]
    assert sorted(call["strategy"] for call in ranked) == sorted(config.actions)
    for seed in seeds[1:]:
        runs = {call["strategy"] for call in live_runs if call["world_seed"] == seed}
        assert runs == {"verify", "deep"}
    assert [r.world_seed for r in reference.better] == [seeds[0], seeds[2]]
    assert [r.world_seed for r in reference.worse_independent] == [seeds[1], seeds[3]]
    assert [r.world_seed for r in reference.worse_coupled] == [seeds[0], seeds[2]]
    assert all(r.branch == "live" for r in reference.better)
    assert set(reference.per_action) == set(config.actions)
    assert all(len(rewards) == 1 for rewards in reference.per_action.values())
    assert reference.attention_coefficient == 1.0
    branch = next(c for c in live_runs if c["world_seed"] == seeds[0] and c["strategy"] == "deep")
    assert branch["client_key"] == f"live-{seeds[0]}-{config.actions.index('deep')}"


def test_check_equivalence_reruns_the_first_groups_live(
    context: RunContext, config: BenchConfig, live_runs: list[dict[str, Any]]
) -> None:
    groups = []
    for seed in (1000, 1001, 1002):
        group = GroupResult("t", seed)
        group.branches = [
            BranchResult("root/x/verify", "verify", 3, _outcome(seed + 3, "same"), Grades()),
            BranchResult("root/x/deep", "deep", 4, _outcome(0.0, "same"), Grades()),
        ]
        groups.append(group)
    checks = collect.check_equivalence(context, config, groups, lambda _: None)
    assert len(checks) == 4  # equivalence_worlds=2 groups, two branches each
    assert {call["client_key"] for call in live_runs} == {"eq-root-x-verify", "eq-root-x-deep"}
    verify = [check for check in checks if check.action == "verify"]
    assert all(check.identical_observation and check.difference == 0 for check in verify)
    deep = [check for check in checks if check.action == "deep"]
    assert not any(check.identical_observation for check in deep)


def test_group_size_curve_counts_world_calls_per_group(
    context: RunContext, config: BenchConfig, groups_run: list[dict[str, Any]]
) -> None:
    curve = collect.collect_group_size_curve(context, config, lambda _: None)
    assert curve["sizes"] == [1, 3]
    for mode in config.conditions:
        # Each world's group counted on its own (curve_worlds=2): 10 calls a branch.
        assert curve["per_world"][mode] == [[10, 10], [30, 30]]
    three = [call for call in groups_run if len(call["strategies"]) == 3]
    assert three[0]["strategies"] == list(config.actions[:3])
    assert three[0]["world_seed"] == 1030  # offset past the condition worlds


def test_dependency_models_collect_oracle_pairs_with_rules_only_for_rules(
    context: RunContext, config: BenchConfig, groups_run: list[dict[str, Any]]
) -> None:
    results = collect.collect_dependency_models(context, config, lambda _: None)
    assert results["closure"]["pairs"] == [(True, False), (True, False)]
    assert results["rules"]["pairs"] == [(True, True), (True, True)]
    assert results["rules"]["live_calls_per_group"] == 10.0 * len(config.actions)
    assert results["rules"]["oracle_stale"] == 2  # one stale verify read per group
    for call in groups_run:
        assert call["reread"] and call["probe"]
        assert call["rules"] == (collect.RULES if call["dependency_model"] == "rules" else ())


def test_reproducibility_records_each_world_twice(
    context: RunContext, config: BenchConfig, groups_run: list[dict[str, Any]]
) -> None:
    digests = collect.collect_reproducibility(context, config, lambda _: None)
    assert digests == [("digest-of-1090", "digest-of-1090"), ("digest-of-1091", "digest-of-1091")]
    labels = {call["branch_label"] for call in groups_run if call["world_seed"] == 1090}
    assert labels == {"repro-1090"}  # both recordings use the same branch names
    assert all(call["concurrent"] is False for call in groups_run)
    assert context.admin.digested[:2] == ["brun9-repro-1090-x", "brun9-repro-1090-y"]  # type: ignore[attr-defined]


def test_summed_totals() -> None:
    one, two = GroupResult("a", 1), GroupResult("b", 2)
    one.report = {"totals": {"reads": 2, "lies": 1, "decisions": {"stale": 1}}}
    two.report = {"totals": {"reads": 3, "decisions": {"stale": 2, "shared": 1}}}
    totals = collect.summed_totals([one, two, GroupResult("c", 3)])
    assert (totals.reads, totals.lies) == (5, 1)
    assert totals.decisions == {"stale": 3, "shared": 1}
