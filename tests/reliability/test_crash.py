"""kill -9 of the resolver mid-load (restarted on the same store) and of one proxy."""

from __future__ import annotations

from typing import Any

import pytest

from bench.reliability.crash import crash_held, run_crash

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def crash(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_crash(tmp_path_factory.mktemp("crash"), quick=True)


def test_every_acknowledged_record_survives_the_kill(crash: dict[str, Any]) -> None:
    store = crash["store"]
    assert crash["records_acknowledged_before_kill"] > 0
    assert store["acknowledged_records"] >= crash["records_acknowledged_before_kill"]
    assert store["records_lost"] == 0, store["examples"]
    assert store["mismatched_records"] == 0, store["examples"]


def test_no_address_holds_two_answers(crash: dict[str, Any]) -> None:
    store = crash["store"]
    assert store["served_answers"] > 0
    assert store["addresses_with_two_answers"] == 0
    assert store["served_mismatches"] == 0
    assert store["duplicate_addresses_in_store"] == 0
    assert store["integrity"] == "ok" and store["exchanges_without_body"] == 0


def test_outage_is_answered_503_and_nothing_goes_live(crash: dict[str, Any]) -> None:
    outage = crash["resolver_outage"]
    assert outage["answered_503_resolver_unavailable"] > 0
    assert outage["answered_otherwise"] == 0, outage["other_examples"]
    assert outage["world_calls_during"] <= outage["world_calls_allowed_during"]
    assert crash["silent_live_calls"] == 0
    assert crash["world_calls"] <= crash["forwards_granted"]


def test_workers_recover_after_the_restart(crash: dict[str, Any]) -> None:
    assert crash["resolver_outage"]["recovered_ok_after_restart"] > 0


def test_a_dead_proxy_gives_connection_errors_and_the_other_goes_on(crash: dict[str, Any]) -> None:
    proxy = crash["proxy_crash"]
    assert proxy["connection_errors"] > 0
    assert proxy["answered_by_dead_proxy"] == 0
    assert proxy["survivor_ok_after"] > 0
    assert crash_held(crash)
