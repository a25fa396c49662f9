"""The README's one screen tells the headline with its own mode's ceiling, and every failure."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from bench import headline

COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "benchmark" / "benchmark.json"


@pytest.fixture
def results() -> dict[str, Any]:
    return json.loads(COMMITTED.read_text())


def test_the_headline_names_its_own_modes_ceiling_not_anothers(results) -> None:
    own = results["cells"]["research/uncooperative"]["reference"]["ceiling_interval"]
    other = results["cells"]["research/cooperative"]["reference"]["ceiling_interval"]
    results["cells"]["research/cooperative"]["reference"]["ceiling_interval"] = {
        **other,
        "value": 99.0,
    }
    first = headline.block(results).splitlines()[0]
    assert f"own endogenous ceiling is {own['value']:.1f}x" in first
    assert "99.0x" not in first


def test_a_cell_whose_c_is_not_equivalent_is_told_though_no_claim_covers_it(results) -> None:
    equivalence = results["cells"]["shop/cooperative"]["conditions"]["groundhog"]["equivalence"]
    row = next(
        line for line in headline.block(results).splitlines() if "| shop/cooperative |" in line
    )
    assert ("**not shown equivalent**" in row) == (not equivalence["equivalent"])
    flipped = copy.deepcopy(results)
    flipped_equivalence = flipped["cells"]["shop/cooperative"]["conditions"]["groundhog"][
        "equivalence"
    ]
    flipped_equivalence["equivalent"] = not equivalence["equivalent"]
    row = next(
        line for line in headline.block(flipped).splitlines() if "| shop/cooperative |" in line
    )
    assert ("**not shown equivalent**" in row) == equivalence["equivalent"]


def test_every_unsupported_claim_and_control_gets_its_own_line(results) -> None:
    for claim in results["claims"]:
        if claim["id"] in {"UA", "M2"}:
            claim["supported"], claim["verdict"] = False, "NOT supported"
    text = headline.block(results)
    failed = [claim["id"] for claim in results["claims"] if not claim["supported"]]
    assert {"UA", "M2"} <= set(failed)
    for claim_id in failed:
        assert sum(line.startswith(f"- **{claim_id}**") for line in text.splitlines()) == 1
    supported = next(claim["id"] for claim in results["claims"] if claim["supported"])
    assert f"- **{supported}**" not in text


def test_a_run_with_no_failure_says_so(results) -> None:
    for claim in results["claims"]:
        claim["supported"], claim["verdict"] = True, "supported"
    # Every claim passes, but the shop and MCP cells hold gates no claim covers that fail.
    assert "- none:" not in headline.block(results)
    results["cells"] = {
        name: cell for name, cell in results["cells"].items() if name.startswith("research/")
    }
    assert "- none: every predeclared claim and control is supported" in headline.block(results)


def test_a_failed_gate_no_claim_covers_gets_its_own_line_beside_the_claims(results) -> None:
    for claim in results["claims"]:
        claim["supported"], claim["verdict"] = True, "supported"
    lines = headline.block(results).splitlines()
    told = [line for line in lines if line.startswith("- shop/cooperative, U2's gate")]
    # Version 8's shop/cooperative (C) bias, +0.068 [+0.022, +0.113]: under no claim.
    assert len(told) == 1 and "NOT supported" in told[0] and "+0.068" in told[0]
    assert any(line.startswith("- mcp/uncooperative, U6's gate") for line in lines)


def test_the_ceiling_column_applies_the_runs_own_gate(results) -> None:
    def shop_row(block: str) -> str:
        return next(line for line in block.splitlines() if "| shop/uncooperative |" in line)

    def with_gate(gate: str) -> str:
        for claim in results["claims"]:
            if claim["id"] in {"U6", "C6"}:
                claim["gate"] = gate
        return headline.block(results)

    # The shop's (C) share as version 8's run measured it: wide, its point near 1.
    groundhog = results["cells"]["shop/uncooperative"]["conditions"]["groundhog"]
    groundhog["estimand_share"] = {"value": 0.948, "low": 0.7173, "high": 1.213, "level": 0.95}
    # Version 8's gate (the 95% lower bound above 0.8) fails it ...
    assert "0.95 [0.72, 1.21]: NOT supported" in shop_row(
        with_gate("groundhog.estimand_share.low > 0.8")
    )
    # ... version 9's (the point above 0.938) passes it; the header names the gate applied.
    block = with_gate("groundhog.estimand_share.value > 0.938")
    assert "0.95 [0.72, 1.21]: passes" in shop_row(block)
    assert "ceiling test: `groundhog.estimand_share.value > 0.938`" in block


def test_a_quick_run_says_its_verdicts_are_not_claims(results) -> None:
    results["meta"]["quick"] = True
    assert headline.block(results).startswith("Run: quick smoke test (its verdicts are not claims)")
