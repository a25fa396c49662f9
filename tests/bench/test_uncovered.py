"""bench.uncovered: every cell's equivalence and ceiling verdicts, claim or no claim."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import claims, report, uncovered

COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "benchmark" / "benchmark.json"


@pytest.fixture
def results() -> dict[str, Any]:
    return json.loads(COMMITTED.read_text())


def test_every_told_gate_has_a_verdict_on_every_cell(results) -> None:
    told = uncovered.by_cell(results)
    for cell in results["cells"]:
        for metric in uncovered.TOLD:
            assert (cell, metric) in told, (cell, metric)


def test_the_gate_and_its_control_are_the_runs_own(results) -> None:
    verdict = next(
        v
        for v in uncovered.verdicts(results)
        if v["cell"] == "shop/cooperative" and v["as_claim"] == "U2"
    )
    assert verdict["gate"] == "groundhog.equivalence.equivalent == True"
    assert verdict["control"]["metric"] == "replay.equivalence"
    assert verdict["verdict"] == claims.NOT_SUPPORTED
    for claim in results["claims"]:
        if claim["id"] == "U2":
            claim["gate"] = "groundhog.equivalence.bias < 1.0"
    changed = {(v["cell"], v["as_claim"]): v for v in uncovered.verdicts(results)}
    assert changed["shop/cooperative", "U2"]["verdict"] == claims.NOT_A_GATE  # (B) passes it


def test_a_covered_cell_is_not_told_twice(results) -> None:
    told = {(v["cell"], uncovered.metric_of(v["gate"])) for v in uncovered.verdicts(results)}
    assert ("research/uncooperative", "groundhog.equivalence") not in told
    assert ("shop/uncooperative", "naive.calibration") not in told


def test_a_quick_run_tells_directions_not_verdicts(results) -> None:
    results["meta"]["quick"] = True
    for cell in results["cells"].values():
        cell["published"] = False
    for verdict in uncovered.verdicts(results):
        assert verdict["verdict"] == claims.SMOKE and not verdict["supported"]
        assert verdict["direction"] in (
            claims.SUPPORTED,
            claims.NOT_SUPPORTED,
            claims.NOT_MEASURED,
            claims.NOT_A_GATE,
        )


def test_benchmark_md_tells_them_beside_the_claims(results) -> None:
    text = report.render_markdown(results)
    section = text.split("## The same gates on every cell no claim covers", 1)[1]
    assert "| shop/cooperative | `groundhog.equivalence.equivalent == True` (U2) |" in section
    assert "share of the fully coupled live variance (the ceiling test's metric)" in text
