"""Issue 12 through real processes: a frozen resolver, a full store, slow single flight, seals."""

from __future__ import annotations

from typing import Any

import pytest

from bench.reliability.fail_closed import run_fail_closed

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_fail_closed(tmp_path_factory.mktemp("fail-closed"))


def test_a_frozen_resolver_is_a_quick_503_and_nothing_goes_live(figures: dict[str, Any]) -> None:
    freeze = figures["frozen_resolver"]
    assert freeze["status"] == 503 and freeze["world_calls"] == 0, freeze
    assert freeze["held"], freeze


def test_a_store_below_its_reserve_answers_503_before_any_live_call(
    figures: dict[str, Any],
) -> None:
    reserve = figures["disk_reserve"]
    assert reserve["statuses"] == [503, 503] and reserve["world_calls"] == 0, reserve


def test_a_renewed_slow_fetch_is_made_once_and_shared(figures: dict[str, Any]) -> None:
    renewed = figures["slow_renewed"]
    assert renewed["world_calls"] == 1 and renewed["distinct_bodies"] == 1, renewed
    assert renewed["held"], renewed
    control = figures["slow_unrenewed_control"]
    assert control["world_calls"] >= 2 and control["distinct_bodies"] == 1, control


def test_a_seal_refuses_a_waiter_whose_claim_expires(figures: dict[str, Any]) -> None:
    sealed = figures["seal_during_wait"]
    assert sealed["waiter_after_seal"] == "serve/refused", sealed
