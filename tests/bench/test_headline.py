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
    assert "- none: every predeclared claim and control is supported" in headline.block(results)


def test_a_quick_run_says_its_verdicts_are_not_claims(results) -> None:
    results["meta"]["quick"] = True
    assert headline.block(results).startswith("Run: quick smoke test (its verdicts are not claims)")
