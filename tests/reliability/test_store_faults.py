"""An unwritable store: a full disk, then a read-only one."""

from __future__ import annotations

from typing import Any

import pytest

from bench.reliability.store_faults import run_store_faults

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def store_faults(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_store_faults(tmp_path_factory.mktemp("store"))


def test_full_disk_answers_workers_503_and_sends_nothing_live(store_faults: dict[str, Any]) -> None:
    full = store_faults["full_disk"]
    assert full["recorded_before"] == 3
    for answer in full["through_proxy_while_full"]:
        assert answer["status"] == 503 and answer["problem"], answer
    assert full["world_calls_while_full"] == 0
    assert full["resolver_alive"]


def test_full_disk_loses_nothing_and_recovers(store_faults: dict[str, Any]) -> None:
    full = store_faults["full_disk"]
    assert full["store_after"]["clean"], full["store_after"]
    assert full["store_after"]["records_lost"] == 0
    assert full["recovered_without_restart"]


def test_full_disk_resolver_answers_503_problem_itself(store_faults: dict[str, Any]) -> None:
    answer = store_faults["full_disk"]["direct_resolve_while_full"]
    assert answer["status"] == 503 and answer["problem"], answer


def test_read_only_store_loses_nothing(store_faults: dict[str, Any]) -> None:
    read_only = store_faults["read_only"]
    if read_only.get("skipped"):
        pytest.skip(read_only["skipped"])
    assert read_only["store_after"]["clean"], read_only["store_after"]
    assert read_only.get("world_calls", 0) == 0


def test_read_only_store_is_refused_clearly(store_faults: dict[str, Any]) -> None:
    if store_faults["read_only"].get("skipped"):
        pytest.skip(store_faults["read_only"]["skipped"])
    assert store_faults["read_only"]["held"], store_faults["read_only"]
