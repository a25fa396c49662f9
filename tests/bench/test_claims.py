"""The predeclared protocol and its gates: every claim can fail, none has an escape hatch."""

from __future__ import annotations

import json
import math
import re
import tomllib
from pathlib import Path

import numpy as np

from bench import claims, intervals, stats

COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "benchmark" / "benchmark.json"

INTERVAL = {"value": 5.0, "low": 3.0, "high": 8.0}


def _claim(**gate: object) -> dict:
    return {"id": "X", "cell": "c", "text": "t", "metric": "m", "gate": gate}


def test_the_protocol_loads_and_every_gate_is_a_single_comparison() -> None:
    protocol = claims.load()
    assert protocol["version"] >= 1 and protocol["constants"]["bias_margin"] > 0
    for claim in protocol["claim"]:
        assert set(claim["gate"]) <= {"bound", "op", "value", "ref", "ref_bound"}
        assert claim.get("control") in {None, "replay"}
        assert claim["gate"]["op"] in {"==", *claims.OPERATORS}
        assert " or " not in claim["text"]


def test_a_gate_on_the_lower_bound() -> None:
    assert claims.evaluate(_claim(bound="low", op=">", value=2.0), {"m": INTERVAL})["supported"]
    failed = claims.evaluate(_claim(bound="low", op=">", value=4.0), {"m": INTERVAL})
    assert failed["verdict"] == claims.NOT_SUPPORTED


def test_a_gate_against_another_metric() -> None:
    gate = _claim(bound="low", op="<=", ref="ceiling", ref_bound="high")
    assert claims.evaluate(gate, {"m": INTERVAL, "ceiling": {"high": 3.5}})["supported"]
    assert not claims.evaluate(gate, {"m": INTERVAL, "ceiling": {"high": 2.0}})["supported"]
    assert claims.evaluate(gate, {"m": INTERVAL})["verdict"] == claims.NOT_MEASURED


def test_a_missing_metric_is_not_measured_and_not_support() -> None:
    verdict = claims.evaluate(_claim(bound="k", op="==", value=0), {})
    assert verdict["verdict"] == claims.NOT_MEASURED and not verdict["supported"]


def test_a_gate_the_positive_control_passes_is_not_a_gate() -> None:
    claim = {**_claim(bound="low", op=">", value=2.0), "metric": "groundhog.m"}
    claim["control"] = "replay"
    metrics = {"groundhog.m": INTERVAL, "replay.m": {"low": 1.0}}
    result = claims.evaluate(claim, metrics)
    assert result["supported"] and result["control"]["rejected"]
    passing_control = claims.evaluate(claim, {**metrics, "replay.m": {"low": 2.5}})
    assert passing_control["verdict"] == claims.NOT_A_GATE and not passing_control["supported"]
    unrun = claims.evaluate(claim, {"groundhog.m": INTERVAL})
    assert unrun["verdict"] == claims.NOT_MEASURED


def _shaped(rng: np.random.Generator, *, bias: float, stale_groups: int, share: float) -> dict:
    """Gate metrics from synthetic data at the protocol's sizes: a true bias, stale groups, and
    a contrast keeping ``share`` of the fully coupled live variance."""
    worlds, pairs = 600, 1200
    coupled = rng.normal(0.18, 0.40, size=pairs)
    own = rng.normal(0.18 + bias, 0.40 * math.sqrt(share), size=worlds)
    estimate = stats.Estimate(bias, 0.03)
    return {
        "equivalence": intervals.equivalence(estimate, 0.10),
        "calibration": intervals.equivalence(estimate, 0.10),
        "lies": intervals.rate(stale_groups, worlds),
        "estimand_share": intervals.variance_ratio(own, coupled, paired=False),
    }


def _replay_shaped_metrics(rng: np.random.Generator) -> dict:
    """(B) as the committed run saw it: biased by -0.23, a stale read in some groups, and an
    over-shared contrast (75% of the fully coupled live variance)."""
    return _shaped(rng, bias=-0.23, stale_groups=12, share=0.75)


def _groundhog_shaped_metrics(rng: np.random.Generator) -> dict:
    return _shaped(rng, bias=-0.01, stale_groups=0, share=1.0)


def test_every_gate_on_groundhog_rejects_data_shaped_like_replay() -> None:
    """The gate functions themselves, on synthetic (B): a gate (B) would pass is not a gate."""
    rng = np.random.default_rng(33)
    controlled = [
        c for c in claims.load()["claim"] if c.get("control") or ".calibration" in c["metric"]
    ]
    assert {c["metric"].split(".", 1)[1] for c in controlled} >= {
        "equivalence",
        "lies",
        "estimand_share",
        "calibration",
    }
    for claim in controlled:
        field = claim["metric"].split(".", 1)[1]
        as_replay = {claim["metric"]: _replay_shaped_metrics(rng)[field]}
        assert claims.evaluate(claim, as_replay)["verdict"] != claims.SUPPORTED, claim["id"]
        honest = {
            claim["metric"]: _groundhog_shaped_metrics(rng)[field],
            **(
                {claims.control_metric(claim): _replay_shaped_metrics(rng)[field]}
                if claim.get("control")
                else {}
            ),
        }
        assert claims.evaluate(claim, honest)["verdict"] == claims.SUPPORTED, claim["id"]


def _runs() -> list[dict]:
    with claims.RUNS.open("rb") as handle:
        return tomllib.load(handle)["run"]


def test_the_changelog_has_an_entry_for_every_version_after_the_first() -> None:
    assert sorted(claims.changelog()) == list(range(2, claims.load()["version"] + 1))


def _unnamed(entries: dict[int, str]) -> list[tuple[str, str, int]]:
    """(run, claim, version) for each failure of a run the next change's entry leaves out."""
    missing = []
    for run in _runs():
        later = [version for version in entries if version > run["protocol_version"]]
        if not later:
            continue  # no change has followed this run yet
        for claim_id in run["not_supported"]:
            if not re.search(rf"\b{claim_id}\b", entries[min(later)]):
                missing.append((run["commit"], claim_id, min(later)))
    return missing


def test_every_change_names_each_claim_and_control_the_runs_before_it_failed() -> None:
    """Issue 58, point 2: version 8's entry named MA's failure in version 7 but not M2's."""
    assert _unnamed(claims.changelog()) == []


def test_a_changelog_entry_missing_a_failure_is_caught(tmp_path) -> None:
    edited = tmp_path / "protocol.toml"
    edited.write_text(claims.PROTOCOL.read_text().replace("M2", "the MCP claim"))
    assert _unnamed(claims.changelog(edited)) == [("5e8cf2a", "M2", 8)]


def test_the_committed_run_is_in_the_history_with_its_failures() -> None:
    results = json.loads(COMMITTED.read_text())
    failed = sorted(c["id"] for c in results["claims"] if not c["supported"])
    version = results["meta"]["protocol_version"]
    assert any(
        run["protocol_version"] == version and sorted(run["not_supported"]) == failed
        for run in _runs()
    ), (version, failed)
