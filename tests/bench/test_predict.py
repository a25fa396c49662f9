"""bench.predict: a design's prediction and measurement from groups, the declared gate, the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bench import predict
from bench import world_designs as designs
from bench.agent_adapter import AgentOutcome
from bench.groups import BranchResult, Grades, GroupResult

METHODS = ("GET",) * 6 + ("POST",)


def _branch(strategy: str, shared: float, agent: float, rest: float) -> BranchResult:
    sources = ((1, shared), (None, agent), (6, rest))
    outcome = AgentOutcome(shared + agent + rest, 0.0, None, "d", (), sources, METHODS)
    return BranchResult(f"b-{strategy}", strategy, 1, outcome, Grades())


def _groups(seed: int, worlds: int, *, shared_in_group: bool) -> list[GroupResult]:
    """(A)'s groups draw the read term per branch; (C)'s once per group (the same agent)."""
    rng = np.random.default_rng(seed)
    agents = np.random.default_rng(99).normal(0.0, 0.3, (worlds, 2))
    groups = []
    for world in range(worlds):
        common = rng.normal(0.0, 2.0)
        branches = [
            _branch(
                strategy,
                common if shared_in_group else rng.normal(0.0, 2.0),
                agents[world, index],
                rng.normal(0.0, 0.5),
            )
            for index, strategy in enumerate(("verify", "deep"))
        ]
        groups.append(GroupResult(tape=f"t{world}", world_seed=1000 + world, branches=branches))
    return groups[::-1]  # out of order: results are put in world order


def test_a_design_is_predicted_from_a_alone_and_measured_on_c() -> None:
    naive = _groups(1, 400, shared_in_group=False)
    groundhog = _groups(2, 400, shared_in_group=True)
    result = predict.design_result(
        designs.draw(1, 0), naive, groundhog, better="verify", worse="deep", level=0.9
    )
    known = (4.0 + 0.09 + 0.25) / (0.09 + 0.25)
    assert result["prediction"]["value"] == pytest.approx(known, rel=0.15)
    assert result["measured"] == pytest.approx(known, rel=0.15)
    assert result["covered"]
    assert result["contrasts"]["naive"][0] == pytest.approx(
        naive[-1].branches[0].outcome.reward - naive[-1].branches[1].outcome.reward
    )


def _results(covered: int, designs_count: int) -> list[dict]:
    return [
        {
            "prediction": {"value": 2.0, "low": 1.0, "high": 4.0},
            "measured": 2.0 if index < covered else 9.0,
            "covered": index < covered,
        }
        for index in range(designs_count)
    ]


def test_the_declared_gate_needs_28_of_32_designs_covered() -> None:
    gate = predict.load_declared()["gate"]
    assert predict.verdict(_results(28, 32), gate)["supported"]
    assert not predict.verdict(_results(27, 32), gate)["supported"]


def test_the_constant_control_counts_what_one_number_covers() -> None:
    results = _results(3, 5)
    control = predict.constant_control(results)
    assert control == {"constant": 2.0, "covered": 3, "designs": 5}


def test_the_declared_sizes_are_thirty_or_more_designs() -> None:
    declared = predict.load_declared()
    assert declared["run"]["designs"] >= 30
    assert 0.0 < declared["gate"]["min_coverage"] < declared["gate"]["interval_level"]


def test_the_cli_writes_every_design_and_the_verdict(tmp_path, monkeypatch, capsys) -> None:
    def fake_run(*, designs: int, worlds: int, seed: int, design_workers: int, declared):
        results = _results(designs, designs)
        for index, result in enumerate(results):
            result["design"] = {"index": index, "shares": {"read": 1.0}}
        return {"designs": results, "verdict": predict.verdict(results, declared["gate"])}

    monkeypatch.setattr(predict, "run", fake_run)
    predict.main(["--designs", "2", "--worlds-per-design", "3", "--out", str(tmp_path)])
    written = json.loads((tmp_path / "predict.json").read_text())
    assert len(written["designs"]) == 2
    assert written["declared_sizes"] is False
    out = capsys.readouterr().out
    assert "coverage 2/2" in out
    assert "not the declared run" in out
