"""bench/learning.py: the declared gates applied to constructed groups and curves, and a tiny
run through the real proxy stack."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench import learning
from bench import policy_gradient as pg

MEANS = np.array([0.0, 0.6, 0.6, 0.8])  # verify best by 0.2


def _snr_row(
    state: list[float], worlds: int, rng: np.random.Generator, *, shared: bool
) -> dict[str, Any]:
    """(A) draws each branch's noise, (B) and (C) share the world's; (B) loses verify's 0.2."""
    policy = np.asarray(state) / np.sum(state)
    row: dict[str, Any] = {"state": state, "worlds": [], "actions": [], "rewards": {}}
    for world in range(worlds):
        chosen = pg.draw_actions(policy, rng.random(4))
        day = rng.normal(scale=1.0)
        own = rng.normal(scale=0.1, size=4)
        live = MEANS[chosen] + rng.normal(scale=1.0, size=4) + own
        kept = MEANS[chosen] + day + own
        lied = kept - 0.2 * (chosen == 3)
        row["worlds"].append(world)
        row["actions"].append(chosen.tolist())
        for condition, reward in (("naive", live), ("replay", lied), ("groundhog", kept)):
            chosen_reward = reward if shared or condition == "naive" else live
            row["rewards"].setdefault(condition, []).append(chosen_reward.tolist())
    return row


def _curve(steps_to_hold: int, horizon: int) -> list[list[float]]:
    low, high = [0.3, 0.3, 0.3, 0.1], [0.02, 0.02, 0.02, 0.94]
    return [high if step >= steps_to_hold else low for step in range(horizon + 1)]


def _runs(steps: dict[str, list[int]], horizon: int) -> dict[str, list[dict[str, Any]]]:
    return {
        condition: [{"probabilities": _curve(s, horizon)} for s in values]
        for condition, values in steps.items()
    }


@pytest.fixture
def settings() -> dict[str, Any]:
    declared = learning.load()
    declared["snr"]["states"] = [[0.25, 0.25, 0.25, 0.25], [0.1, 0.3, 0.2, 0.4]]
    return declared


def test_the_declared_gates_pass_where_c_shares_noise_and_b_lies(settings: dict[str, Any]) -> None:
    rng = np.random.default_rng(4)
    raw = {
        "snr": [_snr_row(state, 96, rng, shared=True) for state in settings["snr"]["states"]],
        "runs": _runs(
            {
                "naive": [12, 31, 31, 9, 31, 20, 31, 31],
                "replay": [31] * 8,
                "groundhog": [6, 7, 5, 8, 6, 9, 7, 6],
            },
            horizon=30,
        ),
    }
    result = learning.analyse(raw, settings)
    verdicts = {(gate["id"], gate.get("state")): gate["supported"] for gate in result["gates"]}
    assert verdicts == {
        ("LS1", 0): True,
        ("LS2", 0): True,
        ("LS1", 1): True,
        ("LE1", None): True,
        ("LE2", None): True,
    }
    first = result["snr"][0]
    assert first["groundhog"]["snr"]["value"] > first["naive"]["snr"]["value"]
    assert first["replay"]["mean_gradient"][3] < first["groundhog"]["mean_gradient"][3]
    assert result["efficiency"]["naive"]["reached"] == 3
    assert result["efficiency"]["steps_groundhog_minus_replay"]["differences"][0] == 6 - 31
    json.dumps(result)  # every number is JSON


def test_the_gates_fail_where_nothing_is_shared_and_c_is_no_faster(
    settings: dict[str, Any],
) -> None:
    rng = np.random.default_rng(6)
    raw = {
        "snr": [_snr_row(state, 96, rng, shared=False) for state in settings["snr"]["states"]],
        "runs": _runs(
            {c: [10, 12, 9, 14, 11, 10, 13, 12] for c in ("naive", "replay", "groundhog")}, 30
        ),
    }
    no_bias = copy.deepcopy(raw)
    for row in no_bias["snr"]:
        row["rewards"]["replay"] = row["rewards"]["groundhog"]
    result = learning.analyse(no_bias, settings)
    verdicts = {(gate["id"], gate.get("state")): gate["supported"] for gate in result["gates"]}
    assert not any(verdicts.values()), verdicts


def test_a_smoke_size_is_marked_unpublished(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    rng = np.random.default_rng(2)

    def run(settings: dict[str, Any], run_id: str, checkpoint: Any = None) -> dict[str, Any]:
        assert settings["efficiency"]["seeds"] == 3 and settings["snr"]["worlds"] == 24
        rows = [_snr_row(state, 24, rng, shared=True) for state in settings["snr"]["states"]]
        runs = _runs({c: [5, 9, 31] for c in ("naive", "replay", "groundhog")}, 30)
        return {"raw": {"snr": rows, "runs": runs}, "timings_seconds": {}}

    monkeypatch.setattr(learning, "run", run)
    out = tmp_path / "learning.json"
    assert learning.main(["--out", str(out), "--seeds", "3", "--snr-worlds", "24"]) == 0
    written = json.loads(out.read_text())
    assert written["published"] is False and len(written["gates"]) == len(written["snr"]) + 3
    # every number again from the raw groups and curves it kept
    again = tmp_path / "again.json"
    assert learning.main(["--reanalyse", str(out), "--out", str(again)]) == 0
    assert json.loads(again.read_text()) == written


@pytest.mark.slow
def test_a_tiny_run_through_the_proxy_stack() -> None:
    """Services started, two worlds per condition at one state, one step of one seed each
    (about 15 s on an idle machine, most of it starting the services)."""
    settings = learning.load()
    settings["snr"].update(states=[[0.25, 0.25, 0.25, 0.25]], worlds=2, first_world=9_500_000)
    settings["efficiency"].update(seeds=1, steps=1, first_world=9_600_000)
    output = learning.run(settings, run_id="tiny")
    row = output["raw"]["snr"][0]
    assert row["worlds"] == [9_500_000, 9_500_001]
    assert {c: len(r) for c, r in row["rewards"].items()} == {
        "naive": 2,
        "replay": 2,
        "groundhog": 2,
    }
    assert all(len(rewards) == 4 for rewards in row["rewards"]["groundhog"])
    # (B) and (C) serve the group's reads from one recording; (A) draws its own per branch
    assert row["rewards"]["naive"] != row["rewards"]["groundhog"]
    runs = output["raw"]["runs"]
    assert {c: len(r[0]["probabilities"]) for c, r in runs.items()} == {c: 2 for c in runs}
