"""Upstream 5xx is the world's answer, recorded once; a timeout, reset or refused connection is
`upstream-failed`: served as a 502, never recorded, tried again by the next ask."""

from __future__ import annotations

from typing import Any

import pytest

from bench.reliability.faults import run_claim_takeover, run_world_faults

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world_faults(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    figures = run_world_faults(tmp_path_factory.mktemp("world-faults"))
    return {case["case"]: case for case in figures["cases"]}


@pytest.mark.parametrize(
    "case",
    [
        "reset",
        "timeout",
        "5xx-500",
        "5xx-503",
        "connect-refused",
    ],
)
def test_world_failure_is_recorded_once_and_transport_failure_never(
    world_faults: dict[str, dict[str, Any]], case: str
) -> None:
    figures = world_faults[case]
    if case.startswith("5xx"):
        assert figures["decisions"] == ["recorded", "shared"], figures
        assert figures["same_bytes"] and figures["world_calls"] == 1, figures
        assert figures["exchanges_stored"] == 1, figures
    else:
        assert figures["decisions"] == ["upstream-failed", "upstream-failed"], figures
        assert figures["exchanges_stored"] == 0, figures
        assert figures["world_calls"] == (0 if case == "connect-refused" else 2), figures
    assert figures["status"][0] == figures["status"][1]
    assert figures["held"], figures


def test_transport_failures_are_problem_json_naming_the_kind(
    world_faults: dict[str, dict[str, Any]],
) -> None:
    for case, kind in (("timeout", "timeout"), ("connect-refused", "connect")):
        assert world_faults[case]["status"] == [502, 502]
        assert f"({kind})" in world_faults[case]["problem_detail"]


def test_dead_claim_holder_is_taken_over_once_its_claim_lapses(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    figures = run_claim_takeover(tmp_path_factory.mktemp("claim"))
    assert figures["holder_error"], figures
    assert (figures["waiter_status"], figures["waiter_decision"]) == (200, "recorded"), figures
    assert figures["world_calls"] == 2
    # Only once the holder is gone (it renewed while alive): robust to a loaded machine.
    assert figures["second_call_after_kill_seconds"] >= 0, figures
    assert figures["exchanges_at_address"] == 1 and figures["stored_matches_waiter"]
